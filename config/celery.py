import logging
import os

from celery import Celery, Task
from celery.signals import worker_process_shutdown
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

log = logging.getLogger(__name__)


class TransactionAwareTask(Task):
    """A task that is queued only once the current database transaction commits, and not at
    all if it rolls back, so that no call site has to remember `transaction.on_commit` and a
    worker never looks for rows that are not there yet (as pretix's TransactionAwareTask).
    Outside a transaction it is queued at once.

    Queuing after a commit is robust: should the broker fail then, the error is logged and
    the committed rows wait for their periodic sweep (lost validations, batches and runs are
    all swept), instead of failing a request whose work is already stored."""

    def apply_async(self, *args, **kwargs):
        if not transaction.get_connection().in_atomic_block:
            return super().apply_async(*args, **kwargs)
        transaction.on_commit(lambda: super(TransactionAwareTask, self).apply_async(
            *args, **kwargs), robust=True)
        return None


# Tasks with a queue of their own, by name -> the setting naming the queue.
OWN_QUEUES = {"submissions.tasks.validate_submission": "SUBMISSION_VALIDATION_QUEUE"}


def route_task(name, args, kwargs, options, task=None, **kw):
    """CELERY_TASK_ROUTES: validation to SUBMISSION_VALIDATION_QUEUE (read when the task is
    sent, as every queue setting is); everything else to the queue its caller names, else the
    default queue."""
    setting = OWN_QUEUES.get(name)
    return {"queue": getattr(settings, setting)} if setting else None


app = Celery("mmae_board", task_cls=TransactionAwareTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_shutdown.connect
def _close_fleet_client(**kwargs) -> None:
    """A worker process keeps one judge fleet client between batches (judge.runner): close
    its connections and lease subscription when the process ends."""
    from judge.runner import fleet_runner

    fleet_runner.close()


class BrokerUnavailable(Exception):
    """Celery's broker cannot be reached: no work can be queued now."""

    retry_after = 60  # seconds; an outage of the broker is rarely shorter

    def __init__(self):
        super().__init__("uploads are paused: the queue that validates and scores them cannot "
                         "be reached. Nothing was stored; try again in a minute.")


def broker_check() -> None:
    """Raise BrokerUnavailable unless the broker answers now (one try, no retries, within
    its socket timeouts), so that a request about to queue work can refuse before it stores
    anything. A Redis broker is asked a PING: a hung one takes connections and answers none."""
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0)
            client = getattr(connection.default_channel, "client", None)
            if client is not None and hasattr(client, "ping"):
                client.ping()
    except (OperationalError, RedisError) as exc:
        log.error("Celery's broker cannot be reached: %s", exc)
        raise BrokerUnavailable() from exc
