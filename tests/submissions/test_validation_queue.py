"""Validation has a queue of its own (SUBMISSION_VALIDATION_QUEUE): an upload is validated
within seconds while a run's batches hold every scoring process (issue 34, item 13)."""

import io
import time

import pytest
from django.conf import settings

from config.celery import app
from scoring import runs
from submissions.models import Submission
from tests.submissions.conftest import state, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def upload_as(stack, model_name):
    archive = io.BytesIO(stack["archive"])
    archive.name = "audio.zip"
    with open(stack["predictions"], "rb") as predictions:
        response = stack["client"].post("/api/submissions/", {
            "benchmark": "mmae", "model_name": model_name, "predictions": predictions,
            "audio": archive, "public": "true"}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_the_validation_task_goes_to_its_own_queue(settings):
    settings.SUBMISSION_VALIDATION_QUEUE = "validation-here"
    route = app.amqp.router.route({}, "submissions.tasks.validate_submission", (1,), {})
    assert route["queue"].name == "validation-here"
    route = app.amqp.router.route({}, "scoring.tasks.score_batch", (1,), {})
    assert route["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE


def test_an_upload_is_validated_within_seconds_while_a_run_holds_the_scoring_worker(
        pipeline_stack, thread_simulator_factory):
    stack = pipeline_stack
    # A slow judge: the first run's batches (claimed ahead) hold the one scoring process for
    # minutes, as a full run does.
    thread_simulator_factory(ports=stack["ports"], latency_ms=3000, slots=8)
    stack["worker"](queues=("CELERY_TASK_DEFAULT_QUEUE", "SCORING_RESCORE_QUEUE"))
    stack["worker"](queues=("SUBMISSION_VALIDATION_QUEUE",), beat=False)
    scoring = upload_as(stack, "Scoring Model")
    wait_for(lambda: state(scoring) == "scoring", 90, "the first run to score", stack["log"])

    started = time.monotonic()
    small = upload_as(stack, "Small Model")
    wait_for(lambda: state(small) not in ("uploaded", "validating"), 60,
             "the second upload's validation", stack["log"])
    waited = time.monotonic() - started
    assert state(small) == "queued"
    assert state(scoring) == "scoring"  # the scoring process was busy all along
    assert waited < 15, f"validated after {waited:.1f} s"
    runs.run_cancel(Submission.objects.get(id=scoring).current_run_id)
    assert settings.SUBMISSION_VALIDATION_QUEUE.endswith("-validation")
