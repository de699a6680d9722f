"""A Redis that hangs (it takes connections and never answers, as a stopped one does) costs a
process one socket timeout, not one per cache call: after it, every call answers as on an empty
cache at once for config.cache.DOWN_SECONDS, then Redis is tried again."""

import socket
import time

import pytest
import redis.connection
from django.core.cache import caches

from config import cache as fail_soft

pytestmark = pytest.mark.slow


@pytest.fixture
def hung_redis(settings):
    """A TCP server that takes a connection and never says anything, as the default cache."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    port = server.getsockname()[1]
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 0.5}}}
    fail_soft.FailSoftRedisCache._down_until.clear()
    yield caches["default"]
    fail_soft.FailSoftRedisCache._down_until.clear()
    server.close()


def timed(call) -> tuple[object, float]:
    started = time.monotonic()
    found = call()
    return found, time.monotonic() - started


def test_a_hung_redis_costs_one_timeout_then_answers_at_once(hung_redis, monkeypatch):
    found, first = timed(lambda: hung_redis.get("k"))
    assert found is None and 0.4 < first < 3  # the socket timeout, once
    # Then Redis is not asked at all (counted, not timed: a loaded machine is slow at
    # anything): no command is sent, so none waits on the socket.
    sent = []
    send = redis.connection.AbstractConnection.send_packed_command
    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command",
                        lambda self, *args, **kwargs: sent.append(args) or send(self, *args,
                                                                                **kwargs))
    for call in (lambda: hung_redis.get("k"), lambda: hung_redis.set("k", 1),
                 lambda: hung_redis.add("n", 0), lambda: hung_redis.raise_to("v", 3, 60)):
        call()  # answered as on an empty cache
    assert sent == []
    later = time.monotonic() + fail_soft.DOWN_SECONDS + 1
    monkeypatch.setattr(fail_soft.FailSoftRedisCache, "clock", staticmethod(lambda: later))
    _, retried = timed(lambda: hung_redis.get("k"))
    assert retried > 0.4 and sent  # tried again once the time is up


def test_pages_with_a_hung_redis_wait_for_it_once(client, hung_redis, db, caplog):
    """A page asks the cache many times (its state, its body, its counters); with Redis hung,
    only the first call of the process waits for it (and is logged), until DOWN_SECONDS."""
    import logging

    from tests.factories import board_benchmark

    board_benchmark()
    caplog.set_level(logging.ERROR, logger="config.cache")
    for url in ("/b/mmae/", "/b/mmae/?dimension=modality", "/api/leaderboards/mmae/"):
        assert client.get(url).status_code in (200, 400)
    waited = [r for r in caplog.records if r.name == "config.cache"]
    assert len(waited) == 1 and "Timeout" in waited[0].getMessage()
