"""Faults in the middle of a run, through the whole pipeline (API upload, a real Celery worker
on Redis, PostgreSQL, the simulator): the database connections killed, a cancel."""

import time

import psycopg
import pytest
from django.db import OperationalError, connection

from scoring import runs
from scoring.models import Answer, RunBatch
from submissions.models import Submission
from tests.conftest import demo_run
from tests.submissions.conftest import check_finished, state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def answers_of(submission_id) -> int:
    return Answer.objects.filter(run__submissions__id=submission_id).count()


def kill_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def test_database_connections_killed_mid_run_cost_one_batch_and_strand_nothing(
        pipeline_stack, thread_simulator_factory, worker_factory):
    stack = pipeline_stack
    thread_simulator_factory(ports=stack["ports"], latency_ms=80, slots=4)
    # A stranded batch would wait for the sweeper (600 s) and a poisoned connection for the
    # judge's timeout (300 s): both beyond the wait for the run to finish below, which a
    # clean retry takes seconds of, however loaded the machine.
    start = worker_factory(stack["ports"], SCORING_BATCH_ITEMS="3", SCORING_STALE_SECONDS="600",
                           JUDGE_TIMEOUT="300", SCORING_CLAIM_AHEAD_SECONDS="300")
    start()
    submission_id = upload(stack)
    wait_for(lambda: answers_of(submission_id) >= 40, 90, "scoring to be under way",
             stack["log"])
    assert kill_other_connections() >= 1
    wait_for(lambda: state(submission_id) == "finished", 120, "the run to finish",
             stack["log"])
    run = check_finished(stack, submission_id)
    # every later query was answered at the simulator's pace: no lane was left waiting for
    # the judge's timeout
    slowest = max(Answer.objects.filter(run=run).values_list("latency_ms", flat=True))
    assert slowest < 60_000
    assert RunBatch.objects.filter(run=run, claims__gt=2).count() == 0


def test_a_batch_failure_is_handled_on_a_new_connection_when_ours_was_killed(demo_set):
    """The failure handler of a batch whose database connection died outside a transaction
    (so Django did not close it) opens a new one, instead of failing too and leaving the
    batch claimed until the sweeper comes."""
    _, run = demo_run(demo_set, ["http://127.0.0.1:9"])
    batch = run.batches.order_by("index").first()
    assert runs.batch_claim(batch.id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"},
                         autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    with pytest.raises(OperationalError):
        RunBatch.objects.filter(id=batch.id).count()
    assert runs.batch_failed(batch.id, "OperationalError: the connection is lost") is True
    batch.refresh_from_db()
    assert (batch.status, batch.claims) == ("pending", 1)


def test_a_cancel_stops_the_queries_in_flight_within_seconds(pipeline_stack,
                                                             thread_simulator_factory):
    stack = pipeline_stack
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=300, slots=4)
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: answers_of(submission_id) >= 20, 90, "scoring to be under way",
             stack["log"])
    response = stack["client"].post(f"/api/submissions/{submission_id}/cancel/")
    assert response.status_code == 200, response.content
    # The worker's word that it stopped, then the simulator's that nothing is asked for 2 s
    # (each of the worker's processes stops its own batch, one after another on a loaded
    # machine), not a time this machine may be too loaded to keep.
    wait_for(lambda: "stopped while scoring" in stack["log"].read_text(), 60,
             "the worker to stop", stack["log"])

    def still():
        asked = sim.completions()
        time.sleep(2)
        return sim.completions() == asked and \
            sum(s["in_progress"] + s["waiting"] for s in sim.stats()) == 0

    wait_for(still, 60, "the queries to stop", stack["log"])
    assert state(submission_id) == "cancelled"
    run = Submission.objects.get(id=submission_id).current_run
    assert Answer.objects.filter(run=run).count() < run.total_queries
