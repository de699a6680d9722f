"""Celery: a task queued inside a transaction leaves only when it commits; a request about
to queue work learns at once that the broker is down (broker_check)."""

import logging
import os
import subprocess
import sys

import pytest
from celery import Task
from django.db import transaction

from config.celery import BrokerUnavailable, broker_check
from submissions.services import validate_submission
from tests.conftest import BROKER, ROOT, TIMEOUTS, _use_broker, free_ports


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(Task, "apply_async", lambda self, *args, **kwargs: calls.append(args))
    return calls


def test_a_task_queued_in_a_transaction_leaves_when_it_commits(transactional_db, sent):
    with transaction.atomic():
        validate_submission.delay(7)
        assert sent == []
    assert sent == [((7,), {})]


def test_a_task_queued_in_a_transaction_that_rolls_back_never_leaves(transactional_db, sent):
    with pytest.raises(RuntimeError), transaction.atomic():
        validate_submission.delay(7)
        raise RuntimeError("the upload failed")
    assert sent == []


def test_a_task_queued_outside_a_transaction_leaves_at_once(transactional_db, sent):
    validate_submission.delay(8)
    assert sent == [((8,), {})]


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


@pytest.mark.slow
def test_a_hung_broker_is_refused_within_its_timeouts(settings):
    """A Redis that takes connections and answers nothing (stopped, not refused): the check
    before an upload is stored says the queue cannot be reached within seconds, and so does
    queuing a task, instead of hanging the request."""
    import socket
    import time

    from config.celery import app

    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_timeout"] == TIMEOUTS["socket_timeout"]
    # The production options with their socket timeouts cut to a tenth, so that a wait on
    # them is told from a hang (a socket without a timeout waits forever) in a second.
    options = {**settings.CELERY_BROKER_TRANSPORT_OPTIONS,
               "socket_timeout": TIMEOUTS["socket_timeout"] / 10,
               "socket_connect_timeout": TIMEOUTS["socket_connect_timeout"] / 10}
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        _use_broker(f"redis://127.0.0.1:{server.getsockname()[1]}/0",
                    broker_transport_options=options)
        started = time.monotonic()
        with pytest.raises(BrokerUnavailable):
            broker_check()
        assert time.monotonic() - started < 12  # the socket timeouts, not forever
        started = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017 - kombu's or redis's, either way refused
            app.send_task("submissions.tasks.validate_submission", args=[0])
        assert time.monotonic() - started < 30  # one retry of the socket timeouts
    finally:
        _use_broker("memory://")
        server.close()


@pytest.mark.integration
def test_a_worker_loads_its_tasks_without_the_views():
    """What a worker imports at its start (its tasks, as `celery worker` does) leaves out the
    URLconf and the views it never serves: Django's system checks stay with the web."""
    code = ("from config.celery import app; import sys; app.loader.import_default_modules(); "
            "print(sorted(m for m in ('config.urls', 'challenges.organizer_views') "
            "if m in sys.modules))")
    environ = {k: v for k, v in os.environ.items() if k != "CELERY_SKIP_CHECKS"}
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"
