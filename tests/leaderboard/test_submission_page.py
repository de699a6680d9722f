"""A submission's page: access, figures, slices and the per-sample explorer.

The data is real: the synthetic demo set imported, system A (no output for the last two of 14
samples) scored by the judge simulator through scoring.runs, as the pipeline does. That is done
once for the module (in module_db): the tests only read it, and what one changes rolls back.
"""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings
from django.urls import reverse

from leaderboard.boards import explorer_selectors
from scoring import aggregation, query_loop, runs
from scoring.kinds import get_kind
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer, Criterion, ItemResult, SliceResult
from scoring.services import benchmark_import
from submissions.models import ModelEntry, Submission
from tests.conftest import ThreadSimulator, judge_config, write_demo_set
from tests.html import assert_in_html, one, select, texts

# `slow`: its shared set-up (page_state: the demo set imported, a judge in a thread) takes 1.2 s
pytestmark = pytest.mark.slow

JUDGE = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)


@pytest.fixture(scope="module")
def page_state(module_cast, django_db_blocker, tmp_path_factory):
    """The demo set imported, a judge simulator (in a thread) for the module, the author's
    model, and `make(urls=None, *, public=True)`: a public submission of system A, scored to
    the end when given the judge's URLs, else left with its run queued; and `judged`, one
    made so."""
    demo_set = write_demo_set(tmp_path_factory.mktemp("demo") / "mmae")
    sim = ThreadSimulator(latency_ms=1)
    author = module_cast["author"]
    samples = demo_set["samples"]
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["predictions"], known_ids={s["id"] for s in samples})}
    missing = {s["id"]: "no prediction" for s in samples if s["id"] not in outputs}

    def make(urls=None, *, public=True):
        with override_settings(SCORING_BATCH_ITEMS=20):
            run = runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                                  outputs=outputs, missing=missing,
                                  config=judge_config(urls or ["http://127.0.0.1:9"],
                                                      benchmark=benchmark))
        if urls:
            for batch in run.batches.all():
                assert query_loop.batch_score(batch.id, JUDGE)
            assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
            run.refresh_from_db()
        submission = Submission.objects.create(
            owner=author, model=model, benchmark=benchmark, public=public, status="queued",
            current_run=run, coverage=len(outputs) / len(samples))
        submission.runs.add(run)
        return submission

    with django_db_blocker.unblock():
        benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                        audio_root=demo_set["root"], slug="mmae")
        model = ModelEntry.objects.create(owner=author, name="Echo Editor",
                                          organisation="Lab", open_weights=True)
        judged = make(sim.urls)
    yield {"demo_set": demo_set, "sim": sim, "make": make, "judged": judged}
    sim.stop()


@pytest.fixture
def demo_set(page_state):
    return page_state["demo_set"]


@pytest.fixture
def submit_system_a(page_state, db):
    return page_state["make"]


@pytest.fixture
def judge_urls(page_state):
    return page_state["sim"].urls


@pytest.fixture
def judged(page_state, db):
    """The module's submission, judged to the end by the simulator, read again."""
    return Submission.objects.get(pk=page_state["judged"].pk)


@pytest.fixture
def keys(demo_set):
    """Sample ids by position in the metadata file."""
    return [s["id"] for s in demo_set["samples"]]


def shown(html: str) -> list[str]:
    return [sample.get("data-sample") for sample in select(html, "article[data-sample]")]


