"""A hidden-rubric final phase seen by everyone who may ask, through the front (the page cache
before Django) as production serves it: a crawler starts at the home page, the board, the
participant's own submission pages, the per-item addresses and every GET address of the
OpenAPI schema (the benchmark's slug, the submissions, a model, an item and the snapshot filled
in), follows every same-site address the answers name (pages, partials, downloads, datasets,
snapshots; Parquet and zip files read as text) and looks for rubric texts, per-rubric verdicts
and judge replies. An organizer crawls first, so that their full pages would be kept where
others could read them if a cache leaked. Before the reveal the participant and an anonymous
visitor find none of it and no answer is a 5xx; after the reveal (challenges.reveal) the
anonymous visitor reaches the rubrics, the replies and the per-item results."""

from __future__ import annotations

import html
import io
import json
import re
import zipfile
from collections import Counter
from datetime import timedelta
from urllib.parse import quote, urlsplit

import pyarrow.parquet as pq
import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from challenges.models import Challenge, Organizer, Phase, PhaseBoard, Track
from challenges.reveal import phase_reveal
from leaderboard.tasks import board_refresh
from scoring import synthetic
from scoring.kinds import get_kind
from scoring.models import Answer, Benchmark
from submissions.notifications import submission_notify
from tests.config.test_page_cache import call, clock, django_app, front, signed_in  # noqa: F401
from tests.conftest import cast_member, judge_config
from tests.factories import judged_submission

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SLUG = "final-all"
# Every judge reply (its reason and its raw text) holds this word, and nothing else does.
REPLY = "zqxvreply"
# The synthetic rubric questions all end "(check N of <item>)"; their choices are these texts.
RUBRIC = re.compile(r"check \d+ of |the edit is clearly audible|it is preserved|variant \d "
                    r"of the edit is missing")
# What a per-rubric verdict or a per-item result looks like on a page, in an API answer or in
# a dataset.
PER_ITEM = re.compile(r'data-rubric="|data-vote="|class="sample-figures"|class="rubric-list"'
                      r'|"rubric_scores":|,rubric_scores|"correct_letter"|"rubrics":\s*\[\{')
# Addresses no crawler follows: they change state (a GET of them answers 405 or a form) or
# lie outside the site's pages.
SKIPPED = re.compile(r"^/(static|admin|accounts/logout|staff)/|/(cancel|delete|hide|flag|"
                     r"retry|rescore|visibility|representative)/|^/api/token/|^/api/docs/")
MAX_URLS = 700
MAX_QUERIES_PER_PATH = 6


@pytest.fixture
def final_phase_of(tmp_path, author, other_author):
    """`final_phase_of(shown)`: a final phase on a hidden-rubric benchmark that shows `shown`,
    its two submissions (the author's and another participant's) judged with replies that
    hold REPLY, its rank ranges, items dataset and a snapshot kept as the worker keeps them,
    and an organizer."""

    def make(shown: str) -> dict:
        meta = synthetic.write_benchmark(tmp_path / "set", 10, seed=5)
        call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                     "--slug", SLUG, "--hidden-rubrics")
        benchmark = Benchmark.objects.get(slug=SLUG)
        judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
        benchmark.refresh_from_db()
        now = timezone.now()
        challenge = Challenge.objects.create(slug="icassp", title="Audio Editing Challenge")
        phase = Phase.objects.create(challenge=challenge, slug="final", name="Final",
                                     kind=Phase.Kind.FINAL, opens_at=now - timedelta(days=2),
                                     closes_at=now + timedelta(days=1), shown=shown)
        track = Track.objects.create(challenge=challenge, slug="agent", name="Agent")
        PhaseBoard.objects.create(phase=phase, track=track, benchmark=benchmark)
        organizer = cast_member(type(author), "organizer", "organizer@example.com")
        Organizer.objects.create(challenge=challenge, user=organizer)
        mine = judged_submission(benchmark, author, "Hidden Editor", seed=1)
        theirs = judged_submission(benchmark, other_author, "Rival Editor", seed=2)
        Answer.objects.filter(run__benchmark=benchmark).update(
            reason=f"The {REPLY} says the edit is there.", raw=json.dumps({"reply": REPLY}))
        benchmark.refresh_from_db()
        board_refresh(benchmark)
        return {"benchmark": Benchmark.objects.get(pk=benchmark.pk), "phase": phase,
                "organizer": organizer, "mine": mine, "theirs": theirs,
                "keys": list(benchmark.items.order_by("position").values_list("key", flat=True))}

    return make


