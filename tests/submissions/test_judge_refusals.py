"""What a real judge refuses never becomes a published score: uploads through the API scored by
a real Celery worker on PostgreSQL and Redis, against a judge simulator that answers as vLLM
does when it serves another model, wants an API key, or refuses a query's content."""

import time

import pytest
from rest_framework.test import APIClient

from scoring import aggregation, query_loop, runs
from scoring.judge_configs import judge_config_current
from scoring.models import Answer, JudgeConfig, ScoringRun
from submissions.models import Submission
from submissions.services import quota_left
from tests.conftest import demo_run, free_ports, score_run
from tests.submissions.conftest import check_finished, state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def board_rows(client):
    response = client.get("/api/leaderboards/mmae/")
    assert response.status_code == 200
    return response.json()["rows"]


@pytest.fixture
def stack(pipeline_stack):
    return pipeline_stack


def waiting_without_answers(submission_id, stack, seconds=5):
    """The run stays queued or scoring, with no answer stored, for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = Submission.objects.get(id=submission_id).current_run
        if run is not None:
            assert ScoringRun.objects.get(id=run.id).status in ("queued", "scoring"), \
                stack["log"].read_text()[-3000:]
            assert Answer.objects.filter(run=run).count() == 0
        time.sleep(0.3)


@pytest.mark.parametrize("fault", ["another model", "a key we do not send"])
def test_a_misconfigured_judge_delays_the_run_which_finishes_once_the_judge_is_fixed(
        stack, thread_simulator_factory, fault):
    broken = {"model": "Qwen2-Audio-7B-Instruct"} if fault == "another model" else \
        {"api_key": "the-judges-key"}
    sim = thread_simulator_factory(stack["ports"], latency_ms=5, **broken)
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) in ("queued", "scoring"), 60, "the run to queue",
             stack["log"])
    waiting_without_answers(submission_id, stack)
    assert board_rows(stack["client"]) == []
    log = stack["log"].read_text()
    assert "misconfigured" in log
    assert ("does not exist" in log or "serves 'Qwen2-Audio-7B-Instruct'" in log) \
        if fault == "another model" else "refuses our API key" in log
    assert "staff alert" in log  # config.alerts logs each alert it sends

    sim.stop()  # the operator restarts the judge, set up right
    thread_simulator_factory(ports=stack["ports"], latency_ms=5)
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    run = check_finished(stack, submission_id)
    assert not Answer.objects.filter(run=run, error__isnull=False).exists()
    assert run.refused_queries == 0
    assert [r["submission"] for r in board_rows(stack["client"])] == [submission_id]


def test_a_judge_refusing_every_query_never_publishes_and_a_rescore_once_fixed_does(
        stack, thread_simulator_factory, staff, author):
    # The outputs are 0.5 s: this judge's encoder cache takes 0.1 s at most.
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=5, max_audio_seconds=0.1)
    stack["worker"]()
    quota_before = quota_left(author)
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "failed", 120, "the run to fail", stack["log"])
    run = Submission.objects.get(id=submission_id).current_run
    assert run.refused_queries == run.total_queries > 0
    assert "The judge refused" in run.error and "not a fault in your upload" in run.error
    assert "encoder cache" in run.error  # vLLM's own words
    assert board_rows(stack["client"]) == []
    assert quota_left(author) == quota_before  # failed on our side: no quota charged
    detail = stack["client"].get(f"/api/submissions/{submission_id}/").json()
    assert detail["status"] == "failed"

    sim.stop()
    thread_simulator_factory(ports=stack["ports"], latency_ms=5)
    client = APIClient()
    client.force_authenticate(staff)
    response = client.post(f"/api/submissions/{submission_id}/rescore/",
                           {"reason": "judge's encoder cache enlarged"}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["queries"] == run.total_queries  # no refusal is reused
    rescore_id = response.json()["run"]["id"]
    wait_for(lambda: Submission.objects.get(id=submission_id).current_run_id == rescore_id,
             180, "the board to switch to the rescore", stack["log"])
    check_finished(stack, submission_id)
    assert [r["submission"] for r in board_rows(stack["client"])] == [submission_id]


def test_refusals_under_the_share_publish_with_their_count_on_the_board(
        stack, thread_simulator_factory, worker_factory):
    # Rubrics that name an input and the output send two audios: this judge takes one.
    thread_simulator_factory(ports=stack["ports"], latency_ms=5, max_audios=1)
    stack["worker"] = worker_factory(stack["ports"], SCORING_BATCH_ITEMS="3",
                                     SCORING_MAX_REFUSED_SHARE="0.99")
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "finished", 180, "the run to finish",
             stack["log"])
    run = check_finished(stack, submission_id)
    refused = Answer.objects.filter(run=run, error_kind="refused request")
    assert 0 < refused.count() == run.refused_queries < run.total_queries
    assert all("At most 1 audio(s) may be provided in one prompt" in a.error
               and a.choice is None and not a.verdict["correct"] for a in refused)
    rows = board_rows(stack["client"])
    assert [(r["submission"], r["refused"]) for r in rows] == [(submission_id,
                                                                 run.refused_queries)]
    page = stack["client"].get("/b/mmae/").content.decode()
    assert f"{run.refused_queries} refused" in page


def test_an_output_longer_than_the_judge_takes_is_refused_at_validation(
        stack, thread_simulator_factory):
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=5)
    config = judge_config_current(stack["benchmark"])
    JudgeConfig.objects.filter(id=config.id).update(max_audio_seconds=0.25)
    stack["worker"]()
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) == "rejected", 60, "the upload to be rejected",
             stack["log"])
    report = Submission.objects.get(id=submission_id).report
    message = "\n".join(report["errors"])
    assert "above the limit of 0.25 s" in message
    assert f"the longest audio judge config {config.name} accepts" in message
    assert ".wav" in message  # the file is named
    assert sim.completions() == 0


def test_a_retry_once_the_judge_is_fixed_asks_the_refused_queries_again(
        demo_set, thread_simulator_factory):
    ports = free_ports(2)
    sim = thread_simulator_factory(ports=ports, latency_ms=1, max_audio_seconds=0.1)
    _, run = demo_run(demo_set, sim.urls)
    worker = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, worker) is True
    assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id) is False
    run.refresh_from_db()
    assert run.status == "failed" and run.refused_queries == run.total_queries
    sim.stop()
    thread_simulator_factory(ports=ports, latency_ms=1)
    assert runs.run_retry(run.id) is True
    assert not Answer.objects.filter(run=run).exists()  # every refusal is asked again
    run = score_run(run)
    assert run.status == "finished" and run.refused_queries == 0
    assert Answer.objects.filter(run=run, error__isnull=True).count() == run.total_queries
