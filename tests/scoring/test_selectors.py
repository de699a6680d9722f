"""The fleet page's figures, on hand-made answers, batches and endpoint states."""

from datetime import timedelta

import pytest
from django.utils import timezone

from judge.models import Endpoint
from scoring import runs
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer, Criterion, RunBatch, ScoringRun
from scoring.selectors import (
    age_text,
    cached_answers,
    endpoint_stats,
    fleet_configs,
    fleet_queue,
    percentile,
)
from scoring.services import benchmark_import
from tests.conftest import judge_config

pytestmark = pytest.mark.django_db

A, B = "http://judge-a:8000", "http://judge-b:8000"
NOW = timezone.now()


@pytest.fixture
def benchmark(demo_set):
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    benchmark.outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["jsonl"], known_ids={s["id"] for s in demo_set["samples"]})}
    benchmark.demo_root = str(demo_set["root"])
    return benchmark


def make_run(benchmark, *, purpose="submission", items=3, created_ago=0, status="queued"):
    keys = list(benchmark.items.order_by("position").values_list("key", flat=True)[:items])
    run = runs.run_create(benchmark=benchmark, audio_root=benchmark.demo_root,
                          outputs={k: benchmark.outputs[k] for k in keys}, missing={},
                          config=judge_config([A, B]), purpose=purpose)
    ScoringRun.objects.filter(id=run.id).update(
        status=status, created_at=NOW - timedelta(seconds=created_ago))
    run.refresh_from_db()
    return run


def answers(run, rows):
    """One answer per row of (endpoint, latency_ms, error, attempts, cached, minutes ago)."""
    slots = [(c, k) for c in Criterion.objects.filter(item__benchmark=run.benchmark)
             .order_by("id") for k in range(run.rounds)]
    Answer.objects.bulk_create([
        Answer(run=run, criterion=criterion, round=k, choices=["a", "b"],
               verdict={"correct_letter": "A", "correct": not error},
               choice=None if error else "A", error=error,
               endpoint=endpoint, attempts=attempts, latency_ms=latency, cached=cached,
               answered_at=NOW - timedelta(minutes=ago))
        for (criterion, k), (endpoint, latency, error, attempts, cached, ago)
        in zip(slots, rows, strict=False)])


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(10, 210, 10)]  # 10 .. 200
    assert percentile(values, 50) == 100
    assert percentile(values, 95) == 190
    assert percentile(values, 99) == 200
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def test_endpoint_figures_cover_the_window_and_leave_out_cached_answers(benchmark):
    run = make_run(benchmark, items=14)
    rows = [(A, 10.0 * i, None, 1, False, 1) for i in range(1, 21)]  # 10 .. 200 ms
    rows[0] = (A, 10.0, "no valid answer after 3 attempt(s)", 3, False, 1)
    rows[1] = (A + "/", 20.0, None, 2, False, 14)
    rows += [(B, 5000.0, None, 1, False, 16)]  # before the window
    rows += [(None, None, None, 0, True, 2)] * 4  # from the cache
    rows += [(B, None, "timeout after 120 s", 5, False, 3)]  # no latency
    answers(run, rows)

    stats = endpoint_stats(now=NOW, minutes=15)
    a, b = stats[A], stats[B]
    assert a.answers == 20 and a.errors == 1
    assert a.error_rate == pytest.approx(1 / 20) and a.error_percent == pytest.approx(5.0)
    assert a.per_minute == pytest.approx(20 / 15)
    assert a.attempts == pytest.approx((3 + 2 + 18) / 20)
    assert (a.p50, a.p95, a.p99) == (100.0, 190.0, 200.0)
    assert b.answers == 1 and b.errors == 1 and b.error_rate == 1.0
    assert b.p50 is None  # the only answer in the window has no latency
    assert cached_answers(now=NOW, minutes=15) == 4
    assert cached_answers(now=NOW, minutes=1) == 0


def test_an_endpoint_without_answers_has_no_figures(benchmark):
    assert endpoint_stats(now=NOW, minutes=15) == {}


