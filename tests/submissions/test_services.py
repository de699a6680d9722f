"""Creating and validating submissions, quotas; the worker's part is called directly here."""

import io
import zipfile
from datetime import timedelta
from pathlib import Path

import celery
import pytest
from django.conf import settings
from django.utils import timezone
from kombu.exceptions import OperationalError

from config.errors import ServiceError
from scoring.models import Criterion, RunBatch, ScoringRun
from submissions.models import ModelEntry, Submission
from submissions.services import (
    quota_left,
    submission_validate,
    validations_to_retry,
)


def media_files():
    root = Path(settings.MEDIA_ROOT)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        if root.exists() else []


def test_an_upload_is_stored_then_validated_into_a_queued_run(author, make_submission):
    submission = make_submission(author)
    assert submission.status == "uploaded"
    assert len(media_files()) == 2
    assert submission_validate(submission.id) is True
    submission.refresh_from_db()
    assert submission.state == "queued"
    assert submission.coverage == 1.0
    run = submission.current_run
    assert list(submission.runs.all()) == [run]
    assert run.total_queries == 3 * Criterion.objects.filter(item__benchmark=run.benchmark).count()
    assert RunBatch.objects.filter(run=run).count() == 1  # 6 items, 10 per batch
    assert set(run.outputs) == {i.key for i in run.benchmark.items.all()}
    assert all(f.startswith(f"submissions/{submission.id}/") for f in media_files())
    assert not any("/upload/archive/" in f for f in media_files())  # unpacked, then removed


def test_validation_runs_once(author, make_submission):
    submission = make_submission(author)
    assert submission_validate(submission.id) is True
    assert submission_validate(submission.id) is False
    assert ScoringRun.objects.count() == 1


