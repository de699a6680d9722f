"""Fleet-wide leases on judge endpoint slots, in Redis: a cap on the requests in flight to each
endpoint that holds across every worker process and machine sharing the Redis server.

No Django here, like judge.fleet.

- One sorted set per endpoint (`{prefix}:<base URL>`): members are lease tokens, scores their
  expiry in Redis server milliseconds (one clock for every machine).
- Acquiring is one Lua script: drop the endpoint sets' expired members, pick the least-loaded
  endpoint with room (any other than `avoid` first) and add a token. Two processes can never
  both take the last slot.
- A lease expires `ttl` seconds after it was taken or last renewed, so a killed worker's slots
  come back by themselves; a live holder renews its leases every `ttl / 3` seconds while its
  requests are in flight, however long they take.
- Releasing removes the token and publishes on `{prefix}:released`; every holder of a
  RedisLeases subscribes to it, so a waiter wakes as soon as a slot frees anywhere. An expired
  lease publishes nothing, and a message can be lost while a connection is re-established, so
  waiters also try again every `poll` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

from redis import asyncio as aioredis
from redis.exceptions import RedisError

from judge.errors import LeaseError

log = logging.getLogger(__name__)

# How long close() waits for its background tasks to end once cancelled: a Redis command cut
# by the cancellation may hold on to it (seen in CI: a renewal still awaited 90 s later), and
# a closing worker must not wait on it; the leases are then dropped all the same.
CLOSE_WAIT_SECONDS = 5.0

# KEYS: the endpoints' sets, in the caller's order. ARGV: ttl ms, index of the endpoint to
# avoid (0: none), each endpoint's cap, each endpoint's room (how many more the caller can
# send it), then one token per lease wanted. Each token goes to the least-loaded endpoint
# with room at that moment; returns the endpoint index of each lease taken (maybe none).
_ACQUIRE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local ttl = tonumber(ARGV[1])
local avoid = tonumber(ARGV[2])
local n = #KEYS
local counts, caps, rooms = {}, {}, {}
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  counts[i] = redis.call('ZCARD', key)
  caps[i] = tonumber(ARGV[2 + i])
  rooms[i] = tonumber(ARGV[2 + n + i])
end
local taken = {}
for t = 3 + 2 * n, #ARGV do
  local best, best_rank, best_load = 0, 0, 0
  for i = 1, n do
    if counts[i] < caps[i] and rooms[i] > 0 then
      local rank = (i == avoid) and 1 or 0
      local load = counts[i] / caps[i]
      if best == 0 or rank < best_rank or (rank == best_rank and (load < best_load
          or (load == best_load and counts[i] < counts[best]))) then
        best, best_rank, best_load = i, rank, load
      end
    end
  end
  if best == 0 then break end
  redis.call('ZADD', KEYS[best], now + ttl, ARGV[t])
  redis.call('PEXPIRE', KEYS[best], ttl)
  counts[best] = counts[best] + 1
  rooms[best] = rooms[best] - 1
  taken[#taken + 1] = best
end
return taken
"""

# KEYS[1]: an endpoint's set. ARGV: token, channel. Returns 1 when the lease was still held.
_RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], KEYS[1])
  return 1
