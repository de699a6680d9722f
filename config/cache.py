"""The default cache on Redis, which a Redis outage turns into a cache that keeps nothing.

Pages cache their bodies in it and every rate limit keeps its counters in it. When Redis
cannot be reached, each call answers as Django's DummyCache would: a read is a miss (the page
is rendered afresh), a write is dropped, and `add` succeeds, so a rate-limit counter starts
from nothing and lets the request through (fails open). Each failure is logged. Errors other
than an unreachable server (a bad command, a full memory) still raise.

A Redis that hangs (stopped, not refused) costs each call its socket timeout; so once a call
found it unreachable, this process answers every call as on an empty cache at once for
DOWN_SECONDS, then tries it again: a hung Redis costs a request at most one timeout, never
one per call.
"""

import logging
import threading
import time

from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
# How long a process takes a Redis it found unreachable for down, before trying it again.
DOWN_SECONDS = 5.0


# SET unless the key holds a greater integer (Django's RedisSerializer stores ints as such).
RAISE = """local now = redis.call('GET', KEYS[1])
if now and tonumber(now) > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1"""


# DEL the key only while it holds ARGV[1]: a claim is let go by its holder only, never by one
# whose claim lapsed and was taken by another.
RELEASE = """if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0"""


def release(store, key: str, token: int) -> None:
    """Delete `key` from `store` if it still holds `token` (an integer): in one step on Redis,
    by a read and a delete on a cache of one process."""
    if isinstance(store, FailSoftRedisCache):
        store.release(key, token)
    elif store.get(key) == token:
        store.delete(key)


class FailSoftRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._empty = DummyCache(server, params)

    # The server's health, per process and server (every cache of one LOCATION shares it).
    _down_until: dict[str, float] = {}
    _health = threading.Lock()
    clock = staticmethod(time.monotonic)

    def down(self) -> bool:
        """Whether this process found the server unreachable less than DOWN_SECONDS ago."""
        return self.clock() < self._down_until.get(self._server_key(), 0.0)

    def found_down(self) -> None:
        with self._health:
            self._down_until[self._server_key()] = self.clock() + DOWN_SECONDS

    def _server_key(self) -> str:
        return str(self._servers)

    def raise_to(self, key: str, value: int, timeout: int) -> None:
        """Set an integer `key` to `value` unless it holds a greater one, in one step
        (config.page_cache: two writers that read different board versions leave the greater),
        for `timeout` seconds."""
        self._script("raise_to", RAISE, key, int(value), int(timeout))

    def release(self, key: str, token: int) -> None:
        """Delete integer `key` if it holds `token`, in one step (config.cache.release)."""
        self._script("release", RELEASE, key, int(token))

    def _script(self, name: str, script: str, key: str, *args: int) -> None:
        """Run a Lua `script` on `key` and `args`, dropped (and logged) while the server is
        unreachable."""
        if self.down():
            return
        key = self.make_and_validate_key(key)
        try:
            self._cache.get_client(key, write=True).eval(script, 1, key, *args)
        except UNREACHABLE as exc:
            self.found_down()
            log.error("cache unreachable, %s dropped: %s", name, exc)


def _fail_soft(name: str):
    redis_method = getattr(RedisCache, name)

    def method(self, *args, **kwargs):
        if self.down():
            return getattr(self._empty, name)(*args, **kwargs)
        try:
            return redis_method(self, *args, **kwargs)
        except UNREACHABLE as exc:
            self.found_down()
            log.error("cache unreachable, %s answered as on an empty cache for %g s "
                      "(a page is rendered afresh, a rate limit lets the request through): %s",
                      name, DOWN_SECONDS, exc)
            return getattr(self._empty, name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


# Every operation RedisCache implements; the rest of BaseCache (get_or_set, decr, the async
# variants) is built on these.
for _name in ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many",
              "delete_many", "clear"):
    setattr(FailSoftRedisCache, _name, _fail_soft(_name))

