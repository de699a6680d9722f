"""The moment a board changes (a first submission finished, a second one bringing a bucket the
board did not have, a rescore), every slice of the board page and the read API (JSON and CSV)
answers 200 with the new state's figures, before any worker has stored the new state's rank
ranges: never a refusal, never a figure of the state before; the items dataset of such a small
board is built by the first request for the new state and answers the new state's rows at
once. Asked through
Django and through the front (config.page_cache) with Redis, as production serves them."""

import csv
import io
import json
from types import SimpleNamespace

import pytest

from leaderboard.boards import rank_ranges
from scoring.boards import board_changed
from scoring.kinds.airbench import rules as airbench
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.concurrent import redis_cache  # noqa: F401 - a fixture
from tests.config.test_page_cache import Clock, call
from tests.conftest import judge_config
from tests.factories import board_benchmark, scored_submission

pytestmark = pytest.mark.slow


def expected(benchmark: Benchmark) -> dict[tuple[str, str], dict[str, dict]]:
    """{(dimension, bucket): {model name: its figures}} of the public current runs, read from
    the database alone (no leaderboard code)."""
    found: dict = {}
    for submission in Submission.objects.filter(benchmark=benchmark, public=True) \
            .select_related("model", "current_run"):
        for figures in SliceResult.objects.filter(run=submission.current_run):
            found.setdefault((figures.dimension, figures.bucket), {})[
                submission.model.name] = figures.values
    return found


def asked(client, benchmark: Benchmark, metrics: tuple[str, ...]) -> None:
    """Every slice the database says the board has, through every read path: each 200, each
    with the figures of the state it was asked in."""
    slug = benchmark.slug
    for (dimension, bucket), by_model in expected(benchmark).items():
        query = "" if dimension == "overall" else f"dimension={dimension}&bucket={bucket}"
        page = client.get(f"/b/{slug}/?{query}")
        assert page.status_code == 200, (dimension, bucket, page.content[:300])
        html = page.content.decode()
        assert all(name in html for name in by_model), (dimension, bucket)
        answer = client.get(f"/api/leaderboards/{slug}/?{query}")
        assert answer.status_code == 200, (dimension, bucket, answer.content[:300])
        rows = {r["model"]: r for r in answer.json()["rows"]}
        assert set(rows) == set(by_model), (dimension, bucket)
        for name, values in by_model.items():
            for metric in metrics:
                assert rows[name][metric] == pytest.approx(values[metric]), (
                    dimension, bucket, name, metric)
        table = client.get(f"/api/leaderboards/{slug}/?format=csv&{query}")
        assert table.status_code == 200, (dimension, bucket)
        read = list(csv.DictReader(io.StringIO(table.content.decode())))
        assert {r["model"] for r in read if r["row"] == "ranked"} == set(by_model)
        for fmt in ("csv", "jsonl"):
            # A small board's file is built by the first request for the new state: no 503.
            url = f"/api/leaderboards/{slug}/items/?format={fmt}&{query}"
            items = client.get(url)
            assert items.status_code == 200, (dimension, bucket, fmt)
            text = (b"".join(items.streaming_content) if getattr(items, "streaming", False)
                    else items.content).decode()
            models = {r["model"] for r in csv.DictReader(io.StringIO(text))} if fmt == "csv" \
                else {json.loads(line)["model"] for line in text.splitlines() if line}
            assert models <= set(by_model), (dimension, bucket, fmt)  # the new state's rows


class Fronted:
    """A visitor whose requests pass through the front (config.page_cache) before Django, as
    gunicorn calls it (tests/config/test_front.py's `call`)."""

    def __init__(self, front, clock):
        self.front, self.clock = front, clock

    def learn(self):
        """A second passes: the front learns the published board states."""
        self.clock.now += 1

    def get(self, url: str):

        answer = call(self.front, url, headers={"Accept": "*/*"})
        return SimpleNamespace(status_code=answer.status, content=answer.body,
                               json=lambda: json.loads(answer.body))


@pytest.fixture
def front_client(settings, redis_cache):  # noqa: F811 - the fixture imported above
    from django.core import signals
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import close_old_connections

    from config.page_cache import PageCache

    settings.FRONT = True
    settings.ALLOWED_HOSTS = ["testserver"]
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    clock = Clock()
    yield Fronted(PageCache(WSGIHandler(), clock=clock), clock)
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture(params=["django", "front"])
def visitor(request, client):
    if request.param == "django":
        client.learn = lambda: None
        return client
    return request.getfixturevalue("front_client")


