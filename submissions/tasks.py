"""Celery tasks of submissions: thin wrappers over submissions.services."""

import logging

from celery import shared_task
from django.conf import settings

from scoring.tasks import retry_countdown
from submissions import notifications, rescoring, services, uploads

log = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, ignore_result=True)
def validate_submission(self, submission_id: int) -> None:
    """Validate an upload. What the upload gets wrong is in the validation result (rejected,
    with the report); an exception is ours (the database, the disk, a bug): the submission
    goes back to uploaded and the task is retried SUBMISSION_VALIDATION_RETRIES times,
    SUBMISSION_VALIDATION_RETRY_SECONDS later, then 3 and 9 times that; then it fails on our
    side (files kept, staff alerted, author told) for the sweeper or staff to retry."""
    try:
        services.submission_validate(submission_id)
    except Exception as exc:
        tries = self.request.retries
        log.exception("validation of submission %s broke (try %s)", submission_id, tries + 1)
        why = f"{type(exc).__name__}: {exc}"
        if tries < settings.SUBMISSION_VALIDATION_RETRIES:
            _put_back(submission_id)
            raise self.retry(exc=exc, max_retries=settings.SUBMISSION_VALIDATION_RETRIES,
                             countdown=retry_countdown(
                                 settings.SUBMISSION_VALIDATION_RETRY_SECONDS, tries)) from exc
        services.submission_fail_validation(
            submission_id, f"validation broke {tries + 1} times; last error: {why}")


def _put_back(submission_id: int) -> None:
    """Back to uploaded before a retry; if even that fails (the database is down), the retry
    or the sweeper (a stale heartbeat) finds it."""
    try:
        services.submission_validation_broke(submission_id)
    except Exception:
        log.exception("submission %s could not be put back to uploaded", submission_id)


@shared_task(ignore_result=True)
def reconcile() -> None:
    """Periodic: each submission shows its latest run finished under its benchmark's current
    judge config (see rescoring.board_runs_reconcile)."""
    rescoring.board_runs_reconcile()


@shared_task(ignore_result=True)
def notify_authors() -> None:
    """Periodic: email the authors of submissions that finished, failed or were rejected.

    One email each: submission_notify claims it first. A failed send is logged and left for
    the next sweep.
    """
    for submission_id in notifications.submissions_to_notify():
        try:
            notifications.submission_notify(submission_id=submission_id)
        except Exception:
            log.exception("emailing the author of submission %s failed", submission_id)


@shared_task(ignore_result=True)
def sweep_validations() -> None:
    """Periodic: validate again the uploads whose validation was lost with its worker, and
    retry the submissions that failed on our side once their backoff is over
    (services.failures_to_retry)."""
    for submission_id in services.validations_to_retry():
        validate_submission.delay(submission_id)
    for submission_id in services.failures_to_retry():
        try:
            if services.submission_retry(submission_id=submission_id, automatic=True):
                log.warning("submission %s failed on our side; retried", submission_id)
        except Exception:
            log.exception("retrying submission %s broke; the next sweep tries again",
                          submission_id)


@shared_task(ignore_result=True)
def sweep_upload_temporaries() -> None:
    """Periodic: delete what web processes killed mid-upload left in FILE_UPLOAD_TEMP_DIR."""
    uploads.sweep_temporaries()