def votes_of(client, submission, key) -> str:
    """A sample's rubric table as its <details> fetches it when opened."""
    response = client.get(f"/s/{submission.pk}/samples/{key}/rubrics/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def status_of(client, user, url) -> int:
    client.logout()
    if user is not None:
        client.force_login(user)
    return client.get(url).status_code


# --- who sees it -------------------------------------------------------------------------


def test_a_public_finished_submission_is_shown_to_everyone(client, judged, author,
                                                           other_author, staff):
    for url in (f"/s/{judged.pk}/", f"/s/{judged.pk}/samples/"):
        for user in (None, other_author, author, staff):
            assert status_of(client, user, url) == 200, (url, user)


@pytest.mark.parametrize("state", ["private", "unfinished"])
def test_a_hidden_submission_is_a_404_except_for_its_owner_and_staff(
        client, submit_system_a, judge_urls, state, author, other_author, staff):
    if state == "private":
        submission = submit_system_a(judge_urls, public=False)
    else:
        submission = submit_system_a()  # public, but its run is still queued
    for url in (f"/s/{submission.pk}/", f"/s/{submission.pk}/samples/"):
        assert status_of(client, None, url) == 404
        assert status_of(client, other_author, url) == 404
        assert status_of(client, author, url) == 200
        assert status_of(client, staff, url) == 200


def test_the_page_and_its_partial_answer_get_only(client, submit_system_a, author):
    submission = submit_system_a()
    client.force_login(author)
    assert client.post(f"/s/{submission.pk}/").status_code == 405
    assert client.post(f"/s/{submission.pk}/samples/").status_code == 405


def test_an_unknown_submission_is_a_404(client, db):
    assert client.get("/s/999/").status_code == 404
    assert client.get("/s/999/samples/").status_code == 404


def test_an_unfinished_submission_shows_its_owner_the_samples_without_scores(
        client, submit_system_a, author, keys):
    submission = submit_system_a()
    client.force_login(author)
    html = client.get(f"/s/{submission.pk}/").content.decode()
    (notice,) = [p for p in select(html, "p.notice") if p.select("span.status")]
    assert notice.text.startswith("Scoring is queued:")
    assert notice.one("span.status").get("class") == "status status-queued"
    assert shown(html) == keys
    assert "missing (scores 0): no prediction" in html
    assert "no votes yet" in votes_of(client, submission, keys[0])
    assert select(html, "#slices") == []


# --- figures -----------------------------------------------------------------------------


def test_the_page_names_the_model_benchmark_and_badges(client, judged):
    html = client.get(f"/s/{judged.pk}/").content.decode()
    model_page = reverse("leaderboard:model", args=[judged.model_id])
    title = one(html, "h1.submission-title")
    assert (title.one("a").get("href"), title.one("a").text) == (model_page, "Echo Editor")
    assert "MMAE (Massive Multitask Audio Editing) v1" in html
    for badge in ("open weights", "partial", "simulated judge"):
        assert badge in texts(title, "span.badge")
    assert not any(span.text.endswith("private") for span in select(html, "span"))


def test_the_page_shows_overall_figures_with_their_intervals(client, judged):
    overall = SliceResult.objects.get(run=judged.current_run, dimension="overall")
    html = client.get(f"/s/{judged.pk}/").content.decode()
    for metric in ("IFR", "CR", "EMR"):
        value, (lo, hi) = overall.values[metric], overall.interval(metric)
        assert f"{value:.2f}" in texts(html, "section.overall span[class=value]")
        assert f"95% CI [{lo:.2f}, {hi:.2f}]" in texts(html, "section.overall span.interval")


def test_the_slice_table_has_every_bucket_of_every_dimension(client, judged):
    html = client.get(f"/s/{judged.pk}/").content.decode()
    table = one(html, "table#slices")
    rows = [(parse_qs(urlsplit(link.get("href")).query)["bucket"][0], link.text,
             row.one("td.n").text)
            for row in table.select("tbody tr") for link in row.select("td > a")]
    slices = SliceResult.objects.filter(run=judged.current_run).exclude(dimension="overall")
    assert len(rows) == slices.count()
    assert {b for _, b, _ in rows} == {s.bucket for s in slices}
    counts = {bucket: int(n) for _, bucket, n in rows}
    # 14 samples: even positions are single, odd ones cycle through the five other tiers
    # from multi-part; modality cycles through the 7.
    assert counts["multiple"] == 7 and counts["multi-part"] == 2 and counts["multi-round"] == 1
    assert counts["speech"] == 2
    dimensions = [text for text in texts(table, "td.dimension") if text]
    assert dimensions.index("complexity") < dimensions.index("modality") < \
        dimensions.index("operation")


# --- the explorer ------------------------------------------------------------------------


def test_the_explorer_lists_every_sample_in_benchmark_order(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/samples/").content.decode()
    assert shown(html) == keys
    count = one(html, "p.explorer-count")
    assert count.one("strong").text == "14" and count.text.startswith("14 samples")


def test_the_explorer_filters_by_slice(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/samples/?dimension=modality&bucket=speech").content
    assert shown(html.decode()) == [keys[2], keys[9]]
    html = client.get(f"/s/{judged.pk}/samples/?dimension=complexity_group&bucket=multiple")
    assert shown(html.content.decode()) == keys[1::2]


def test_a_sample_counts_in_each_of_its_operations(client, judged, demo_set, keys):
    operation = "{granularity}/{operation}".format(**demo_set["samples"][1]["operations"][1])
    expected = [s["id"] for s in demo_set["samples"]
                if operation in {f"{o['granularity']}/{o['operation']}"
                                 for o in s["operations"]}]
    html = client.get(f"/s/{judged.pk}/samples/", {"dimension": "operation",
                                                   "bucket": operation}).content.decode()
    assert keys[1] in shown(html) and shown(html) == expected


def test_a_dimension_alone_takes_its_first_bucket(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/samples/?dimension=complexity").content.decode()
    assert shown(html) == [keys[5]]  # multi-audio sorts first


def test_the_explorer_shows_only_samples_with_a_failed_rubric(client, judged, keys):
    results = ItemResult.objects.filter(run=judged.current_run).select_related("item")
    for result in results:  # every rubric passed, but two samples fail one each
        if not result.missing:
            scores = [1] * len(result.values["rubric_scores"])
            if result.item.key in (keys[0], keys[5]):
                scores[-1] = 0
            result.values = {**result.values, "rubric_scores": scores}
            # as aggregation stores it, for the explorer's filter
            result.failed = get_kind("mmae").failed({"missing": False, "values": result.values})
            result.save()
    html = client.get(f"/s/{judged.pk}/samples/?failed=on").content.decode()
    assert shown(html) == [keys[0], keys[5], keys[12], keys[13]]  # the last two are missing
    html = client.get(f"/s/{judged.pk}/samples/?failed=on&dimension=modality&bucket=sound")
    assert shown(html.content.decode()) == [keys[0]]


def test_the_search_looks_in_every_user_turn_and_the_id(client, judged, keys):
    def search(q):
        return shown(client.get(f"/s/{judged.pk}/samples/", {"q": q}).content.decode())

    assert search("INSTRUCTION 1:") == [keys[1]]
    assert search("a little quieter") == [keys[7]]  # the second turn of the multi-round one
    assert search(keys[4][:10]) == [keys[4]]
    assert search("no such words") == []


def test_a_search_without_a_match_says_so(client, judged):
    html = client.get(f"/s/{judged.pk}/samples/", {"q": "no <such> words"}).content.decode()
    assert "No sample matches &ldquo;no &lt;such&gt; words&rdquo;." in html
    html = client.get(f"/s/{judged.pk}/samples/", {"q": "zzz", "failed": "on"}).content.decode()
    assert "No sample matches &ldquo;zzz&rdquo; with these filters." in html


def test_the_explorer_pages_keep_the_filters(client, judged, keys, monkeypatch):
    assert explorer_selectors.PAGE_SIZE == 20
    monkeypatch.setattr(explorer_selectors, "PAGE_SIZE", 5)
    url = f"/s/{judged.pk}/samples/?q=synthetic"
    first = client.get(url).content.decode()
    assert shown(first) == keys[:5] and "page 1 of 3" in first
    (following,) = select(first, "a[rel=next]")
    assert following.get("hx-get") == f"/s/{judged.pk}/samples/?q=synthetic&page=2"
    assert following.get("href") == f"/s/{judged.pk}/?q=synthetic&page=2#samples"
    assert select(first, "[rel=prev]") == []
    last = client.get(url + "&page=3").content.decode()
    assert shown(last) == keys[10:]
    assert one(last, "a[rel=prev]").get("hx-get") == f"/s/{judged.pk}/samples/?q=synthetic&page=2"
    assert select(last, "[rel=next]") == []
    middle = client.get(url + "&page=2").content.decode()
    # page 1 needs no param
    assert one(middle, "a[rel=prev]").get("hx-get") == f"/s/{judged.pk}/samples/?q=synthetic"


def test_the_partial_gives_htmx_the_pages_url(client, judged):
    response = client.get(f"/s/{judged.pk}/samples/?dimension=modality&bucket=speech&q=",
                          HTTP_HX_REQUEST="true")
    assert response["HX-Push-Url"] == f"/s/{judged.pk}/?dimension=modality&bucket=speech"


def test_the_page_applies_the_filters_itself(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/?dimension=modality&bucket=speech").content.decode()
    assert shown(html) == [keys[2], keys[9]]
    assert select(html, "option[value=speech][selected]")


@pytest.mark.parametrize(("query", "message"), [
    ("dimension=mood", "Select a valid choice. mood is not one of the available choices."),
    ("dimension=modality&bucket=jazz",
     "&#x27;jazz&#x27; is not a bucket of modality; choose one of: music, music-speech"),
    ("bucket=speech", "bucket &#x27;speech&#x27; needs a dimension"),
    ("page=0", "Ensure this value is greater than or equal to 1."),
    ("page=x", "Enter a whole number."),
    ("page=2", "page 2 is past the last page (1)"),
])
def test_bad_explorer_parameters_are_a_400_with_the_message(client, judged, query, message):
    for url in (f"/s/{judged.pk}/samples/?{query}", f"/s/{judged.pk}/?{query}"):
        response = client.get(url)
        assert response.status_code == 400
        assert message in response.content.decode()


# --- each sample -------------------------------------------------------------------------


def test_a_sample_shows_its_instruction_players_and_figures(client, judged, demo_set, keys):
    html = client.get(f"/s/{judged.pk}/samples/?q={keys[5]}").content.decode()
    sample = demo_set["samples"][5]  # multi-audio: two inputs
    result = ItemResult.objects.get(run=judged.current_run, item__key=keys[5])
    assert sample["messages"][0]["content"][0]["text"] in html
    for which in ("input1", "input2", "output"):
        assert_in_html(f'<audio controls preload="none" src="/s/{judged.pk}/audio/{keys[5]}/'
                       f'{which}"></audio>', html)
    assert "input3" not in html
    assert_in_html(f'<span class="tag">{sample["complexity"]}</span>', html)
    assert any(span.text.endswith(f"EM {result.values['EM']}") for span in select(html, "span"))


def test_a_multi_round_sample_shows_each_turn(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/samples/?q={keys[7]}").content.decode()
    assert any(turn.text == "turn 2" and turn.tail.startswith(
        " Now also make the result a little quieter.") for turn in select(html, "span.turn"))


def test_every_rubric_shows_its_three_votes_as_presented(client, judged, keys):
    html = votes_of(client, judged, keys[0])
    criteria = list(Criterion.objects.filter(item__key=keys[0]).order_by("index"))
    rubrics = select(html, "li[class^=rubric][data-rubric]")
    assert len(rubrics) == len(criteria)
    for criterion, block in zip(criteria, rubrics, strict=True):
        assert block.get("data-rubric") == str(criterion.index)
        assert " ".join(criterion.question.split()) in block.one("p.question").text
        answers = Answer.objects.filter(run=judged.current_run, criterion=criterion)
        assert [vote.get("data-vote") for vote in block.select("[data-vote]")] == ["0", "1", "2"]
        for answer in answers.order_by("round"):
            vote = block.one(f'tr[data-vote="{answer.round}"]')
            choices = vote.select("ol.choices > li")
            presented = [(choice.one("b").text, " ".join(choice.one("b").tail.split()))
                         for choice in choices]
            assert presented == [(f"{letter}.", " ".join(text.split())) for letter, text
                                 in zip("ABCDEFGH", answer.choices, strict=False)]
            assert [c.one("b").text for c in choices if c.get("class", "").startswith("right")] \
                == [f"{answer.verdict['correct_letter']}."]
            assert [c.one("b").text for c in choices if "chosen" in c.classes] == \
                [f"{answer.choice}."]
            chosen = vote.one("td.chosen")
            assert chosen.children[0] is chosen.one("b") and chosen.one("b").text == answer.choice
            assert answer.reason
            assert " ".join(answer.reason.split())[:40] in vote.one("td.reason").text


def test_a_failed_query_shows_its_error_instead_of_a_letter(client, judged, keys):
    answer = Answer.objects.filter(run=judged.current_run, criterion__item__key=keys[0],
                                   round=1).first()
    Answer.objects.filter(pk=answer.pk).update(choice=None, reason=None,
                                               verdict={**answer.verdict, "correct": False},
                                               error="timeout after 5 attempts")
    html = votes_of(client, judged, keys[0])
    assert_in_html('<td class="chosen"><span class="no">no answer</span><br>'
                   '<small class="error">timeout after 5 attempts</small></td>', html)


def test_a_missing_output_says_it_scores_zero(client, judged, keys):
    html = client.get(f"/s/{judged.pk}/samples/?q={keys[13]}").content.decode()
    assert "missing (scores 0): no prediction" in html
    assert f"/audio/{keys[13]}/output" not in html
    assert select(html, f'audio[src*="/audio/{keys[13]}/input1"]')
    assert "not asked: the output is missing" in html and "EM 0" in html


def test_a_page_of_samples_costs_a_fixed_number_of_queries(client, judged,
                                                           django_assert_max_num_queries):
    # submission, the buckets (until cached), the count, the page's items, their results,
    # rubrics and answer counts, the outputs' signals
    with django_assert_max_num_queries(8):
        response = client.get(f"/s/{judged.pk}/samples/?failed=on")
    assert response.status_code == 200 and len(shown(response.content.decode())) > 5
