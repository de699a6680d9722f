"""Model pages (who sees which submission) and comparisons (slices side by side, per-sample
wins and losses) against figures worked out by hand."""

import pytest

from leaderboard.boards.model_pages import slice_rows
from leaderboard.pages.compare import compare_rows, pairwise
from scoring.kinds import get_kind
from scoring.models import Benchmark, Item, ItemResult
from tests.conftest import CAST_PASSWORD
from tests.html import one, select
from tests.leaderboard.test_charts import figure_data


def login(client, user):
    assert client.login(username=user.username, password=CAST_PASSWORD)


# --- the model page ----------------------------------------------------------------------


@pytest.fixture
def models(board, other_author):
    benchmark, score_by_slices = board
    public = score_by_slices("Open", (50.0, 60.0, 30.0), slices={
        ("modality", "music"): (70.0, 80.0, 40.0), ("modality", "sound"): (30.0, 40.0, 20.0),
        ("complexity", "single"): (55.0, 65.0, 35.0)},
        intervals={("modality", "music"): {"IFR": (60.0, 75.0), "EMR": (30.0, 50.0)}})
    hidden_twin = score_by_slices("Open", (11.0, 11.0, 11.0), public=False)  # a later private try
    secret = score_by_slices("Secret", (90.0, 90.0, 90.0), public=False, owner=other_author,
                             slices={("modality", "music"): (91.0, 92.0, 93.0)})
    return {"public": public, "hidden_twin": hidden_twin, "secret": secret}


