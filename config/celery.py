import logging
import os

from celery import Celery
from kombu.exceptions import OperationalError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

log = logging.getLogger(__name__)

app = Celery("mmae_board")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class BrokerUnavailable(Exception):
    """Celery's broker cannot be reached: no work can be queued now."""

    retry_after = 60  # seconds; an outage of the broker is rarely shorter

    def __init__(self):
        super().__init__("uploads are paused: the queue that validates and scores them cannot "
                         "be reached. Nothing was stored; try again in a minute.")


def broker_check() -> None:
    """Raise BrokerUnavailable unless the broker answers now (one try, no retries), so that a
    request about to queue work can refuse before it stores anything."""
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0)
    except OperationalError as exc:
        log.error("Celery's broker cannot be reached: %s", exc)
        raise BrokerUnavailable() from exc