def test_the_queue_counts_batches_queries_and_the_oldest_waiting_work(benchmark, settings):
    settings.SCORING_BATCH_ITEMS = 1
    old = make_run(benchmark, items=3, created_ago=600, status="scoring")
    new = make_run(benchmark, items=2, created_ago=60)
    rescore = make_run(benchmark, purpose="rescore", items=2, created_ago=300)
    make_run(benchmark, purpose="rescore", items=4, created_ago=9000, status="finished")
    done = make_run(benchmark, purpose="baseline", items=1, created_ago=5000, status="scoring")
    RunBatch.objects.filter(run=old, index=0).update(status="done")
    RunBatch.objects.filter(run=old, index=1).update(status="claimed")
    RunBatch.objects.filter(run=done).update(status="claimed")
    answers(old, [(A, 10.0, None, 1, False, 1)] * 5)

    rows = {row.purpose: row for row in fleet_queue(now=NOW)}
    assert list(rows) == ["submission", "rescore", "baseline"]
    submission = rows["submission"]
    assert (submission.pending, submission.claimed) == (1 + 2, 1)
    assert submission.queries_left == old.total_queries + new.total_queries - 5
    assert (submission.oldest_run_id, submission.age_seconds) == (old.id, pytest.approx(600))
    assert (rows["rescore"].pending, rows["rescore"].claimed) == (2, 0)
    assert rows["rescore"].queries_left == rescore.total_queries  # the finished run is done
    assert rows["rescore"].oldest_run_id == rescore.id
    baseline = rows["baseline"]  # being scored, nothing waiting
    assert (baseline.pending, baseline.claimed, baseline.oldest_run_id) == (0, 1, None)
    assert baseline.age_seconds is None


def test_configs_list_their_endpoints_state_and_figures_current_ones_first(benchmark):
    judge_config(["http://judge-z:8000"], seed=1)
    current = judge_config([A, B], benchmark=benchmark)
    Endpoint.objects.create(base_url=A, healthy=True, last_probe_at=NOW - timedelta(seconds=20),
                            running=3, waiting=1, probe_latency_ms=12.0)
    Endpoint.objects.create(base_url=B, enabled=False, disabled_reason="flaky")
    run = make_run(benchmark)
    answers(run, [(A, 50.0, None, 1, False, 1)])

    rows = fleet_configs(now=NOW)
    assert [r.config for r in rows][0] == current
    assert rows[0].benchmarks == [f"mmae v{benchmark.version}"]
    assert rows[0].in_service == 1
    a, b = rows[0].endpoints
    assert (a.base_url, a.enabled, a.health, a.state.running) == (A, True, "healthy", 3)
    assert a.probe_age_seconds == pytest.approx(20) and not a.probe_stale
    assert a.stats.answers == 1 and a.stats.p50 == 50.0
    assert (b.enabled, b.health, b.stats.answers) == (False, "unknown", 0)
    other = rows[-1]
    assert other.benchmarks == [] and other.endpoints[0].state is None
    assert other.endpoints[0].health == "unknown"


def test_ages_read_as_people_say_them():
    assert [age_text(s) for s in (None, 0.4, 59, 89.4, 600, 5399, 3 * 3600 + 300, 3 * 86400)] \
        == ["", "0 s", "59 s", "89 s", "10 min", "90 min", "3 h 5 min", "3 days"]


def test_a_probe_older_than_three_periods_is_flagged_stale(settings):
    settings.FLEET_PROBE_SECONDS = 30
    judge_config([A, B])
    Endpoint.objects.create(base_url=A, healthy=True, last_probe_at=NOW - timedelta(seconds=89))
    Endpoint.objects.create(base_url=B, healthy=True, last_probe_at=NOW - timedelta(seconds=91))
    a, b = fleet_configs(now=NOW)[0].endpoints
    assert (a.probe_stale, a.probe_age) == (False, "89 s")
    assert (b.probe_stale, b.probe_age) == (True, "2 min")