def test_anyone_sees_a_model_with_a_public_submission_but_not_its_private_ones(client,
                                                                               models):
    model = models["public"].model
    model.link, model.parameters, model.description = "https://x.org/p", "7B", "An editor."
    model.save()
    response = client.get(f"/m/{model.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    for shown in ("Open", "Lab", "https://x.org/p", "7B", "MIT", "An editor."):
        assert shown in html
    assert [s["submission"] for s in response.context["submissions"]] == [models["public"].id]
    assert select(html, f'[href="/s/{models["hidden_twin"].id}/"]') == [] and "11.00" not in html


def test_the_owner_and_staff_also_see_the_private_submissions(client, models, author, staff):
    model = models["public"].model
    for user in (author, staff):
        login(client, user)
        response = client.get(f"/m/{model.id}/")
        assert [s["submission"] for s in response.context["submissions"]] == [
            models["hidden_twin"].id, models["public"].id]
        assert select(response, "span[class='badge private']")
        # The slices stay those of the board's representative: the public submission.
        assert response.context["shown"] == models["public"]


@pytest.mark.parametrize("viewer", [None, "author"])
def test_a_model_with_only_private_submissions_is_a_404_for_anyone_else(client, models,
                                                                         author, viewer):
    if viewer:
        login(client, author)
    assert client.get(f"/m/{models['secret'].model_id}/").status_code == 404


@pytest.mark.parametrize("viewer", ["other_author", "staff"])
def test_its_owner_and_staff_see_it_with_its_private_figures(client, models, request, viewer):
    login(client, request.getfixturevalue(viewer))
    response = client.get(f"/m/{models['secret'].model_id}/?dimension=modality")
    assert response.status_code == 200
    assert response.context["shown"] == models["secret"]
    assert "private: only its owner and staff see it" in response.content.decode()


def test_an_unknown_model_is_a_404_and_post_a_405(client, models):
    assert client.get("/m/999999/").status_code == 404
    assert client.post(f"/m/{models['public'].model_id}/").status_code == 405


def test_the_slice_table_lists_every_slice_with_n_and_intervals(models):
    rows = slice_rows(models["public"].current_run_id, get_kind("mmae"))
    assert [(r["dimension"], r["bucket"], r["n"], r["IFR"], r["CR"], r["EMR"])
            for r in rows] == [("overall", "", 4, 50.0, 60.0, 30.0),
                               ("complexity", "single", 4, 55.0, 65.0, 35.0),
                               ("modality", "music", 4, 70.0, 80.0, 40.0),
                               ("modality", "sound", 4, 30.0, 40.0, 20.0)]
    assert (rows[2]["IFR_interval"], rows[2]["CR_interval"], rows[2]["EMR_interval"]) == \
        ((60.0, 75.0), None, (30.0, 50.0))


def test_the_chart_shows_the_chosen_dimension_of_the_table(client, models):
    model_id = models["public"].model_id
    response = client.get(f"/m/{model_id}/?dimension=modality")
    html = response.content.decode()
    cells = [(td.children[0], td.one("small").text) for td in select(html, "td.num[data-label]")
             if td.select("small")]
    assert ("70.00", "[60.00, 75.00]") in cells
    emr, ifr, _ = figure_data(html, "chart-slices")  # the kind's order: EMR, IFR, CR
    assert (ifr["type"], ifr["x"], ifr["y"]) == ("bar", ["music", "sound"], [70.00, 30.00])
    assert (emr["name"], emr["y"]) == ("EMR", [40.00, 20.00])
    radar = client.get(f"/m/{model_id}/?dimension=complexity&chart=radar").content.decode()
    ifr = figure_data(radar, "chart-slices")[0]
    assert (ifr["type"], ifr["theta"]) == ("scatterpolar", ["single", "single"])


def test_a_dimension_the_run_lacks_shows_no_chart(client, models):
    response = client.get(f"/m/{models['public'].model_id}/?dimension=operation")
    assert response.status_code == 200 and response.context["chart"] is None


@pytest.mark.parametrize("query, message", [
    ("dimension=colour", "dimension: Select a valid choice. colour is not one of"),
    ("chart=pie", "chart: Select a valid choice. pie is not one of"),
    ("benchmark=air", "benchmark: Select a valid choice. air is not one of"),
])
def test_bad_parameters_are_a_400_naming_them(client, models, query, message):
    response = client.get(f"/m/{models['public'].model_id}/?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()


# --- comparisons -------------------------------------------------------------------------


def item_results(submission, items, rows):
    """rows: (EM, rubric_scores) per item, None to leave an item unscored; stored as
    aggregation stores them (MMAE.item_columns)."""
    kind = get_kind("mmae")
    for item, row in zip(items, rows, strict=True):
        if row is not None:
            columns = kind.item_columns({"IFR": None, "CR": None, "EM": row[0],
                                         "rubric_scores": row[1], "agree": 0, "judged": 0})
            ItemResult.objects.create(run=submission.current_run, item=item, **columns)


@pytest.fixture
def trio(board):
    benchmark, score_by_slices = board
    items = [Item.objects.create(benchmark=benchmark, position=i, key=f"s{i}", dimensions={},
                                 content={}) for i in range(4)]
    a = score_by_slices("A", (50.0, 60.0, 30.0), slices={("modality", "music"): (70.0, 80.0, 40.0),
                                                 ("modality", "sound"): (30.0, 40.0, 20.0)})
    b = score_by_slices("B", (50.0, 55.0, 30.0), slices={("modality", "music"): (75.0, 70.0, 40.0)})
    c = score_by_slices("C", (20.0, 30.0, 10.0), slices={("modality", "music"): (75.0, 20.0, 0.0)})
    #             s0              s1                 s2              s3
    item_results(a, items, [(1, [1, 1]), (0, [1, 1, 0]), (0, [0, 0]), (1, [1, 1, 1])])
    item_results(b, items, [(0, [1, 0]), (0, [1, 0, 0]), (1, [1, 1]), (1, [1, 1, 1])])
    item_results(c, items, [(0, [0, 0]), (1, [1, 1, 1]), None, None])  # scored two only
    return benchmark, a, b, c


def test_pairs_count_per_sample_wins_losses_and_ties(trio):
    _, a, b, c = trio
    assert pairwise([a, b, c]) == [
        # A-B: EM s0 A, s2 B, s1 s3 tie; rubric means s0 1>.5 A, s1 .67>.33 A, s2 0<1 B, s3 tie
        {"a": "A", "a_id": a.model_id, "b": "B", "b_id": b.model_id, "n": 4, "withheld": 0,
         "EM": {"wins": 1, "losses": 1, "ties": 2},
         "rubric": {"wins": 2, "losses": 1, "ties": 1}},
        # A-C over s0, s1: EM s0 A, s1 C; rubric s0 1>0 A, s1 .67<1 C
        {"a": "A", "a_id": a.model_id, "b": "C", "b_id": c.model_id, "n": 2, "withheld": 0,
         "EM": {"wins": 1, "losses": 1, "ties": 0},
         "rubric": {"wins": 1, "losses": 1, "ties": 0}},
        # B-C over s0, s1: EM s0 tie, s1 C; rubric s0 .5>0 B, s1 .33<1 C
        {"a": "B", "a_id": b.model_id, "b": "C", "b_id": c.model_id, "n": 2, "withheld": 0,
         "EM": {"wins": 0, "losses": 1, "ties": 1},
         "rubric": {"wins": 1, "losses": 1, "ties": 0}},
    ]


def test_slices_sit_side_by_side_with_the_leaders_marked(trio):
    _, a, b, c = trio
    rows = compare_rows([a, b, c], get_kind("mmae"))
    assert [(r["dimension"], r["bucket"]) for r in rows] == [
        ("overall", ""), ("modality", "music"), ("modality", "sound")]
    music = rows[1]["cells"]
    assert [(x["IFR"], x["CR"], x["EMR"]) for x in music] == [
        (70.0, 80.0, 40.0), (75.0, 70.0, 40.0), (75.0, 20.0, 0.0)]
    assert [(x["IFR_best"], x["CR_best"], x["EMR_best"]) for x in music] == [
        (False, True, True), (True, False, True), (True, False, False)]
    assert rows[2]["cells"][1:] == [None, None]  # only A has figures on sound
    assert rows[2]["cells"][0]["IFR_best"] is False  # one figure leads nobody


def test_the_page_shows_both_tables(client, trio):
    _, a, b, _c = trio
    response = client.get(f"/b/mmae/compare/?models={a.model_id},{b.model_id}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "4" in [td.text for td in select(html, "table#pairs td[class=num]")]
    assert [m["model"] for m in response.context["models"]] == ["A", "B"]
    assert "75.00" in one(html, "table#compare").text


def test_the_models_may_come_as_repeated_parameters(client, trio):
    _, a, b, c = trio
    response = client.get(f"/b/mmae/compare/?models={c.model_id}&models={a.model_id}")
    assert response.status_code == 200
    assert [m["model"] for m in response.context["models"]] == ["C", "A"]


@pytest.fixture
def private_model(board, trio, other_author):
    _, score_by_slices = board
    return score_by_slices("Secret", (90.0, 90.0, 90.0), public=False, owner=other_author).model


@pytest.mark.parametrize("models, message", [
    ("{a}", "choose at least two models to compare (got 1)"),
    ("{a}", "choose at least two models to compare (got 1)"),
    ("{a},{a}", "choose at least two models to compare (got 1)"),
    ("{a},x", "&#x27;x&#x27; is not a model id"),
    ("{a},%C2%B2", "&#x27;\u00b2&#x27; is not a model id"),
    ("{a},99999999999999999999999", "is not a model id"),
    ("{a},999999", "no model with id 999999"),
    ("1,2,3,4,5,6,7,8,9", "compare at most 8 models at once (got 9)"),
])
def test_bad_model_lists_are_a_400_naming_the_problem(client, trio, models, message):
    _, a, _b, _c = trio
    response = client.get("/b/mmae/compare/?models=" + models.format(a=a.model_id))
    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_private_model_reads_as_unknown_to_others(client, trio, private_model):
    _, a, *_ = trio
    response = client.get(f"/b/mmae/compare/?models={a.model_id},{private_model.id}")
    assert response.status_code == 400
    html = response.content.decode()
    assert f"no model with id {private_model.id}" in html and "Secret" not in html


def test_its_owner_is_told_it_has_no_public_submission_here(client, trio, private_model,
                                                             other_author):
    _, a, *_ = trio
    login(client, other_author)
    response = client.get(f"/b/mmae/compare/?models={a.model_id},{private_model.id}")
    assert response.status_code == 400
    assert (f"&#x27;Secret&#x27; (model {private_model.id}) has no public scored submission "
            f"on this board") in response.content.decode()


def test_a_model_public_on_another_board_only_is_refused_here(client, trio, board):
    benchmark, a, _b, _c = trio
    _, score_by_slices = board
    other = Benchmark.objects.create(slug="air", kind="mmae", version=1, title="AIR",
                                     sha256="b" * 64, source_name="x", audio_root="/x",
                                     n_items=1, n_criteria=1)
    elsewhere = score_by_slices("Elsewhere", (1.0, 1.0, 1.0))
    elsewhere.benchmark = other
    elsewhere.save()
    response = client.get(f"/b/mmae/compare/?models={a.model_id},{elsewhere.model_id}")
    assert response.status_code == 400
    assert (f"&#x27;Elsewhere&#x27; (model {elsewhere.model_id}) has no public scored "
            f"submission on this board") in response.content.decode()


def test_compare_is_a_404_on_an_unknown_board_and_a_405_on_post(client, trio):
    assert client.get("/b/nope/compare/?models=1,2").status_code == 404
    assert client.post("/b/mmae/compare/").status_code == 405


def test_an_empty_compare_page_is_a_model_picker_with_search(client, trio):
    _, a, b, _c = trio
    response = client.get("/b/mmae/compare/")
    assert response.status_code == 200
    html = response.content.decode()
    assert select(html, f'input[name=models][value="{a.model_id}"]')
    assert select(html, "input[name=q]")
    found = client.get("/b/mmae/compare/?q=" + a.model.name[:3].lower())
    assert select(found, f'input[name=models][value="{a.model_id}"]')
    none = client.get("/b/mmae/compare/?q=zzz-nothing").content.decode()
    assert "No model matches" in none


def test_the_model_page_shows_its_rank_on_the_board_it_stands_on(client, models, board):
    _, score_by_slices = board
    score_by_slices("Better", (90.0, 90.0, 90.0))
    html = client.get(f"/m/{models['public'].model_id}/").content.decode()
    rank = one(html, "p.board-rank")
    assert rank.text == "Rank 2 of 2 on the MMAE board" and rank.one("strong").text == "2"
    assert (rank.one("a").get("href"), rank.one("a").text) == ("/b/mmae/", "MMAE board")
    assert "(range" not in html  # no ranges computed yet: none shown


def test_a_model_off_the_board_shows_no_rank(client, models, other_author):
    login(client, other_author)  # the owner of "Secret", whose only submission is private
    html = client.get(f"/m/{models['secret'].model_id}/").content.decode()
    assert select(html, "[id^=board-rank]") == []


def test_a_long_name_is_cut_in_the_heading_and_whole_in_its_title(client, models):
    model = models["public"].model
    model.name = "Echo Editor " + "x" * 188
    model.save()
    html = client.get(f"/m/{model.id}/").content.decode()
    name = one(html, "h1[class=model-title] > span[class='cut name']")
    assert name.get("title") == model.name and name.parent.children[0] is name
