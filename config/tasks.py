"""The base of the tasks that work on one row (in the manner of pretix's `EventTask`): the task
takes the row's id, finds the row (a row gone since the task was queued leaves nothing to do),
and states its retry policy once, as settings.

The policy: an exception the body raises is ours (the database, the disk, a bug; what an
author gets wrong is a state of the row, never an exception), so the task is retried
`retries` times with backoff, `retry_seconds` then 3 and 9 times that (`before_retry` first
puts the row back where a retry finds it); after that, `gave_up` turns the failure into the
row's state, said plainly to its owner and staff.
"""

from __future__ import annotations

import logging

from django.apps import apps
from django.conf import settings

from config.celery import TransactionAwareTask

log = logging.getLogger(__name__)


def retry_countdown(base: int, tries: int) -> int:
    """Seconds before try `tries` + 1 of a task retried with backoff: base, 3x, 9x..."""
    return base * 3**tries


class RowTask(TransactionAwareTask):
    """Queued once the transaction commits (TransactionAwareTask). Subclasses set `model`
    ("app_label.Model"), `retries` and `retry_seconds` (names of settings) and implement
    `gave_up`; the task's body gets the row."""

    abstract = True
    acks_late = True
    ignore_result = True
    model = ""
    retries = ""
    retry_seconds = ""

    def __call__(self, row_id: int, *args, **kwargs):
        row = apps.get_model(self.model).objects.filter(pk=row_id).first()
        if row is None:
            log.info("%s: %s %s is gone, nothing to do", self.name, self.model, row_id)
            return None
        try:
            return self.run(row, *args, **kwargs)
        except Exception as exc:
            tries = self.request.retries
            log.exception("%s of %s %s broke (try %s)", self.name, self.model, row_id, tries + 1)
            limit = getattr(settings, self.retries)
            if tries < limit:
                self.before_retry(row_id)
                raise self.retry(exc=exc, max_retries=limit, countdown=retry_countdown(
                    getattr(settings, self.retry_seconds), tries)) from exc
            self.gave_up(row_id, tries + 1, f"{type(exc).__name__}: {exc}")
            return None

    def before_retry(self, row_id: int) -> None:
        """Put the row back where a retry finds it (nothing by default)."""

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        """Turn the failure into the row's state (each subclass says how)."""
        raise NotImplementedError(f"{type(self).__name__} must say what giving up does")
