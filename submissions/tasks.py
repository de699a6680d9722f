"""The periodic tasks of submissions: thin wrappers over its services. Validation's task is
beside its service (submissions.services.validate_submission), which queues it."""

import logging

from celery import shared_task

from config.celery import broker_emptied
from submissions import anonymity, embargo, notifications, rescoring, services, uploads

log = logging.getLogger(__name__)


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
def release_embargoes() -> None:
    """Periodic: publish the embargoed submissions whose date has come (submissions.embargo)
    and name the anonymous ones whose date has come (submissions.anonymity); one that breaks
    is logged and tried at the next sweep."""
    for submission_id in embargo.embargoes_due():
        try:
            embargo.embargo_release(submission_id)
        except Exception:
            log.exception("releasing the embargo of submission %s broke; the next sweep tries "
                          "again", submission_id)
    # And the anonymous entries whose date has come are named (submissions.anonymity).
    for submission_id in anonymity.reveals_due():
        try:
            anonymity.reveal(submission_id)
        except Exception:
            log.exception("revealing the anonymous submission %s broke; the next sweep tries "
                          "again", submission_id)


@shared_task(ignore_result=True)
def sweep_validations() -> None:
    """Periodic: validate again the uploads whose validation was lost with its worker, and
    retry the submissions that failed on our side once their backoff is over
    (services.failures_to_retry)."""
    for submission_id in services.validations_to_retry():
        services.validate_submission.delay(submission_id)
    for submission_id in services.failures_to_retry():
        try:
            if services.submission_retry(submission_id=submission_id, automatic=True):
                log.warning("submission %s failed on our side; retried", submission_id)
        except Exception:
            log.exception("retrying submission %s broke; the next sweep tries again",
                          submission_id)


@broker_emptied.connect
def revalidate_lost(**kwargs) -> None:
    """The broker lost its queues (config.celery.broker_emptied: a worker found it so when it
    connected again, or the scoring sweep did): every upload still waiting for its validation
    is queued again at once, rather than once SUBMISSION_VALIDATION_STALE_SECONDS have passed.
    A duplicate message is harmless: validation claims by a conditional UPDATE."""
    waiting = services.validations_waiting()
    for submission_id in waiting:
        services.validate_submission.delay(submission_id)
    if waiting:
        log.warning("the broker lost its queues: %s validation(s) queued again", len(waiting))


@shared_task(ignore_result=True)
def sweep_upload_temporaries() -> None:
    """Periodic: delete what web processes killed mid-upload left in FILE_UPLOAD_TEMP_DIR."""
    uploads.sweep_temporaries()
