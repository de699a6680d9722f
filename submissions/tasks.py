"""Celery tasks of submissions: thin wrappers over submissions.services."""

import logging

from celery import shared_task

from submissions import notifications, rescoring, services, uploads

log = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def validate_submission(submission_id: int) -> None:
    try:
        services.submission_validate(submission_id)
    except Exception as exc:
        log.exception("validation of submission %s broke", submission_id)
        services.submission_fail_validation(submission_id, f"{type(exc).__name__}: {exc}")


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
    """Periodic: validate again the uploads whose validation was lost with its worker."""
    for submission_id in services.validations_to_retry():
        validate_submission.delay(submission_id)


@shared_task(ignore_result=True)
def sweep_upload_temporaries() -> None:
    """Periodic: delete what web processes killed mid-upload left in FILE_UPLOAD_TEMP_DIR."""
    uploads.sweep_temporaries()
