import logging
import os
import socket
import threading
import time

from celery import Celery, Task, bootsteps
from celery.signals import worker_process_shutdown
from celery.utils.dispatch import Signal
from django.conf import settings
from django.db import connections, transaction
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery's Django fixup runs Django's system checks at each worker start, importing every
# URLconf and view, which a worker never serves: 0.3 s of CPU and 12 MB a worker (1,892 modules
# against 1,574; 2026-12-07). They check the code, not the machine (the project registers no
# checks of its own), and `manage.py check --deploy` runs them in CI and in the image.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

log = logging.getLogger(__name__)


class TransactionAwareTask(Task):
    """A task that is queued only once the current database transaction commits, and not at
    all if it rolls back, so that no call site has to remember `transaction.on_commit` and a
    worker never looks for rows that are not there yet (as pretix's TransactionAwareTask).
    Outside a transaction it is queued at once.

    Queuing after a commit is robust: should the broker fail then, the error is logged and
    the committed rows wait for their periodic sweep (lost validations, batches and runs are
    all swept), instead of failing a request whose work is already stored."""

    def apply_async(self, args=None, kwargs=None, **options):
        if not transaction.get_connection().in_atomic_block:
            return super().apply_async(args, kwargs, **options)
        transaction.on_commit(lambda: self._publish_committed(args, kwargs, options),
                              robust=True)
        return None

    def _publish_committed(self, args, kwargs, options) -> None:
        try:
            super().apply_async(args, kwargs, **options)
        except Exception:
            self.unpublished(args, kwargs)
            raise

    def unpublished(self, args, kwargs) -> None:
        """Called when this task's message, deferred to a commit, could not be published
        then (the error is logged next): a task whose rows can say so (a batch marked
        unsent, sent again when a worker connects) overrides it. Called outside any
        transaction."""


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


# A key the broker's Redis keeps for as long as it keeps its queues: gone, the queues went with
# it (a Redis restarted without persistence, or flushed), and so did every message in them.
BROKER_MARK = "mmae:broker-mark"

# Sent (in a worker or a periodic task) when the broker is found to have lost its queues; its
# receivers send again what was waiting in them (scoring.tasks: pending batches, aggregations).
broker_emptied = Signal(name="broker_emptied")
# Sent in a worker each time its consumer connects to a broker that kept its queues (at start,
# and again after the connection was lost): its receivers send what could not be published
# while the broker was unreachable (scoring.tasks: batches handed back meanwhile).
broker_connected = Signal(name="broker_connected")


def broker_emptied_check() -> bool:
    """Mark the broker, and True when it had lost its mark: it was emptied (restarted without
    persistence, flushed) or is new. Then broker_emptied is sent, so that what waited in its
    queues is sent again. One caller of many gets True for one loss (SET NX); a broker without
    Redis (the filesystem or memory transport) is never marked."""
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=0)
        client = getattr(connection.default_channel, "client", None)
        if client is None or not hasattr(client, "set"):
            return False
        if not client.set(BROKER_MARK, f"{socket.gethostname()} pid {os.getpid()} at "
                                        f"{time.time():.0f}", nx=True):
            return False
    log.warning("Celery's broker has no mark: it lost its queues (a Redis restarted without "
                "persistence, or flushed) or is new; sending again what waited in them")
    broker_emptied.send(sender=app)
    return True


def broker_emptied_noticed() -> bool:
    """broker_emptied_check, an error logged (and False): the next check tries again."""
    try:
        return broker_emptied_check()
    except Exception:
        log.exception("checking whether Celery's broker lost its queues broke")
        return False


def _check_in_thread() -> None:
    try:
        if not broker_emptied_noticed():
            broker_connected.send(sender=app)
    finally:
        connections.close_all()  # this thread's own


class BrokerMarkCheck(bootsteps.StartStopStep):
    """Each time a worker's consumer connects to the broker (at start, and again after the
    connection was lost: a Redis restart breaks it), check the broker's mark in a thread of
    its own, so that a queue lost with a restart is noticed then, not at the next sweep; a
    broker that kept its queues gets what could not be published meanwhile
    (broker_connected)."""

    requires = ("celery.worker.consumer.connection:Connection",)

    def start(self, c):
        threading.Thread(target=_check_in_thread, name="broker-mark-check",
                         daemon=True).start()


app.steps["consumer"].add(BrokerMarkCheck)
