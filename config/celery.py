import os

from celery import Celery, Task
from django.db import transaction

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class TransactionAwareTask(Task):
    """A task that is queued only once the current database transaction commits, and not at
    all if it rolls back, so that no call site has to remember `transaction.on_commit` and a
    worker never looks for rows that are not there yet (as pretix's TransactionAwareTask).
    Outside a transaction it is queued at once."""

    def apply_async(self, *args, **kwargs):
        if not transaction.get_connection().in_atomic_block:
            return super().apply_async(*args, **kwargs)
        transaction.on_commit(lambda: super(TransactionAwareTask, self).apply_async(
            *args, **kwargs))
        return None


app = Celery("mmae_board", task_cls=TransactionAwareTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
