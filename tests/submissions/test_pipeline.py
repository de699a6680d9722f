"""The pipeline end to end: API upload, a real Celery worker on Redis, PostgreSQL, simulator."""

import time

import pytest
from rest_framework.test import APIClient

from scoring.models import Answer, RunBatch, ScoringRun
from submissions.models import Submission
from tests.conftest import CAST_PASSWORD
from tests.html import one, texts
from tests.scoring.test_cost_card import simulator_counts
from tests.submissions.conftest import check_finished, state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

@pytest.fixture
def stack(pipeline_stack):
    return pipeline_stack


def test_a_worker_killed_mid_run_costs_one_batch_and_the_run_finishes(
        stack, thread_simulator_factory):
    thread_simulator_factory(ports=stack["ports"], latency_ms=150, slots=4)
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
                                                                      thread_simulator_factory):
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) in ("queued", "scoring"), 60, "the run to queue",
             stack["log"])
    time.sleep(6)  # every endpoint refuses connections meanwhile
    run = Submission.objects.get(id=submission_id).current_run
    assert ScoringRun.objects.get(id=run.id).status in ("queued", "scoring")
    assert Answer.objects.filter(run=run).count() == 0
    thread_simulator_factory(ports=stack["ports"], latency_ms=20, slots=8)
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    check_finished(stack, submission_id)
    assert "handed back" in stack["log"].read_text()


def test_a_validation_broken_on_our_side_fails_then_the_sweeper_retries_it_to_the_end(
        stack, worker_factory, thread_simulator_factory, tmp_path):
    (tmp_path / "not-a-folder").write_text("")  # its storage unusable: every write fails
    broken = worker_factory(stack["ports"], SCORING_BATCH_ITEMS="3",
                            MEDIA_ROOT=str(tmp_path / "not-a-folder" / "media"),
                            UPLOAD_TEMP_DIR=str(tmp_path / "upload-tmp"),
                            SUBMISSION_VALIDATION_RETRIES="1",
                            SUBMISSION_VALIDATION_RETRY_SECONDS="1",
                            SUBMISSION_RETRY_AFTER_SECONDS="3600")()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "failed", 60, "the validation to fail",
             stack["log"])
    submission = Submission.objects.get(id=submission_id)
    assert submission.status == "failed" and "rejected" not in submission.status_times
    assert submission.report == {} and "NotADirectoryError" in submission.error
    assert "retry: Retry in 1s" in stack["log"].read_text()  # tried twice, a second apart
    broken.stop()

    thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8)
    worker_factory(stack["ports"], SCORING_BATCH_ITEMS="3", SUBMISSION_RETRY_AFTER_SECONDS="1",
                   SUBMISSION_VALIDATION_SWEEP_SECONDS="1")()  # the fault is gone
    wait_for(lambda: state(submission_id) == "finished", 120, "the retry to finish",
             stack["log"])
    check_finished(stack, submission_id)
    assert Submission.objects.get(id=submission_id).retries == 1  # by the sweeper


def test_a_rescore_runs_on_the_rescoring_queue_and_the_board_switches_when_it_ends(
        stack, thread_simulator_factory, staff):
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8)
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


def test_progress_counts_queries_as_they_are_answered_within_one_batch(
        stack, thread_simulator_factory, worker_factory):
    """The whole run in one batch: its progress and ETA still move while it is scored."""
    thread_simulator_factory(ports=stack["ports"], latency_ms=100, slots=2)
    worker_factory(stack["ports"], SCORING_BATCH_ITEMS="100")()
    submission_id = upload(stack)
    seen = []

    def progress():
        body = stack["client"].get(f"/api/submissions/{submission_id}/").json()
        if body["status"] == "scoring":
            seen.append((body["progress"]["done"], body["progress"]["eta_seconds"]))
        return body["status"] == "finished"

    wait_for(progress, 180, "the run to finish", stack["log"])
    run = check_finished(stack, submission_id)
    assert RunBatch.objects.filter(run=run).count() == 1
    moving = sorted({done for done, _ in seen if 0 < done < run.total_queries})
    assert len(moving) >= 3, seen  # several distinct counts within the one batch
    assert any(eta is not None and eta > 0 for done, eta in seen if done), seen


def test_the_cost_card_is_the_judges_own_count(stack, thread_simulator_factory, client,
                                               author):
    """A submission scored by a real worker: its cost card (the API's `cost`, the status
    page's table) is what the judge simulator counted, each audio sent about once."""
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8, record=False)
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    check_finished(stack, submission_id)
    cost = stack["client"].get(f"/api/submissions/{submission_id}/").json()["cost"]
    counts = simulator_counts(sim)
    run = Submission.objects.get(id=submission_id).current_run
    assert cost["queries"] == run.total_queries == counts["ok"] == cost["replies"]
    assert cost["requests"] == counts["completions"] + counts["refused"]
    for name in ("prompt_tokens", "completion_tokens", "audio_sent", "audio_bytes",
                 "audio_cached"):
        assert cost[name] == counts[name], name
    assert cost["audio_seconds"] == pytest.approx(counts["audio_seconds"], abs=0.01)
    assert cost["reused"] == 0 and cost["wall_seconds"] > 0 and cost["busy_seconds"] > 0
    # Each of the 18 inputs and 17 outputs sent about once per endpoint, over two: a query
    # waits for another's send of its audio once at most and for a slot on its audio's
    # endpoint 5 s at most (judge.fleet.HOME_WAIT_SECONDS), so on a loaded machine a few go
    # elsewhere and send it again: measured 1.86x alone and 2.06x beside another pipeline
    # test; all whole would be 13x (459 queries of 1 or 2 audio). The `score` command's run
    # (tests/scoring/test_cost_card.py) stays under 1.5x, bench/audio_once.py gives 0.96x.
    assert cost["audio_sent"] <= 2.5 * 35, cost
    assert client.login(username="author", password=CAST_PASSWORD)
    page = client.get(f"/submissions/{submission_id}/").content.decode()
    assert one(page, "#cost")
    rows = dict(zip(texts(page, "#cost th"), texts(page, "#cost td.num"), strict=True))
    assert rows["Prompt tokens"] == f"{counts['prompt_tokens']:,}"
    assert rows["Queries"] == f"{run.total_queries:,}"
