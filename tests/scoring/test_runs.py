"""Scoring runs in the database, driven in-process against the simulator over loopback."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from judge.errors import FleetUnavailable
from scoring import exports, judgments, query_loop, runs
from scoring.models import Answer, Item, RunBatch, ScoringRun
from tests.conftest import free_ports, run_manage, score_run

pytestmark = pytest.mark.django_db


def judge(urls=None, **overrides):
    """Worker settings (the endpoints come from the run's judge config)."""
    return query_loop.JudgeSettings(**{"concurrency": 8, "timeout": 10, "down_wait": 1,
                                       **overrides})


def test_a_run_is_split_into_batches_of_items_with_outputs(run_setup):
    run = run_setup(["http://127.0.0.1:9"])
    assert run.status == "queued" and "queued" in run.status_times
    batches = list(run.batches.order_by("index"))
    assert [len(b.item_keys) for b in batches] == [5, 5, 2]  # 12 of 14 have outputs
    assert run.total_queries == 3 * sum(
        Item.objects.get(benchmark=run.benchmark, key=k).criteria.count()
        for b in batches for k in b.item_keys)


def test_the_database_files_equal_the_command_lines(run_setup, demo_set, simulator_factory,
                                                    tmp_path):
    """The pipeline and `manage.py score` give the same answers for the same inputs and seed."""
    sim = simulator_factory("--latency-ms", "1")
    run = score_run(run_setup(sim.urls))
    assert run.status == "finished" and run.simulated
    out = tmp_path / "cli"
    result = run_manage("score", "--meta", str(demo_set["meta"]), "--predictions",
                        str(demo_set["predictions"]), "--audio_root", str(demo_set["root"]),
                        "--base_urls", sim.base_urls, "--output_dir", str(out), "--seed", "11")
    assert result.returncode == 0, result.stderr
    volatile = {"endpoint", "latency_ms", "attempts"}

    def stable(lines):
        return [{k: v for k, v in json.loads(line).items() if k not in volatile}
                for line in lines]

    assert stable("".join(exports.file_chunks(run, "results.jsonl")).splitlines()) == \
        stable((out / "results.jsonl").read_text().splitlines())
    assert "".join(exports.file_chunks(run, "per_sample.json")) == \
        (out / "per_sample.json").read_text()
    assert json.loads("".join(exports.file_chunks(run, "taxonomy.json"))) == \
        json.loads((out / "taxonomy.json").read_text())


def test_a_batch_is_claimed_once(run_setup):
    batch = run_setup(["http://127.0.0.1:9"]).batches.first()
    assert runs.batch_claim(batch.id) is True
    assert runs.batch_claim(batch.id) is False
    batch.refresh_from_db()
    assert batch.status == "claimed" and batch.claims == 1


@pytest.mark.slow
def test_a_redelivered_batch_changes_nothing(run_setup, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    run = run_setup(sim.urls)
    batch = run.batches.first()
    assert query_loop.batch_score(batch.id, judge(sim.urls)) is True
    answers = list(Answer.objects.filter(run=run).order_by("id").values())
    asked = sim.completions()
    assert query_loop.batch_score(batch.id, judge(sim.urls)) is False  # done: not claimed again
    RunBatch.objects.filter(id=batch.id).update(status="pending")  # as if redelivered
    assert query_loop.batch_score(batch.id, judge(sim.urls)) is True
    assert list(Answer.objects.filter(run=run).order_by("id").values()) == answers
    assert sim.completions() == asked


@pytest.mark.slow
def test_a_fleet_outage_hands_the_batch_back(run_setup):
    dead = [f"http://127.0.0.1:{p}" for p in free_ports(1)]
    run = run_setup(dead)
    batch = run.batches.first()
    with pytest.raises(FleetUnavailable):
        query_loop.batch_score(batch.id, judge(dead, down_wait=0.5))
    batch.refresh_from_db()
    assert batch.status == "pending"
    assert batch.claims == 0  # an outage is not counted against the batch
    run.refresh_from_db()
    assert run.status == "scoring"


def test_a_broken_batch_is_retried_then_fails_the_run_in_words(run_setup, settings):
    settings.SCORING_MAX_CLAIMS = 2
    run = run_setup(["http://127.0.0.1:9"])
    batch = run.batches.first()
    runs.batch_claim(batch.id)
    assert runs.batch_failed(batch.id, "KeyError: 'x'") is True
    runs.batch_claim(batch.id)
    assert runs.batch_failed(batch.id, "KeyError: 'x'") is False
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error == ("failed on our side: scoring batch 0 broke 2 times; last error: "
                         "KeyError: 'x'")


def test_the_sweeper_hands_back_a_batch_whose_worker_died(run_setup, settings):
    settings.SCORING_STALE_SECONDS = 60
    run = run_setup(["http://127.0.0.1:9"])
    stale, fresh = run.batches.order_by("index")[:2]
    runs.batch_claim(stale.id)
    runs.batch_claim(fresh.id)
    RunBatch.objects.filter(id=stale.id).update(
        heartbeat_at=timezone.now() - timedelta(seconds=120))
    batch_ids, run_ids = runs.sweep()
    assert stale.id in batch_ids and fresh.id not in batch_ids
    assert RunBatch.objects.get(id=stale.id).status == "pending"
    assert RunBatch.objects.get(id=fresh.id).status == "claimed"
    assert run_ids == []


def test_the_sweeper_fails_a_run_whose_batch_keeps_killing_workers(run_setup, settings):
    settings.SCORING_MAX_CLAIMS = 1
    run = run_setup(["http://127.0.0.1:9"])
    batch = run.batches.first()
    runs.batch_claim(batch.id)
    RunBatch.objects.filter(id=batch.id).update(
        heartbeat_at=timezone.now() - timedelta(hours=1))
    runs.sweep()
    run.refresh_from_db()
    assert run.status == "failed"
    assert "lost its worker 1 times" in run.error


def test_the_sweeper_requeues_a_batch_whose_message_was_lost(run_setup, settings):
    run = run_setup(["http://127.0.0.1:9"])
    ScoringRun.objects.filter(id=run.id).update(created_at=timezone.now() - timedelta(hours=2))
    runs.batches_enqueued([b.id for b in run.batches.all()])
    assert runs.sweep()[0] == []  # just queued: left alone
    RunBatch.objects.filter(run=run).update(enqueued_at=timezone.now() - timedelta(hours=2))
    assert sorted(runs.sweep()[0]) == sorted(run.batches.values_list("id", flat=True))


def test_a_cancelled_run_is_not_scored(run_setup):
    run = run_setup(["http://127.0.0.1:9"])
    assert runs.run_cancel(run.id) is True
    assert runs.batch_claim(run.batches.first().id) is False


def test_the_sweeper_hands_out_batches_that_were_never_queued(run_setup):
    run = run_setup(["http://127.0.0.1:9"])  # created, but its enqueue never ran
    assert runs.sweep()[0] == []
    ScoringRun.objects.filter(id=run.id).update(created_at=timezone.now() - timedelta(hours=2))
    assert sorted(runs.sweep()[0]) == sorted(run.batches.values_list("id", flat=True))


def test_a_batch_whose_message_a_redis_restart_lost_is_sent_again_within_minutes(run_setup):
    """Redis restarted without persistence: the batch stays pending, unclaimed; by default
    the sweep sends it again once SCORING_REQUEUE_SECONDS (two minutes) have passed, while
    a batch a live worker holds stays with it."""
    from django.conf import settings as defaults

    assert defaults.SCORING_REQUEUE_SECONDS <= 120
    run = run_setup(["http://127.0.0.1:9"])
    runs.batches_enqueued([b.id for b in run.batches.all()])
    claimed = run.batches.order_by("index").first()
    runs.batch_claim(claimed.id)
    later = timezone.now() + timedelta(seconds=defaults.SCORING_REQUEUE_SECONDS + 1)
    RunBatch.objects.filter(id=claimed.id).update(heartbeat_at=later)
    assert sorted(runs.sweep(now=later)[0]) == sorted(
        run.batches.exclude(id=claimed.id).values_list("id", flat=True))


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"])
def test_answers_stored_twice_are_stored_once(run_setup, monkeypatch, vendor):
    """PostgreSQL stores answers by COPY into a temporary table and one INSERT ... ON
    CONFLICT DO NOTHING; other databases by bulk_create. Either way a batch stored again
    (a redelivery) adds only what is new, and the first answers stay as they were."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scoring.models import Criterion

    if vendor != connection.vendor:
        monkeypatch.setattr(connection, "vendor", vendor)
    run = run_setup(["http://127.0.0.1:9"])
    criterion = Criterion.objects.filter(item__benchmark=run.benchmark).first()

    def answers(choice):
        return [judgments.answer_from(run, criterion.id, f"key{r}", {
            "round": r, "choices": ["yes", "no, \"quoted\"\ttab"],
            "verdict": {"correct_letter": "A", "correct": choice == "A"},
            "choice": choice, "reason": None, "raw": "{}",
            "error": None, "endpoint": "http://127.0.0.1:9", "attempts": 1,
            "latency_ms": 12.5, "error_kind": ""}) for r in range(3)]

    with CaptureQueriesContext(connection) as queries:
        judgments.answers_store(answers("A")[:2])
    judgments.answers_store(answers("B"))
    stored = list(Answer.objects.filter(run=run).order_by("round")
                  .values_list("round", "choice", "choices", "content_key"))
    assert stored == [(0, "A", ["yes", "no, \"quoted\"\ttab"], "key0"),
                      (1, "A", ["yes", "no, \"quoted\"\ttab"], "key1"),
                      (2, "B", ["yes", "no, \"quoted\"\ttab"], "key2")]
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) == 1
    assert ("FROM answer_load ON CONFLICT DO NOTHING" in inserts[0]) == (vendor == "postgresql")


@pytest.mark.slow
def test_two_batches_in_one_process_share_one_fleet_client(run_setup, thread_simulator_factory):
    """The worker process keeps its judge fleet client between batches; a change to what it
    is built from (here the concurrency) opens a new one."""
    from judge.runner import fleet_runner

    sim = thread_simulator_factory(latency_ms=1)
    run = run_setup(sim.urls)
    first, second, third = run.batches.order_by("index")
    opened = fleet_runner.opened
    assert query_loop.batch_score(first.id, judge()) is True
    client = fleet_runner._fleet
    assert query_loop.batch_score(second.id, judge()) is True
    assert fleet_runner.opened == opened + 1 and fleet_runner._fleet is client
    assert query_loop.batch_score(third.id, judge(concurrency=4)) is True
    assert fleet_runner.opened == opened + 2 and fleet_runner._fleet is not client
    assert set(run.batches.values_list("status", flat=True)) == {"done"}


@pytest.mark.slow
def test_the_next_batch_is_claimed_while_the_first_is_still_in_flight(
        run_setup, thread_simulator_factory, monkeypatch, settings):
    """Claim-ahead: once fewer of its queries wait than the fleet has slots, a task claims
    the run's next pending batch and feeds it into the same loop; the next batch's own
    message then finds it done."""
    # Answers are stored when their batch ends only, not as progress after a second, however
    # slowly a loaded machine asks the first batch's queries.
    settings.SCORING_PROGRESS_SECONDS = 3600
    sim = thread_simulator_factory(latency_ms=20)
    run = run_setup(sim.urls)
    first, second, third = run.batches.order_by("index")
    seen = []
    batch_open = query_loop._batch_open

    def spy(batch_id):
        seen.append((batch_id, dict(run.batches.values_list("id", "status")),
                     Answer.objects.filter(run=run).count()))
        return batch_open(batch_id)

    monkeypatch.setattr(query_loop, "_batch_open", spy)
    assert query_loop.batch_score(first.id, judge(concurrency=4, claim_ahead=60)) is True
    assert [batch_id for batch_id, *_ in seen] == [first.id, second.id, third.id]
    _, statuses, answered = seen[1]
    assert statuses == {first.id: "claimed", second.id: "claimed", third.id: "pending"}
    assert answered == 0  # the first batch's answers were not stored yet: still in flight
    assert set(run.batches.values_list("status", flat=True)) == {"done"}
    assert query_loop.batch_score(second.id, judge()) is False
    assert runs.run_try_aggregate(run.id) is True


@pytest.mark.slow
def test_without_claim_ahead_a_task_scores_its_own_batch_only(run_setup, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    run = run_setup(sim.urls)
    first = run.batches.order_by("index").first()
    assert query_loop.batch_score(first.id, judge(claim_ahead=0)) is True
    assert sorted(run.batches.values_list("status", flat=True)) == ["done", "pending", "pending"]


@pytest.mark.slow
def test_batches_claimed_ahead_are_handed_back_when_the_fleet_goes_down(run_setup,
                                                                          monkeypatch):
    """An outage hands back every batch the loop holds, none counted, and asks for the
    ones claimed ahead to be sent again (their own messages are spent)."""
    dead = [f"http://127.0.0.1:{p}" for p in free_ports(1)]
    run = run_setup(dead)
    first = run.batches.order_by("index").first()
    # Which batches the loop claimed ahead before the outage was declared depends on how soon
    # it got to them: those it claimed are the ones it must hand back, whatever their number.
    claimed = []
    claim_next = query_loop.batch_claim_next
    monkeypatch.setattr(query_loop, "batch_claim_next",
                        lambda run_id: _noted(claim_next(run_id), claimed))
    resent = []
    with pytest.raises(FleetUnavailable):
        query_loop.batch_score(first.id, judge(down_wait=2, concurrency=500, claim_ahead=60),
                         resend=lambda batch_ids, why: resent.extend(batch_ids))
    assert claimed, "the loop claimed no batch ahead within the 2 s the fleet was waited for"
    assert sorted(resent) == sorted(claimed)
    assert set(run.batches.values_list("status", "claims")) == {("pending", 0)}


def _noted(batch_id, claimed: list) -> int | None:
    if batch_id is not None:
        claimed.append(batch_id)
    return batch_id


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the loop's own connection, outside a test's block
def test_a_batch_claimed_ahead_whose_connection_was_cut_is_handed_back_on_a_new_one(
        run_setup, thread_simulator_factory, monkeypatch):
    """The server ends the worker's connection (an administrator, a failover) as the loop
    opens a batch it claimed ahead: the batch is handed back to its own task through a new
    connection, not left claimed for the sweeper, and the first batch is scored."""
    from django.db import connection

    from tests.database_template import _connect

    sim = thread_simulator_factory(latency_ms=20)
    run = run_setup(sim.urls)
    first, second, _ = run.batches.order_by("index")
    batch_open = query_loop._batch_open

    def cut(batch_id):
        if batch_id == second.id:
            with _connect(connection.settings_dict) as server:
                server.execute("SELECT pg_terminate_backend(%s)",
                               (connection.connection.info.backend_pid,))
        return batch_open(batch_id)

    monkeypatch.setattr(query_loop, "_batch_open", cut)
    resent = []
    assert query_loop.batch_score(first.id, judge(concurrency=4, claim_ahead=60),
                                  resend=lambda batch_ids, why: resent.extend(batch_ids))
    assert resent == [second.id]
    assert dict(run.batches.values_list("id", "status")) == {
        first.id: "done", second.id: "pending", run.batches.get(index=2).id: "pending"}
