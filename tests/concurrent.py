"""Real concurrent clients: threads sending HTTP requests over loopback to a live server, all
released at once, as an attack from many connections is."""

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.core.cache import caches

from tests.conftest import BROKER


def at_once(send, count: int, *, clients: int = 16) -> list[httpx.Response]:
    """`send(client, i)` for i in range(count), from `clients` threads each with its own
    connection, started together; the responses in the order of i."""
    start = threading.Barrier(clients)
    local = threading.local()
    opened = []

    def one(i):
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=30)
            opened.append(local.client)
            start.wait(timeout=30)
        return send(local.client, i)

    try:
        with ThreadPoolExecutor(clients) as pool:
            return list(pool.map(one, range(count)))
    finally:
        for client in opened:  # the server's threads, and their database connections, end
            client.close()


def statuses(responses) -> Counter:
    return Counter(response.status_code for response in responses)


@pytest.fixture
def redis_cache(settings):
    """The default cache on Redis (config.cache, as in production), where every limiter
    keeps its counters; emptied first."""
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": BROKER}}
    caches["default"].clear()
    yield caches["default"]
    caches["default"].clear()
