"""The default cache on Redis, which a Redis outage turns into a cache that keeps nothing.

Pages cache their bodies in it and every rate limit keeps its counters in it. When Redis
cannot be reached, each call answers as Django's DummyCache would: a read is a miss (the page
is rendered afresh), a write is dropped, and `add` succeeds, so a rate-limit counter starts
from nothing and lets the request through (fails open). Each failure is logged. Errors other
than an unreachable server (a bad command, a full memory) still raise.
"""

import logging

from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


# SET unless the key holds a greater integer (Django's RedisSerializer stores ints as such).
RAISE = """local now = redis.call('GET', KEYS[1])
if now and tonumber(now) > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1"""


class FailSoftRedisCache(RedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._empty = DummyCache(server, params)

    def raise_to(self, key: str, value: int, timeout: int) -> None:
        """Set an integer `key` to `value` unless it holds a greater one, in one step
        (config.page_cache: two writers that read different board versions leave the greater),
        for `timeout` seconds."""
        key = self.make_and_validate_key(key)
        try:
            self._cache.get_client(key, write=True).eval(RAISE, 1, key, int(value),
                                                         int(timeout))
        except UNREACHABLE as exc:
            log.error("cache unreachable, raise_to dropped: %s", exc)


def _fail_soft(name: str):
    redis_method = getattr(RedisCache, name)

    def method(self, *args, **kwargs):
        try:
            return redis_method(self, *args, **kwargs)
        except UNREACHABLE as exc:
            log.error("cache unreachable, %s answered as on an empty cache "
                      "(a page is rendered afresh, a rate limit lets the request through): %s",
                      name, exc)
            return getattr(self._empty, name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    return method


# Every operation RedisCache implements; the rest of BaseCache (get_or_set, decr, the async
# variants) is built on these.
for _name in ("add", "get", "set", "touch", "delete", "get_many", "has_key", "incr", "set_many",
              "delete_many", "clear"):
    setattr(FailSoftRedisCache, _name, _fail_soft(_name))

