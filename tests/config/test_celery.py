"""broker_check: a request about to queue work learns at once that the broker is down."""

import logging

import pytest

from config.celery import BrokerUnavailable, broker_check
from tests.conftest import BROKER, _use_broker, free_ports


@pytest.fixture
def broker():
    """Point Celery at a broker for one test; back to the in-memory one after."""
    yield _use_broker
    _use_broker("memory://")


def test_a_reachable_broker_passes(broker):
    broker(BROKER)
    broker_check()


def test_a_broker_where_nothing_listens_is_reported_and_logged(broker, caplog):
    broker(f"redis://127.0.0.1:{free_ports(1)[0]}/0")
    caplog.set_level(logging.ERROR, logger="config.celery")
    with pytest.raises(BrokerUnavailable, match="uploads are paused") as raised:
        broker_check()
    assert raised.value.retry_after == 60
    assert "Connection refused" in caplog.records[0].getMessage()