@pytest.fixture
def change(django_capture_on_commit_callbacks, visitor):
    """`with change():` a change of the board that commits (its publication to the front
    runs), after which a second passes."""
    from contextlib import contextmanager

    @contextmanager
    def committed():
        with django_capture_on_commit_callbacks(execute=True):
            yield
        visitor.learn()

    return committed


def test_an_mmae_board_answers_every_slice_of_each_new_state_at_once(db, author, visitor,
                                                                     change):
    benchmark = board_benchmark()
    metrics = ("IFR", "CR", "EMR")
    assert visitor.get("/b/mmae/").status_code == 200  # the empty board, seen first
    with change():
        rank_ranges.refresh(benchmark)  # the worker stored the empty state: no slices
    with change():
        first = scored_submission(benchmark, author, "Alpha", {
            ("overall", ""): (50.0, 60.0, 30.0), ("modality", "sound"): (40.0, 50.0, 20.0),
            ("complexity", "single"): (45.0, 55.0, 25.0)}, changed=True)
    asked(visitor, benchmark, metrics)  # finished: no worker has run since
    with change():
        scored_submission(benchmark, author, "Beta", {
            ("overall", ""): (70.0, 65.0, 40.0), ("modality", "speech"): (10.0, 20.0, 5.0)},
            changed=True)  # a bucket the board did not have
    asked(visitor, benchmark, metrics)
    with change():
        rank_ranges.refresh(benchmark)  # the worker catches up
    asked(visitor, benchmark, metrics)

    # A rescore: a new current run of Alpha with other figures.
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=benchmark.judge_config, audio_root="/x",
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="r" * 64, rounds=3,
        max_attempts=5, status="finished")
    for (dimension, bucket), (ifr, cr, emr) in {
            ("overall", ""): (80.0, 81.0, 60.0), ("modality", "music"): (90.0, 91.0, 70.0)}.items():
        SliceResult.objects.create(run=run, dimension=dimension, bucket=bucket, n=4,
                                   values={"n": 4, "IFR": ifr, "CR": cr, "EMR": emr})
    with change():
        first.runs.add(run)
        Submission.objects.filter(pk=first.pk).update(current_run=run)
        board_changed(benchmark.id)
    asked(visitor, benchmark, metrics)
    answer = visitor.get("/api/leaderboards/mmae/?dimension=modality&bucket=sound")
    # Alpha's new run has no such slice, nor has Beta: the new state has no such bucket.
    assert answer.status_code == 400 and "sound" in answer.content.decode()


def test_an_airbench_chat_board_answers_every_slice_of_each_new_state_at_once(db, author,
                                                                            visitor, change):
    benchmark = Benchmark.objects.create(
        slug="air-bench-chat", kind=airbench.CHAT, version=1, title="AIR-Bench chat",
        sha256="c" * 64, source_name="Chat_meta.json", audio_root="", n_items=4, n_criteria=4)
    config = judge_config(["http://127.0.0.1:9"], kind=benchmark.kind, benchmark=benchmark)
    assert visitor.get(f"/b/{benchmark.slug}/").status_code == 200
    with change():
        rank_ranges.refresh(benchmark)

    def score_chat_by_slices(name, slices):
        model = ModelEntry.objects.create(owner=author, name=name, organisation="Lab")
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="",
            judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=2,
            max_attempts=5, status="finished", simulated=True)
        for (dimension, bucket), score in slices.items():
            SliceResult.objects.create(run=run, dimension=dimension, bucket=bucket, n=2,
                                       values={"n": 2, "score": score,
                                               "score_answered": score, "pass_A": score,
                                               "pass_B": score, "failed": 0})
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued", current_run=run,
                                               coverage=1.0)
        submission.runs.add(run)
        board_changed(benchmark.id)

    with change():
        score_chat_by_slices("Talker", {("overall", ""): 6.5, ("category", "speech"): 6.0,
                                        ("task", "speech_QA"): 6.0})
    asked(visitor, benchmark, ("score",))
    with change():
        score_chat_by_slices("Listener", {("overall", ""): 5.5, ("category", "sound"): 5.0,
                                          ("task", "sound_QA"): 5.0})
    asked(visitor, benchmark, ("score",))