@pytest.fixture
def final_phase(final_phase_of):
    return final_phase_of(Phase.Shown.SLICES)


def text_of(body: bytes) -> str:
    """What an answer says, as text: a Parquet file's schema and rows, a zip's names and
    members, anything else decoded."""
    if body[:4] == b"PAR1":
        table = pq.read_table(io.BytesIO(body))
        return f"{table.schema}\n{json.dumps(table.to_pylist(), default=str)}"
    if body[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return "\n".join(f"{name}\n{text_of(archive.read(name))}"
                             for name in archive.namelist())
    return body.decode("utf-8", "replace")


def addresses(text: str) -> set[str]:
    """The same-site addresses an answer names: in attributes, JSON strings, Link headers."""
    found = set()
    for raw in re.findall(r"""(?:"|'|<|\()((?:https?://testserver)?/[^"'<>\s()]*)""", text):
        if raw.startswith("/") and re.fullmatch(r"/[a-z][a-z0-9]*", raw):
            continue  # a closing tag
        url = quote(html.unescape(raw).replace("\\u0026", "&"), safe="/?&=%:;,+@!$'*~-._")
        parts = urlsplit(url)
        if parts.netloc not in ("", "testserver") or url.startswith("//"):
            continue
        path = parts.path
        if not path.startswith("/") or SKIPPED.search(path):
            continue
        found.add(path + (f"?{parts.query}" if parts.query else ""))
    return found


def schema_addresses(front, fill: dict[str, list[str]]) -> set[str]:  # noqa: F811
    """Every GET address of the OpenAPI schema, each parameter filled in with each value."""
    answer = call(front, "/api/schema/?format=json")
    assert answer.status == 200
    found = set()
    for template, operations in json.loads(answer.body)["paths"].items():
        if "get" not in operations:
            continue
        urls = [template]
        for name in re.findall(r"\{(\w+)\}", template):
            urls = [u.replace(f"{{{name}}}", value) for u in urls for value in fill.get(name,
                                                                                         ["1"])]
        found.update(u for u in urls if not SKIPPED.search(u))
    return found


def crawl(front, starts: set[str], cookie: str | None = None) -> dict[str, tuple]:  # noqa: F811
    """Every address reachable from `starts` for a visitor sending `cookie`: address ->
    (status, text)."""
    headers = {"Cookie": cookie} if cookie else {}
    seen: dict[str, tuple] = {}
    per_path: Counter = Counter()
    queue = sorted(starts)
    while queue and len(seen) < MAX_URLS:
        url = queue.pop(0)
        path = url.partition("?")[0]
        if url in seen or per_path[path] >= MAX_QUERIES_PER_PATH:
            continue
        per_path[path] += 1
        answer = call(front, url, headers=headers)
        text = text_of(answer.body)
        seen[url] = (answer.status, text)
        kind = answer.header("Content-Type") or ""
        if "javascript" in kind or "css" in kind or kind.startswith(("image/", "audio/")):
            continue  # scripts' and styles' slashes are no addresses
        if answer.status in (301, 302, 303, 307, 308):
            location = answer.header("Location") or ""
            queue.extend(addresses(f'"{location}"') - set(seen))
        for variant in (f"{url}{'&' if '?' in url else '?'}format=csv",) \
                if url.startswith("/api/") and "format=" not in url and answer.status == 200 \
                else ():
            queue.append(variant)
        queue.extend(sorted(addresses(text + "\n" + (answer.header("Link") or "")) - set(seen)))
    return seen


def starts(state: dict, front) -> set[str]:  # noqa: F811
    benchmark, mine, theirs = state["benchmark"], state["mine"], state["theirs"]
    key, files = state["keys"][0], get_kind(benchmark.kind).files
    version = str(benchmark.board_version)
    pair = f"models={mine.model_id}&models={theirs.model_id}"
    challenge = state["phase"].challenge.slug
    ids = [str(mine.pk), str(theirs.pk)]
    fill = {"slug": [SLUG, challenge], "pk": ids, "id": ids,
            "model_id": [str(mine.model_id)], "key": [key], "name": list(files),
            "version": [version], "task": ["1"], "phase": ["final"], "track": ["agent"]}
    return {
        "/", f"/c/{challenge}/", f"/c/{challenge}/results/",
        f"/c/{challenge}/final/agent/package/", f"/b/{SLUG}/",
        f"/b/{SLUG}/?dimension=complexity&bucket=single",
        f"/b/{SLUG}/pivot/", f"/b/{SLUG}/compare/?{pair}", f"/b/{SLUG}/compare/items/?{pair}",
        f"/b/{SLUG}/i/{key}/", f"/b/{SLUG}/scoring/", f"/b/{SLUG}/changelog/",
        f"/b/{SLUG}/cite/", f"/b/{SLUG}/v/{version}/", f"/b/{SLUG}/v/{version}/items.parquet",
        f"/b/{SLUG}/v/{version}/snapshot.json",
        f"/b/{SLUG}/judge/", f"/b/{SLUG}/panel/", f"/m/{mine.model_id}/",
        "/submissions/", f"/submissions/{mine.pk}/", f"/submissions/{mine.pk}/progress/",
        *(f"/submissions/{mine.pk}/files/{name}" for name in files),
        *(f"/api/submissions/{mine.pk}/files/{name}" for name in files),
        f"/s/{mine.pk}/", f"/s/{mine.pk}/?failed=1", f"/s/{mine.pk}/samples/?page=1",
        f"/s/{mine.pk}/samples/{key}/rubrics/", f"/s/{theirs.pk}/",
        *(f"/api/leaderboards/{SLUG}/items/?format={f}" for f in ("parquet", "csv", "jsonl")),
        f"/api/leaderboards/{SLUG}/?dimension=complexity&bucket=single",
        f"/api/panel/{SLUG}/items/{key}/", f"/api/panel/{SLUG}/next/",
        # The exports (exports.eee): the rows' records and .eval_results files, whole and one
        # by one, and the signing keys.
        f"/api/leaderboards/{SLUG}/eee.jsonl", f"/api/leaderboards/{SLUG}/eval-results.zip",
        *(f"/api/leaderboards/{SLUG}/eee/{s.model_id}.json" for s in (mine, theirs)),
        *(f"/api/leaderboards/{SLUG}/eval-results/{s.model_id}.yaml" for s in (mine, theirs)),
        "/.well-known/signing-keys.json",
        *schema_addresses(front, fill),
    }


def leaks(seen: dict[str, tuple]) -> dict[str, list[str]]:
    """Each address whose answer holds a rubric text, a per-rubric verdict or a judge reply,
    with what it holds; and every 5xx."""
    found = {}
    for url, (status, text) in seen.items():
        what = [m.group(0) for pattern in (RUBRIC, PER_ITEM) for m in [pattern.search(text)]
                if m] + ([REPLY] if REPLY in text.lower() else [])
        if status >= 500 and not (status == 503 and "being built" in text):
            what.append(f"status {status}")
        if what:
            found[url] = what
    return found


def test_hidden_rubrics_reach_no_participant_or_visitor_until_the_reveal(
        final_phase, front, client, author, clock, settings):  # noqa: F811
    state = final_phase
    begin = starts(state, front)
    # The organizer first: their full pages, if any cache kept them for others, would be met
    # by everyone after them.
    organizer = crawl(front, begin, signed_in(front, client, state["organizer"]))
    assert leaks(organizer), "the organizer sees the rubrics: the crawler finds what they are"
    assert not [url for url, what in leaks(organizer).items() if "status" in what[-1]]
    participant = crawl(front, begin, signed_in(front, Client(), author))
    anonymous = crawl(front, begin)
    for seen in (participant, anonymous):
        assert len(seen) > 60
        found = leaks(seen)
        assert not found, "\n".join(f"{url}: {what}" for url, what in sorted(found.items()))
        # The board lists the submissions; their per-item pages are not there at all.
        assert seen[f"/b/{SLUG}/"][0] == 200 and "Hidden Editor" in seen[f"/b/{SLUG}/"][1]
        for url in (f"/b/{SLUG}/i/{state['keys'][0]}/", f"/s/{state['mine'].pk}/",
                    f"/api/leaderboards/{SLUG}/items/?format=parquet",
                    f"/b/{SLUG}/v/{state['benchmark'].board_version}/items.parquet"):
            assert seen[url][0] == 404, url
        # Its records give the figures a visitor may learn, never a link to per-item files.
        record = json.loads(seen[f"/api/leaderboards/{SLUG}/eee/{state['mine'].model_id}.json"][1])
        assert record["evaluation_results"] and "link_per_item_results" not in \
            record["source_metadata"]["additional_details"]
    # The author's e-mail of their finished submission names no rubric or reply either.
    assert submission_notify(submission_id=state["mine"].pk)
    assert not RUBRIC.search(mail.outbox[-1].body) and REPLY not in mail.outbox[-1].body

    # The reveal: every page kept for the hidden state is left behind.
    Phase.objects.filter(pk=state["phase"].pk).update(
        closes_at=timezone.now() - timedelta(minutes=1))
    phase_reveal(state["phase"])
    benchmark = Benchmark.objects.get(pk=state["benchmark"].pk)
    board_refresh(benchmark)
    clock.now += 5  # the front learns the new board version
    state["benchmark"] = Benchmark.objects.get(pk=benchmark.pk)
    revealed = crawl(front, starts(state, front))
    found = leaks(revealed)
    assert not [url for url, what in found.items() if any(w.startswith("status") for w in what)]
    key = state["keys"][0]
    item_page = revealed[f"/b/{SLUG}/i/{key}/"]
    assert item_page[0] == 200 and RUBRIC.search(item_page[1])
    rubrics = revealed[f"/s/{state['mine'].pk}/samples/{key}/rubrics/"]
    assert rubrics[0] == 200 and REPLY in rubrics[1] and 'data-vote="' in rubrics[1]
    dataset = revealed[f"/api/leaderboards/{SLUG}/items/?format=parquet"]
    assert dataset[0] == 200 and "rubric_scores" in dataset[1] and "Hidden Editor" in dataset[1]
    record = json.loads(revealed[f"/api/leaderboards/{SLUG}/eee/{state['mine'].model_id}.json"][1])
    assert "link_per_item_results" in record["source_metadata"]["additional_details"]
    assert sum(1 for what in found.values() if REPLY in what) >= 2


@pytest.mark.parametrize("shown", [Phase.Shown.NOTHING, Phase.Shown.OVERALL])
def test_a_phase_that_shows_less_shows_no_more(shown, final_phase_of, front, client, author,  # noqa: F811
                                               clock):  # noqa: F811
    """A phase that shows nothing: the board names the models without a figure, and no API
    answer, page or e-mail of the author's holds one. Overall figures only: no slice anywhere.
    Neither gives a rubric, a verdict or a reply, the organizer's pages kept or not."""
    state = final_phase_of(shown)
    mine = state["mine"]
    begin = starts(state, front)
    crawl(front, begin, signed_in(front, client, state["organizer"]))
    participant = crawl(front, begin, signed_in(front, Client(), author))
    anonymous = crawl(front, begin)
    slices = (f"/b/{SLUG}/?dimension=complexity&bucket=single", f"/b/{SLUG}/pivot/",
              f"/api/leaderboards/{SLUG}/?dimension=complexity&bucket=single",
              f"/api/submissions/{mine.pk}/slices/")
    for seen in (participant, anonymous):
        found = leaks(seen)
        assert not found, "\n".join(f"{url}: {what}" for url, what in sorted(found.items()))
        for url in slices:
            assert seen[url][0] == 404, url
    board = anonymous[f"/b/{SLUG}/"][1]
    detail = json.loads(participant[f"/api/submissions/{mine.pk}/"][1])
    assert submission_notify(submission_id=mine.pk)
    if shown == Phase.Shown.NOTHING:
        assert "hidden until the challenge" in board and 'id="board"' not in board
        assert "Hidden Editor" in board and "Rival Editor" in board
        assert participant[f"/api/leaderboards/{SLUG}/"][0] == 404
        version = state["benchmark"].board_version
        for url in (f"/api/leaderboards/{SLUG}/eee.jsonl", f"/b/{SLUG}/v/{version}/snapshot.json",
                    f"/api/leaderboards/{SLUG}/eee/{mine.model_id}.json",
                    f"/api/leaderboards/{SLUG}/eval-results.zip"):
            assert participant[url][0] == anonymous[url][0] == 404, url
        assert detail["overall"] is None and detail["files"] == []
        assert "Overall:" not in mail.outbox[-1].body
        assert 'id="standing"' not in participant[f"/submissions/{mine.pk}/"][1]
        assert "EMR" not in json.loads(participant[f"/api/models/{mine.model_id}/"][1]) \
            .__repr__()
    else:
        assert 'id="board"' in board
        assert detail["overall"]["EMR"] is not None and detail["files"] == []
        assert "Overall:" in mail.outbox[-1].body


def test_a_hidden_chat_benchmark_gives_no_reference_answer_or_reply(
        tmp_path, author, staff, thread_simulator_factory, front, client):  # noqa: F811
    """AIR-Bench chat's reference answers (the item's content, which its judge compares
    with) are its rubrics: a hidden chat benchmark of no challenge shows them, its judge's
    replies and its per-item scores to staff alone."""
    from scoring import aggregation, query_loop, runs
    from scoring.kinds.airbench import rules as airbench
    from scoring.services import benchmark_import
    from submissions.models import ModelEntry, Submission
    from tests.scoring.airbench_data import chat_meta, write

    benchmark, _ = benchmark_import(kind=airbench.CHAT, path=write(tmp_path / "Chat_meta.json",
                                                                   chat_meta()),
                                    audio_root=None, slug="hidden-chat", rubrics_hidden=True)
    urls = thread_simulator_factory(latency_ms=1).urls
    run = runs.run_create(benchmark=benchmark, audio_root="", missing={},
                          outputs={str(i): f"A calm voice ({i})" for i in range(6)},
                          config=judge_config(urls, kind=benchmark.kind, benchmark=benchmark))
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, query_loop.JudgeSettings(
            concurrency=8, timeout=10, down_wait=1))
    assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
    Answer.objects.filter(run=run).update(reason=f"The {REPLY} compares.",
                                          raw=json.dumps({"reply": REPLY}))
    model = ModelEntry.objects.create(owner=author, name="Talker", organisation="Lab")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run_id=run.id,
                                           coverage=1.0)
    submission.runs.add(run)
    board_refresh(Benchmark.objects.get(pk=benchmark.pk))
    slug, pk = benchmark.slug, submission.pk
    begin = {f"/b/{slug}/", f"/b/{slug}/i/0/", f"/s/{pk}/", f"/s/{pk}/samples/0/rubrics/",
             f"/submissions/{pk}/", f"/api/submissions/{pk}/", f"/api/leaderboards/{slug}/",
             f"/api/leaderboards/{slug}/items/?format=jsonl",
             *(f"/submissions/{pk}/files/{name}" for name in get_kind(benchmark.kind).files)}
    reference = re.compile(r"The reference answer \d")
    everyone = crawl(front, begin, signed_in(front, client, staff))
    assert reference.search(everyone[f"/b/{slug}/i/0/"][1])
    assert REPLY in everyone[f"/s/{pk}/samples/0/rubrics/"][1]
    for seen in (crawl(front, begin, signed_in(front, Client(), author)), crawl(front, begin)):
        found = {url: what for url, what in leaks(seen).items()}
        found.update({url: ["reference answer"] for url, (_, text) in seen.items()
                      if reference.search(text)})
        assert not found, "\n".join(f"{url}: {what}" for url, what in sorted(found.items()))
        assert seen[f"/b/{slug}/i/0/"][0] == seen[f"/s/{pk}/"][0] == 404
        assert "Talker" in seen[f"/b/{slug}/"][1]