def test_an_invalid_audio_file_rejects_keeps_no_files_and_costs_no_quota(author, make_submission,
                                                                       small_bench, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    sample_id = small_bench["samples"][0]["id"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"systems/sys/{sample_id}.wav", b"RIFF....WAVE not audio")
    submission = make_submission(author, archive=buffer.getvalue())
    submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.state == "rejected"
    assert submission.report["errors"] == [
        f"submission.jsonl line 1 (id {sample_id}): systems/sys/{sample_id}.wav: not readable "
        "as WAV or FLAC audio (Error in WAV file. No 'data' chunk marker.)"]
    assert media_files() == []
    assert submission.current_run is None and ScoringRun.objects.count() == 0
    assert quota_left(author)["today"] == 1
    make_submission(author)  # the quota still allows one


def test_a_predictions_file_with_unknown_ids_is_refused_and_nothing_is_stored(author,
                                                                            make_submission):
    with pytest.raises(ServiceError) as info:
        make_submission(author, predictions=b'{"id": "nope", "audio_path": "a.wav"}\n')
    assert info.value.problems == [
        "submission.jsonl line 1: unknown id 'nope' (not in the benchmark)"]
    assert Submission.objects.count() == ModelEntry.objects.count() == 0
    assert media_files() == []


def test_a_predictions_file_with_bad_json_is_refused_naming_the_line(author, make_submission):
    with pytest.raises(ServiceError) as info:
        make_submission(author, predictions=b'{"id": "x"\n')
    assert info.value.problems[0].startswith("submission.jsonl line 1: invalid JSON")
    assert Submission.objects.count() == 0


def test_the_daily_quota_refuses_and_says_so(author, make_submission, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    first = make_submission(author)
    created = (timezone.now() - timedelta(hours=1)).replace(microsecond=250_000)
    Submission.objects.filter(pk=first.pk).update(created_at=created)
    with pytest.raises(ServiceError) as info:
        make_submission(author)
    assert info.value.code == "quota"
    again = created + timedelta(days=1, microseconds=750_000)  # to the next whole second
    assert info.value.problems == ["daily quota reached: 1 submissions in 24 hours; the next "
                                   f"upload is possible at {again:%Y-%m-%d %H:%M:%S} UTC"]
    assert Submission.objects.count() == 1


def test_the_in_flight_quota_counts_unfinished_submissions(author, make_submission, settings):
    settings.SUBMISSIONS_IN_FLIGHT = 1
    first = make_submission(author)
    with pytest.raises(ServiceError, match="still being scored"):
        make_submission(author)
    submission_validate(first.id)
    ScoringRun.objects.update(status=ScoringRun.Status.FINISHED)
    make_submission(author)


def test_a_run_that_failed_on_our_side_costs_no_quota(author, make_submission, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    first = make_submission(author)
    submission_validate(first.id)
    ScoringRun.objects.update(status=ScoringRun.Status.FAILED, error="judge broke")
    assert quota_left(author)["today"] == 1


def test_missing_outputs_make_a_partial_submission(author, make_submission, small_bench):
    lines = small_bench["jsonl"].decode().splitlines()[:4]
    submission = make_submission(author, predictions=("\n".join(lines) + "\n").encode())
    submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.state == "queued"
    assert submission.coverage == pytest.approx(4 / 6) and submission.partial
    assert set(submission.report["missing"]) == {s["id"] for s in small_bench["samples"][4:]}
    assert len(submission.current_run.outputs) == 4


def test_a_validation_the_broker_drops_after_the_check_is_left_to_the_sweep(
        author, make_submission, monkeypatch, django_capture_on_commit_callbacks):
    """The broker answered broker_check, then failed: the upload stays whole and the sweep
    queues its validation later."""
    def broker_gone(*args):
        raise OperationalError("Error 111 connecting to redis: Connection refused.")

    # The queuing itself, which the task base does once the upload's transaction commits.
    monkeypatch.setattr(celery.Task, "apply_async", broker_gone)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        submission = make_submission(author)
    assert len(callbacks) == 1
    submission.refresh_from_db()
    assert submission.status == "uploaded" and len(media_files()) == 2
    later = timezone.now() + timedelta(seconds=settings.SUBMISSION_VALIDATION_STALE_SECONDS + 1)
    assert validations_to_retry(now=later) == [submission.id]


def test_uploads_waiting_for_validation_are_queued_again_once_the_broker_lost_its_queues(
        author, make_submission, monkeypatch):
    """Their messages went with the broker's queues: they go again when a worker finds the
    broker emptied (config.celery.broker_emptied), not minutes later; one being validated stays
    with its worker."""
    from config.celery import broker_emptied
    from submissions import services

    waiting = make_submission(author)
    begun = make_submission(author)
    Submission.objects.filter(id=begun.id).update(status="validating",
                                                  heartbeat_at=timezone.now())
    sent = []
    monkeypatch.setattr(services.validate_submission, "delay", sent.append)
    broker_emptied.send(sender=None)
    assert sent == [waiting.id]


def test_a_validation_whose_worker_died_is_retried_within_minutes(author, make_submission):
    """The worker was killed mid-validation: its heartbeat stops, and once it is
    SUBMISSION_VALIDATION_STALE_SECONDS old (two minutes by default) the sweep hands the
    upload back and lists it; a live heartbeat keeps it where it is."""
    assert settings.SUBMISSION_VALIDATION_STALE_SECONDS <= 120
    submission = make_submission(author)
    now = timezone.now()
    Submission.objects.filter(id=submission.id).update(status="validating", heartbeat_at=now)
    stale = now + timedelta(seconds=settings.SUBMISSION_VALIDATION_STALE_SECONDS + 1)
    assert validations_to_retry(now=now) == []
    assert validations_to_retry(now=stale) == [submission.id]
    submission.refresh_from_db()
    assert submission.status == "uploaded"
    assert submission_validate(submission.id) is True
    submission.refresh_from_db()
    assert submission.state == "queued"


def test_a_validation_beats_while_it_runs(author, make_submission, monkeypatch, settings):
    """The heartbeat moves while the upload is checked."""
    import time

    from submissions import services

    settings.SUBMISSION_VALIDATION_HEARTBEAT_SECONDS = 0.05
    submission = make_submission(author)
    beats = []
    validate = services._validate

    def slow(sub):
        time.sleep(0.3)
        beats.append(Submission.objects.get(id=sub.id).heartbeat_at)
        validate(sub)

    monkeypatch.setattr(services, "_validate", slow)
    started = timezone.now()
    assert submission_validate(submission.id) is True
    assert beats[0] > started
