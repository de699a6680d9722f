"""The judge fleet client a worker process keeps between batches (judge.runner)."""

import pytest

from judge.fleet import JudgeFleet
from judge.runner import FleetRunner


def make(url="http://127.0.0.1:9"):
    return lambda: JudgeFleet([url], model="judge", concurrency=2)


def test_the_same_key_gets_the_same_open_fleet():
    runner = FleetRunner()
    try:
        fleet = runner.fleet("a", make())
        assert runner.fleet("a", make()) is fleet and runner.opened == 1
        assert fleet._client is not None and not fleet._client.is_closed
    finally:
        runner.close()


def test_another_key_closes_the_old_fleet_and_opens_a_new_one():
    runner = FleetRunner()
    try:
        old = runner.fleet("a", make())
        new = runner.fleet("b", make("http://127.0.0.1:10"))
        assert new is not old and runner.opened == 2
        assert old._client.is_closed and not new._client.is_closed
    finally:
        runner.close()


def test_closing_at_shutdown_closes_the_fleet_and_stops_the_loop():
    runner = FleetRunner()
    fleet = runner.fleet("a", make())
    thread = runner._thread
    runner.close()
    assert fleet._client.is_closed and not thread.is_alive()
    runner.close()  # twice is harmless


def test_a_worker_process_closes_its_fleet_when_it_shuts_down(monkeypatch):
    from celery.signals import worker_process_shutdown

    from judge import runner

    closed = []
    monkeypatch.setattr(runner.fleet_runner, "close", lambda: closed.append(True))
    worker_process_shutdown.send(sender=None, pid=1, exitcode=0)
    assert closed == [True]


def test_a_coroutine_that_raises_raises_in_the_caller():
    runner = FleetRunner()

    async def broken():
        raise ValueError("no")

    try:
        with pytest.raises(ValueError, match="no"):
            runner.run(broken())
    finally:
        runner.close()