end
return 0
"""

# KEYS[1]: an endpoint's set. ARGV: ttl ms, then tokens. Returns the tokens no longer held.
_RENEW = """
local clock = redis.call('TIME')
local expiry = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return lost
"""


class RedisLeases:
    """Slot leases shared by every process using the same Redis server and `prefix`.

    A JudgeFleet opens it on entry and closes it on exit; `on_release` (called on the event
    loop) tells the fleet that a slot may have freed somewhere. One instance serves one fleet
    at a time, and may be opened again for the next.
    """

    def __init__(self, url: str, *, ttl: float = 30.0, prefix: str = "judge:leases",
                 poll: float = 1.0):
        if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"lease server {url!r}: give a redis://, rediss:// or unix:// URL")
        if ttl <= 0 or poll <= 0:
            raise ValueError(f"lease ttl and poll must be above 0 (got ttl={ttl}, poll={poll})")
        self.url = url
        self.ttl = ttl
        self.prefix = prefix
        self.poll = poll
        self.channel = f"{{{prefix}}}:released"
        self.round_trips = 0  # script calls sent, for benchmarks
        # Times the server could not be reached (a release, a renewal, the channel): a fleet
        # that sees it grow opens its client again (judge.fleet.JudgeFleet.lease_errors).
        self.errors = 0
        self._client: aioredis.Redis | None = None
        self._held: dict[str, set[str]] = {}  # key -> tokens this instance holds
        self._releasing: set[tuple[str, str]] = set()  # (key, token) being released
        self._tasks: list[asyncio.Task] = []
        self._acquire = self._release = self._renew = None
        self._holder = ""  # host:pid in every token, so a look at a set says who holds it

    def __repr__(self) -> str:
        return f"RedisLeases({self.server!r}, ttl={self.ttl:g}, prefix={self.prefix!r})"

    @property
    def server(self) -> str:
        """The server's address without credentials, for messages."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}" \
               f"{parts.path}"

    def key(self, base_url: str) -> str:
        # The braces are a Redis Cluster hash tag: every set of a prefix lives on one shard,
        # so the acquire script may touch them all.
        return f"{{{self.prefix}}}:{base_url}"

    async def open(self, on_release: Callable[[], None]) -> None:
        self._holder = f"{socket.gethostname()}:{os.getpid()}"
        self._client = aioredis.Redis.from_url(self.url, socket_connect_timeout=10,
                                               socket_timeout=30)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._release = self._client.register_script(_RELEASE)
        self._renew = self._client.register_script(_RENEW)
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.channel)
        except (RedisError, OSError) as exc:
            await pubsub.aclose()
            await self._client.aclose()
            raise self._error(exc) from None
        self._tasks = [asyncio.create_task(self._listen(pubsub, on_release)),
                       asyncio.create_task(self._renew_held())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=CLOSE_WAIT_SECONDS)
            if stuck:
                log.warning("%d judge slot lease task(s) on %s did not end within %g s of "
                            "being stopped; closing without them", len(stuck), self.server,
                            CLOSE_WAIT_SECONDS)
        self._tasks = []
        held = [(key, token) for key, tokens in self._held.items() for token in tokens]
        for key, token in held + list(self._releasing):  # left by cancelled queries
            await self._drop(key, token)
        self._held, self._releasing = {}, set()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def acquire(self, endpoints: list[tuple[str, int, int]], *, want: int = 1,
                      avoid: str | None = None) -> list[tuple[str, str]]:
        """Up to `want` leases, each on the least-loaded endpoint with room at that moment,
        one other than `avoid` while one has room. `endpoints` are (base URL, cap, room)
        triples: the cap holds for everyone, room is how many more the caller can send
        there. Returns (base URL, token) pairs: as many as there were free slots, maybe none.
        """
        tokens = [f"{self._holder}:{uuid.uuid4().hex[:12]}" for _ in range(want)]
        urls = [url for url, _, _ in endpoints]
        avoid_index = urls.index(avoid) + 1 if avoid in urls else 0
        try:
            self.round_trips += 1
            taken = await self._acquire(
                keys=[self.key(url) for url in urls],
                args=[int(self.ttl * 1000), avoid_index, *(cap for _, cap, _ in endpoints),
                      *(room for _, _, room in endpoints), *tokens])
        except (RedisError, OSError) as exc:
            self.errors += 1
            raise self._error(exc) from None
        leases = [(urls[int(index) - 1], token)
                  for index, token in zip(taken, tokens[:len(taken)], strict=True)]
        for url, token in leases:
            self._held.setdefault(self.key(url), set()).add(token)
        return leases

    async def release(self, base_url: str, token: str) -> None:
        key = self.key(base_url)
        self._held.get(key, set()).discard(token)
        self._releasing.add((key, token))  # until dropped: close() drops it if cut short
        await self._drop(key, token)
        self._releasing.discard((key, token))

    async def _drop(self, key: str, token: str) -> None:
        try:
            self.round_trips += 1
            await self._release(keys=[key], args=[token, self.channel])
        except (RedisError, OSError) as exc:
            # The lease then frees itself when it expires.
            self.errors += 1
            log.warning("cannot release a judge slot lease on %s (%s); it expires within "
                        "%g s", self.server, exc, self.ttl)

    async def count(self, base_url: str) -> int:
        """Leases currently held on an endpoint, by anyone (expired ones not counted)."""
        server_time = await self._client.time()
        now_ms = server_time[0] * 1000 + server_time[1] // 1000
        return await self._client.zcount(self.key(base_url), f"({now_ms}", "+inf")

    async def _listen(self, pubsub, on_release: Callable[[], None]) -> None:
        try:
            while True:
                try:
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            on_release()
                except (RedisError, OSError) as exc:
                    # redis-py subscribes again when it reconnects, at the next listen().
                    self.errors += 1
                    log.warning("lost the judge slot lease channel on %s (%s); waiters poll "
                                "every %g s until it is back", self.server, exc, self.poll)
                    await asyncio.sleep(self.poll)
        finally:
            await pubsub.aclose()

    async def _renew_held(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            for key, tokens in list(self._held.items()):
                if not tokens:
                    continue
                try:
                    self.round_trips += 1
                    lost = await self._renew(keys=[key], args=[int(self.ttl * 1000), *tokens])
                except (RedisError, OSError) as exc:
                    self.errors += 1
                    log.warning("cannot renew judge slot leases on %s (%s)", self.server, exc)
                    continue
                # A token released while the renewal was on its way is not lost: only one
                # still held is.
                lost = [t for t in (v.decode() for v in lost) if t in self._held.get(key, ())]
                if lost:
                    log.warning("%d judge slot lease(s) on %s expired before renewal (this "
                                "process stalled for over %g s); their requests go on over "
                                "the cap", len(lost), key, self.ttl)

    def _error(self, exc: Exception) -> LeaseError:
        return LeaseError(f"the judge slot leases on {self.server} cannot be reached: "
                          f"{type(exc).__name__}: {exc}")


def fleet_leases(redis_url: str, *, ttl: float, prefix: str = "judge:leases"
                 ) -> RedisLeases | None:
    """The lease backend for a deployment: leases in Redis when there is a Redis server, else
    None (the embedded default: each fleet caps only its own process's requests)."""
    return RedisLeases(redis_url, ttl=ttl, prefix=prefix) if redis_url else None
