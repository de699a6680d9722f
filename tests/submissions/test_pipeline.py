"""The pipeline end to end: API upload, a real Celery worker on Redis, PostgreSQL, simulator."""

import time

import pytest
from rest_framework.test import APIClient

from scoring.models import Answer, RunBatch, ScoringRun
from submissions.models import Submission
from tests.submissions.conftest import check_finished, state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

@pytest.fixture
def stack(pipeline_stack):
    return pipeline_stack


def test_a_worker_killed_mid_run_costs_one_batch_and_the_run_finishes(stack, simulator_factory):
    simulator_factory("--latency-ms", "150", "--slots", "4", ports=stack["ports"])
    worker = stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "scoring"
             and Answer.objects.filter(run__submissions__id=submission_id).count() >= 60,
             90, "scoring to be under way", stack["log"])
    worker.kill()
    run = Submission.objects.get(id=submission_id).current_run
    assert RunBatch.objects.filter(run=run, status=RunBatch.Status.CLAIMED).exists()
    before = Answer.objects.filter(run=run).count()
    assert before < run.total_queries

    stack["worker"]()
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    run = check_finished(stack, submission_id)
    assert RunBatch.objects.filter(run=run).exclude(status=RunBatch.Status.DONE).count() == 0
    assert RunBatch.objects.filter(run=run, claims__gt=1).exists()  # the lost batch, redone


def test_the_fleet_down_for_a_while_delays_the_run_which_then_finishes(stack,
                                                                      simulator_factory):
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) in ("queued", "scoring"), 60, "the run to queue",
             stack["log"])
    time.sleep(6)  # every endpoint refuses connections meanwhile
    run = Submission.objects.get(id=submission_id).current_run
    assert ScoringRun.objects.get(id=run.id).status in ("queued", "scoring")
    assert Answer.objects.filter(run=run).count() == 0
    simulator_factory("--latency-ms", "20", "--slots", "8", ports=stack["ports"])
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    check_finished(stack, submission_id)
    assert "handed back" in stack["log"].read_text()


def test_a_rescore_runs_on_the_rescoring_queue_and_the_board_switches_when_it_ends(
        stack, simulator_factory, staff):
    sim = simulator_factory("--latency-ms", "5", "--slots", "8", ports=stack["ports"])
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "finished", 120, "the first run", stack["log"])
    first = Submission.objects.get(id=submission_id).current_run
    asked = sim.completions()
    client = APIClient()
    client.force_authenticate(staff)
    response = client.post(f"/api/submissions/{submission_id}/rescore/",
                           {"reason": "check the cache"}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["queries"] == 0
    rescore_id = response.json()["run"]["id"]
    wait_for(lambda: Submission.objects.get(id=submission_id).current_run_id == rescore_id,
             120, "the board to switch to the rescore", stack["log"])
    rescored = ScoringRun.objects.get(id=rescore_id)
    assert rescored.status == "finished" and rescored.purpose == "rescore"
    assert sim.completions() == asked  # every answer came from the judgment cache
    assert ScoringRun.objects.get(id=first.id).status == "finished"  # the old run stays
