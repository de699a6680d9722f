"""A client for a fleet of OpenAI-compatible judge servers (vLLM), in plain asyncio + httpx.

No Django here: the `score` command and the Celery workers share it.

Policy, in one place:
- each endpoint takes at most `concurrency` requests in flight: from this process, or with
  `leases` (judge.leases.RedisLeases) from every process sharing them; a query goes to the
  least-loaded healthy endpoint, preferring another one than the endpoint its previous attempt
  failed on; queries wait for a slot in the order they asked;
- a lease server that cannot be reached is an outage (judge.errors.LeaseError, a
  FleetUnavailable): no query goes out uncounted;
- request bodies are streamed (judge.body), and at most `max_inflight_bytes` of them are in
  flight at once; a body larger than that goes alone;
- transport errors, timeouts, 5xx and 408/429 are retried with exponential backoff and
  jitter, up to `max_attempts` attempts in all; a reply that cannot be parsed is asked again at
  most `unparseable_retries` times and one cut by `max_tokens` (finish_reason "length") at most
  once when sampling is greedy (temperature 0: the same request gives the same reply), else
  like a transport error;
- a query that ends without an answer is either the judge's own reply (`JudgeAnswer.lost` is
  False): refused (400), or unreadable and the same when asked again (the judge gives it
  deterministically), or LOST on our side: a transport error, timeout, 5xx or busy answer on
  its last attempt, or unreadable replies that differed (UNSTEADY: a misbehaving judge, not its
  verdict). A lost query is no vote: the caller asks it again later (scoring.query_loop);
- a 400 (or 413/422) is vLLM refusing the query's content (an audio longer than its encoder
  cache, too many audios, a context too long): the query ends at once as REFUSED with vLLM's
  own message, never retried;
- an endpoint that does not serve `model` (checked with `GET /v1/models` before the first
  query, `check`) or that answers 401/403/404/405 is misconfigured (a wrong model id, a missing
  or wrong API key, a wrong URL): it is taken out at once, like a down endpoint, and the query
  that met it goes elsewhere without spending an attempt: a misconfigured fleet delays queries,
  it never answers them;
- a 500 whose body is vLLM's error object (a request it could not process: an unreadable
  audio file, a URL it could not fetch) may be the query's content, not the server: it is
  asked once more on another endpoint, counting against neither; the same 500 (the same
  message) from another endpoint ends the query as REFUSED with vLLM's message, while an
  answer, or another error, from it counts the first 500 against its endpoint after all (a
  fleet of one endpoint counts it at once, as any 5xx);
- `failure_threshold` consecutive transport/5xx/timeout failures take an endpoint out; a down
  or misconfigured endpoint is then probed with `GET /v1/models` until it answers 200 listing
  `model`, and put back;
- an endpoint staff take out (`exclude`) gets no new queries until it is let back in;
- when every endpoint is out, queries wait for one to come back, for at most `down_wait`
  seconds from the moment the last one went out; then they raise FleetUnavailable naming each
  endpoint and its last error;
- audio is sent once per endpoint: an audio part with a `uuid` (vLLM's per-part id; the query
  loop gives each file's SHA-256) goes with its data to an endpoint that has not answered a
  query holding it, and as `{"type": ..., <type>: null, "uuid": ...}` to one that has (at most
  `audio_cache_bytes` of audio remembered per endpoint, least recently used forgotten first).
  A query waits for another one still sending any of its audio to the same endpoint, and the
  queries of a sample (sharing an audio) go to the endpoint the latest of them went to while
  it is healthy (waiting for a slot there outside the queue for slots, so holding up no
  other query, for at most HOME_WAIT_SECONDS, then taking any). vLLM's 400 "Cache miss ..."
  (it evicted the audio) is no answer and no fault:
  the query is sent again at once with every audio's data, without spending an attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import random
import ssl
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from judge.body import JsonBody
from judge.health import Endpoint, EndpointHealth, describe_error, error_message

if TYPE_CHECKING:
    from judge.leases import RedisLeases

log = logging.getLogger(__name__)

SIMULATOR_FINGERPRINT = "judge-simulator"

HOMES = 100_000  # audio whose endpoint is remembered (the latest)
# How long a query waits for a slot on the endpoint that holds its audio before it takes any.
HOME_WAIT_SECONDS = 5.0


@dataclass
class JudgeAnswer:
    value: Any = None  # what the parse callback returned; None when the query failed
    raw: str | None = None  # the reply text of the last attempt that got one
    error: str | None = None  # why the query failed, None on success
    error_kind: str = ""  # what kind of failure (ERROR_KINDS), "" on success
    endpoint: str | None = None  # base URL of the last attempt
    attempts: int = 0
    latency_ms: float | None = None  # of the last attempt
    simulated: bool = False  # the reply came from the judge simulator
    # What the query cost, over all its attempts: request bytes sent, audio items sent with
    # their data (and their data: URLs' characters) and by their uuid alone, cache misses,
    # the usage of the replies answered 200, and the time its attempts held a slot.
    bytes_sent: int = 0
    audio_sent: int = 0
    audio_bytes: int = 0
    audio_cached: int = 0
    cache_misses: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: int = 0  # attempts answered 200
    busy_ms: float = 0.0
    audio_seconds: float = 0.0  # the length of the query's audio (set by the query loop)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def lost(self) -> bool:
        """No answer, through a failure on our side (LOST_KINDS): to be asked again."""
        return self.error_kind in LOST_KINDS


@dataclass(eq=False)
class _Slot:
    endpoint: Endpoint
    lane: httpx.AsyncClient
    token: str | None  # the fleet-wide lease, when there are leases


# The kinds of failure a query can end with, as progress pages count them. REFUSED is the
# judge refusing the query's content (HTTP 400): not an answer, and counted apart.
TIMEOUT, SERVER, BUSY, REFUSED, UNPARSEABLE, CONNECTION, TRUNCATED, UNSTEADY = (
    "timeout", "server error", "busy", "refused request", "unparseable reply",
    "connection error", "truncated reply", "unsteady reply")
ERROR_KINDS = (TIMEOUT, SERVER, BUSY, REFUSED, UNPARSEABLE, CONNECTION, TRUNCATED, UNSTEADY)
# Failures on our side (the fleet's transport, a server failing, a judge whose unreadable
# replies change when asked again): no reply the judge stands by, so never a vote.
LOST_KINDS = (TIMEOUT, SERVER, BUSY, CONNECTION, UNSTEADY)
# HTTP statuses that say the endpoint is not set up for us, whatever we send.
MISCONFIGURED_STATUSES = (401, 403, 404, 405)
# vLLM closes a connection idle for VLLM_HTTP_TIMEOUT_KEEP_ALIVE (5 s): ours expire first, so a
# request never goes out on a connection the server is closing.
KEEPALIVE_EXPIRY = 3.0
# Every sampling field vLLM reads, so that neither vLLM's defaults nor the model's
# generation_config.json can change a verdict (judge configs store them in full).
SAMPLING_DEFAULTS = {"temperature": 0.0, "top_p": 1.0, "top_k": -1,
                     "repetition_penalty": 1.0, "max_tokens": 1024}


def full_sampling(sampling: dict | None) -> dict:
    """`sampling` with every field of SAMPLING_DEFAULTS it leaves out."""
    return {**SAMPLING_DEFAULTS, **(sampling or {})}


class _Retry(Exception):
    def __init__(self, error: str, *, kind: str, endpoint_fault: bool,
                 raw: str | None = None, content: bool = False):
        super().__init__(error)
        self.error, self.kind = error, kind
        self.endpoint_fault = endpoint_fault
        self.raw = raw
        self.content = content  # a 500 that may be the query's content (see the policy)


def _vllm_error(text: str) -> str | None:
    """The message of vLLM's error object ({"error": {"message": ...}}, or the older
    {"object": "error", "message": ...}), None for any other body (a proxy's page, nothing)."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error") if isinstance(body.get("error"), dict) else \
        body if body.get("object") == "error" else None
    message = error.get("message") if error else None
    return message if isinstance(message, str) and message else None


class _Fatal(Exception):
    def __init__(self, error: str, raw: str | None = None):
        super().__init__(error)
        self.error, self.kind = error, REFUSED
        self.raw = raw


class _CacheMiss(Exception):
    """vLLM no longer holds an audio sent by its uuid alone (its 400 "Cache miss ...")."""


# vLLM's words when a part gives a uuid whose item its multimodal processor cache no longer
# holds (vllm/multimodal/processing: "Cache miss for audio at index 0 but data is not
# provided.").
CACHE_MISS = "Cache miss for "


def audio_items(messages: list) -> dict[str, int]:
    """uuid -> size (its data: URL's characters) of each audio part of `messages` that
    carries its data and a uuid."""
    found = {}
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            if not isinstance(part, dict) or not isinstance(part.get("uuid"), str):
                continue
            kind = part.get("type")
            data = part.get(kind) if kind in ("audio_url", "input_audio") else None
            url = data.get("url") or data.get("data") if isinstance(data, dict) else None
            if isinstance(url, str):
                found[part["uuid"]] = len(url)
    return found


def by_uuid(messages: list, held: set[str]) -> list:
    """`messages` with each audio part whose uuid is in `held` sent by its uuid alone."""
    def part_of(part):
        if isinstance(part, dict) and part.get("uuid") in held:
            return {"type": part["type"], part["type"]: None, "uuid": part["uuid"]}
        return part

    return [{**m, "content": [part_of(p) for p in m["content"]]}
            if isinstance(m, dict) and isinstance(m.get("content"), list) else m
            for m in messages]


class _Misconfigured(Exception):
    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


class JudgeFleet(EndpointHealth):
    """Use as `async with JudgeFleet([...], model=...) as fleet: await fleet.ask(...)`."""

    def __init__(
        self,
        base_urls: list[str],
        *,
        model: str,
        api_key: str | None = None,
        concurrency: int = 32,
        timeout: float = 120.0,
        max_attempts: int = 5,
        sampling: dict | None = None,
        failure_threshold: int = 3,
        probe_interval: float = 1.0,
        probe_interval_max: float = 15.0,
        down_wait: float = 600.0,
        backoff_base: float = 0.5,
        backoff_max: float = 10.0,
        leases: RedisLeases | None = None,
        max_inflight_bytes: int = 256 * 2**20,
        unparseable_retries: int = 1,
        on_misconfigured: Callable[[str, str], None] | None = None,
        audio_cache_bytes: int = 2 * 2**30,
    ):
        if not base_urls:
            raise ValueError("the judge fleet needs at least one base URL")
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be at least 1")
        if max_inflight_bytes < 1:
            raise ValueError(f"max_inflight_bytes must be at least 1, got {max_inflight_bytes}")
        self.endpoints = [Endpoint(url.rstrip("/"), concurrency) for url in base_urls]
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.sampling = full_sampling(sampling)
        self.greedy = float(self.sampling["temperature"]) == 0.0
        self.unparseable_retries = unparseable_retries
        # Called (url, why) in the fleet's loop when an endpoint turns out misconfigured.
        self.on_misconfigured = on_misconfigured
        self._checked_at: float | None = None
        self.failure_threshold = failure_threshold
        self.probe_interval = probe_interval
        self.probe_interval_max = probe_interval_max
        self.down_wait = down_wait
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.leases = leases
        self.max_inflight_bytes = max_inflight_bytes
        # Audio remembered per endpoint (0: every audio always sent with its data): under
        # vLLM's own --mm-processor-cache-gb (4 GiB), so that its evictions are rare.
        self.audio_cache_bytes = audio_cache_bytes
        self._homes: OrderedDict = OrderedDict()  # an audio's uuid -> its latest endpoint
        self._turn: asyncio.Lock | None = None  # held by the one query looking for a slot
        self._queued = 0  # queries waiting for the turn
        self._spares: list[_Slot] = []  # leased in one go for the queries queued
        self._wake: asyncio.Event | None = None  # set when a slot may have freed
        self._version = 0  # counts those events, so a wake-up is never missed
        self._bytes_turn: asyncio.Lock | None = None  # held by the one query waiting for bytes
        self._bytes_freed: asyncio.Event | None = None
        self._inflight_bytes = 0
        self._client: httpx.AsyncClient | None = None  # for probes
        self._all_down_since: float | None = None

    @property
    def capacity(self) -> int:
        return sum(e.capacity for e in self.endpoints)

    async def __aenter__(self) -> JudgeFleet:
        self._turn, self._wake = asyncio.Lock(), asyncio.Event()
        self._bytes_turn, self._bytes_freed = asyncio.Lock(), asyncio.Event()
        # Each in-flight slot gets its own one-connection client (a "lane"): httpcore scans
        # every connection of a pool on each request, which made one shared pool of 64+
        # connections cost several milliseconds of CPU per query.
        options = {
            "headers": {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {},
            "timeout": httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
            "verify": ssl_context(any(e.base_url.startswith("https:") for e in self.endpoints)),
            # httpx reads the proxy variables for each client it builds (a millisecond or so,
            # for every lane of every batch): with none set, there is nothing to read.
            "trust_env": bool(urllib.request.getproxies()),
        }
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1,
                           keepalive_expiry=KEEPALIVE_EXPIRY)
        for endpoint in self.endpoints:
            endpoint.lanes = [httpx.AsyncClient(limits=one, **options)
                              for _ in range(endpoint.capacity)]
        self._client = httpx.AsyncClient(
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY), **options)
        if self.leases is not None:
            try:
                await self.leases.open(on_release=self._bump)
            except BaseException:
                await self._close_clients()
                raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        for endpoint in self.endpoints:
            if endpoint.probe_task is not None:
                endpoint.probe_task.cancel()
        if self.leases is not None:
            await self.leases.close()
        await self._close_clients()

    async def _close_clients(self) -> None:
        for endpoint in self.endpoints:
            for lane in endpoint.lanes:
                await lane.aclose()
        await self._client.aclose()

    # --- dispatch -----------------------------------------------------------------------

    def _bump(self) -> None:
        """Something changed that may let a waiting query through: a slot freed (here or,
        with leases, anywhere), an endpoint came back or was let back in."""
        self._version += 1
        self._wake.set()

    async def _acquire(self, avoid: Endpoint | None) -> _Slot:
        self._queued += 1
        try:
            await self._turn.acquire()
        finally:
            self._queued -= 1
        try:
            while True:
                if self._spares:
                    return self._spare(avoid)
                seen = self._version
                usable = [e for e in self.endpoints if e.healthy and not e.excluded]
                free = [e for e in usable if e.in_flight < e.capacity]
                timeout = None  # wait for a local release
                if free:
                    slots = await self._take(free, avoid, want=1 + self._queued)
                    if slots:
                        self._spares = slots[1:]
                        return slots[0]
                    timeout = self.leases.poll  # full elsewhere: wait for a release there
                elif not usable:
                    timeout = self._down_remaining()
                if self._version == seen:
                    self._wake.clear()
                    try:
                        async with asyncio.timeout(timeout):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
        finally:
            try:
                if not self._queued:  # taken for queries that gave up waiting
                    spares, self._spares = self._spares, []
                    for slot in spares:
                        await self._release(slot)
            finally:
                self._turn.release()

    async def _take(self, free: list[Endpoint], avoid: Endpoint | None,
                    want: int) -> list[_Slot]:
        """Slots on the least-loaded endpoints: one, or with leases up to `want` in one
        round trip (the others are for the queries queued behind this one)."""
        if self.leases is None:
            preferred = [e for e in free if e is not avoid] or free
            return [self._book(min(preferred, key=lambda e: (e.load, e.in_flight)), None)]
        rooms = [(e.base_url, e.capacity, e.capacity - e.in_flight) for e in free]
        taken = await self.leases.acquire(rooms, want=min(want, sum(r for *_, r in rooms)),
                                          avoid=avoid.base_url if avoid else None)
        # Queries of an audio's home take its slots outside the queue (_slot_at) while this
        # round trip is out: a lease whose endpoint has no room here any more goes back.
        by_url = {e.base_url: e for e in free}
        slots, extra = [], []
        for url, token in taken:
            endpoint = by_url[url]
            if endpoint.in_flight < endpoint.capacity:
                slots.append(self._book(endpoint, token))
            else:
                extra.append((url, token))
        for url, token in extra:
            await self.leases.release(url, token)
        return slots

    def _book(self, endpoint: Endpoint, token: str | None) -> _Slot:
        slot = _Slot(endpoint, endpoint.lanes.pop(), token)
        endpoint.in_flight += 1
        return slot

    def _spare(self, avoid: Endpoint | None) -> _Slot:
        """A slot taken for this query by the one before it, on another endpoint than
        `avoid` if there is one."""
        slot = next((s for s in self._spares if s.endpoint is not avoid), self._spares[0])
        self._spares.remove(slot)
        return slot


    @property
    def lease_errors(self) -> int:
        """Times the lease server could not be reached since the fleet opened (0 without
        leases): the leases, the channel and their connections are then in doubt."""
        return self.leases.errors if self.leases is not None else 0


    # --- is each endpoint serving our model? -------------------------------------------


    async def _release(self, slot: _Slot) -> None:
        try:
            if slot.token is not None:
                await self.leases.release(slot.endpoint.base_url, slot.token)
        finally:
            # The lane comes back once the lease is gone (a waiter that finds a free lane
            # finds the lease free too), and even if the release was cancelled.
            slot.endpoint.in_flight -= 1
            slot.endpoint.lanes.append(slot.lane)
            self._bump()

    @contextlib.asynccontextmanager
    async def _bytes_in_flight(self, size: int):
        """Hold `size` bytes of the budget, once they fit (queries get in in the order they
        asked; with nothing in flight, any body goes, so none waits forever)."""
        async with self._bytes_turn:
            while self._inflight_bytes and \
                    self._inflight_bytes + size > self.max_inflight_bytes:
                self._bytes_freed.clear()
                await self._bytes_freed.wait()
            self._inflight_bytes += size
        try:
            yield
        finally:
            self._inflight_bytes -= size
            self._bytes_freed.set()


    # --- one query ----------------------------------------------------------------------

    async def ask(self, messages: list[dict], parse: Callable[[str], Any]) -> JudgeAnswer:
        """Send one chat completion; `parse(text)` turns the reply into a value, or raises
        ValueError for a reply without a usable answer, which is then asked again (see the
        module's policy)."""
        answer = JudgeAnswer()
        avoid: Endpoint | None = None
        audio = audio_items(messages) if self.audio_cache_bytes else {}
        every = False  # send every audio with its data (after a cache miss)
        waited = False  # for another query sending its audio, once: never a loop of waits
        # Asking a greedy judge again gets the same reply: an unparseable or cut reply is
        # asked again only this many times (a transport error may still use every attempt).
        again = {UNPARSEABLE: self.unparseable_retries if self.greedy else self.max_attempts,
                 TRUNCATED: 1 if self.greedy else self.max_attempts}
        unreadable = None  # (kind, reply) of the last unreadable reply
        steady = False  # an unreadable reply came back the same when asked again
        suspect: Endpoint | None = None  # the endpoint of a 500 that may be the content's
        suspect_error, content_asked = "", False
        while answer.attempts < self.max_attempts:
            home = self._home(audio)
            if home is avoid:
                home = None
            slot = None
            if home is not None:
                if not every and not waited:
                    waited = True
                    await self._sent_first(home, audio)
                slot = await self._slot_at(home)
            if slot is None:
                slot = await self._acquire(avoid)
            endpoint = slot.endpoint
            for uuid in audio:
                self._homes[uuid] = endpoint
                self._homes.move_to_end(uuid)
            while len(self._homes) > HOMES:
                self._homes.popitem(last=False)
            if not every and not waited and any(u in endpoint.audio_sending for u in audio):
                # Another query set out with some of this audio to this endpoint while this
                # one waited for its slot (a lease is a round trip): the slot goes back, the
                # query waits for that one here (whatever `avoid` says of this endpoint, so
                # that it never spins without waiting), then asks again for a slot.
                waited = True
                await self._release(slot)
                await self._sent_first(endpoint, audio)
                continue
            held = set() if every else {u for u in audio if u in endpoint.audio}
            sending = {u: asyncio.Event() for u in audio
                       if u not in held and u not in endpoint.audio_sending}
            endpoint.audio_sending.update(sending)
            body = JsonBody({"model": self.model,
                             "messages": by_uuid(messages, held) if held else messages,
                             **self.sampling})
            answered = False
            try:
                async with self._bytes_in_flight(body.length):
                    answer.attempts += 1
                    answer.endpoint = endpoint.base_url
                    answer.bytes_sent += body.length
                    answer.audio_sent += len(audio) - len(held)
                    answer.audio_bytes += sum(n for u, n in audio.items() if u not in held)
                    answer.audio_cached += len(held)
                    started = time.monotonic()
                    try:
                        text, simulated, usage = await self._post(slot, body)
                        answered = True
                        answer.replies += 1
                        answer.prompt_tokens += usage.get("prompt_tokens") or 0
                        answer.completion_tokens += usage.get("completion_tokens") or 0
                        answer.latency_ms = (time.monotonic() - started) * 1000
                        answer.raw, answer.simulated = text, simulated
                        try:
                            answer.value = parse(text)
                        except ValueError as exc:
                            raise _Retry(f"unparseable reply: {exc}", kind=UNPARSEABLE,
                                         endpoint_fault=False) from None
                        endpoint.consecutive_failures = 0
                        endpoint.served += 1
                        answer.error, answer.error_kind = None, ""
                        if suspect is not None and suspect is not endpoint:
                            # Answered here: the 500 was its endpoint's, not the content's.
                            await self._mark_failure(suspect, suspect_error)
                        return answer
                    except _Retry as retry:
                        answer.latency_ms = (time.monotonic() - started) * 1000
                        answer.error, answer.error_kind = retry.error, retry.kind
                        if retry.raw is not None:
                            answer.raw = retry.raw
                        if suspect is not None:
                            if suspect is not endpoint and retry.content \
                                    and retry.error == suspect_error:
                                # Two endpoints failed it alike: the query's content.
                                answer.error = (f"the judge could not process the query on two "
                                                f"endpoints: {retry.error}")
                                answer.error_kind = REFUSED
                                return answer
                            await self._mark_failure(suspect, suspect_error)
                            suspect = None
                        if retry.content and not content_asked and len(self.endpoints) > 1:
                            suspect, suspect_error, content_asked = endpoint, retry.error, True
                        elif retry.content or retry.endpoint_fault:
                            await self._mark_failure(endpoint, retry.error)
                        if retry.kind in again:
                            if unreadable == (retry.kind, answer.raw):
                                steady = True  # the same reply asked again: the judge's own
                                break
                            unreadable = (retry.kind, answer.raw)
                            again[retry.kind] -= 1
                            if again[retry.kind] < 0:
                                break
                    except _Fatal as fatal:
                        answer.latency_ms = (time.monotonic() - started) * 1000
                        answer.error, answer.raw = fatal.error, fatal.raw
                        answer.error_kind = fatal.kind
                        return answer
                    except _Misconfigured as wrong:
                        # Not an answer and not the query's fault: the attempt is given back and
                        # the query waits for an endpoint that serves us.
                        answer.attempts -= 1
                        self._take_out_misconfigured(endpoint, wrong.error)
                        continue
                    except _CacheMiss:
                        # vLLM let the audio go: sent again at once with its data, no
                        # attempt spent and no fault of the endpoint.
                        answer.attempts -= 1
                        answer.cache_misses += 1
                        answer.audio_cached -= len(held)  # not held after all
                        self._audio_forget(endpoint, held)
                        every = True
                        continue
                    finally:
                        answer.busy_ms += (time.monotonic() - started) * 1000
            finally:
                for uuid, event in sending.items():
                    endpoint.audio_sending.pop(uuid, None)
                    event.set()
                if answered:  # it processed the query's audio: it holds it now
                    self._audio_keep(endpoint, audio)
                await self._release(slot)
            avoid = endpoint
            if answer.attempts < self.max_attempts:
                await asyncio.sleep(self._backoff(answer.attempts))
        answer.error = f"no valid answer after {answer.attempts} attempt(s); last: {answer.error}"
        if steady:
            answer.error += " (the same reply when asked again)"
        elif answer.error_kind in again:
            answer.error_kind = UNSTEADY
        return answer

    # --- audio sent once per endpoint -----------------------------------------------------

    def _home(self, audio: dict[str, int]) -> Endpoint | None:
        """The usable endpoint the latest query holding the largest of this audio went to
        (a sample's queries share its output, and some its inputs)."""
        for uuid in sorted(audio, key=audio.__getitem__, reverse=True):
            home = self._homes.get(uuid)
            if home is not None and home.healthy and not home.excluded:
                return home
        return None

    async def _sent_first(self, endpoint: Endpoint, audio: dict[str, int]) -> None:
        """Wait until no query is still sending any of `audio` to `endpoint` (at most the
        request timeout): then it holds them, or the wait was in vain and they go again."""
        deadline = time.monotonic() + self.timeout
        while (event := next((endpoint.audio_sending[u] for u in audio
                              if u in endpoint.audio_sending), None)) is not None:
            # Looked at again after each wait: a query woken with this one may have set out
            # with another of the audio meanwhile.
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await event.wait()

    async def _slot_at(self, endpoint: Endpoint) -> _Slot | None:
        """A slot on `endpoint`, waiting for one outside the queue for slots (so holding up no
        other query) while the endpoint is usable, for at most HOME_WAIT_SECONDS; None once it
        is not usable or the wait is over (the query then takes any endpoint's slot: its audio
        goes there too, but no query waits on one endpoint for good)."""
        deadline = time.monotonic() + HOME_WAIT_SECONDS
        while endpoint.healthy and not endpoint.excluded \
                and (left := deadline - time.monotonic()) > 0:
            spare = next((s for s in self._spares if s.endpoint is endpoint), None)
            if spare is not None:  # leased for the queries queued: this is one of them
                self._spares.remove(spare)
                return spare
            if endpoint.in_flight < endpoint.capacity:
                if self.leases is None:
                    return self._book(endpoint, None)
                taken = await self.leases.acquire([(
                    endpoint.base_url, endpoint.capacity, endpoint.capacity - endpoint.in_flight)])
                if taken and endpoint.in_flight < endpoint.capacity:
                    return self._book(endpoint, taken[0][1])
                for url, token in taken:  # the room went while the lease was asked for
                    await self.leases.release(url, token)
            self._wake.clear()  # (a waiter of _acquire compares versions, as it wakes)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(self.leases.poll, left) if self.leases
                                           else left):
                    await self._wake.wait()
        return None

    def _audio_keep(self, endpoint: Endpoint, audio: dict[str, int]) -> None:
        for uuid, size in audio.items():
            if uuid in endpoint.audio:
                endpoint.audio.move_to_end(uuid)
                continue
            endpoint.audio[uuid] = size
            endpoint.audio_size += size
        while endpoint.audio_size > self.audio_cache_bytes and endpoint.audio:
            endpoint.audio_size -= endpoint.audio.popitem(last=False)[1]

    @staticmethod
    def _audio_forget(endpoint: Endpoint, uuids: set[str]) -> None:
        for uuid in uuids:
            endpoint.audio_size -= endpoint.audio.pop(uuid, 0)

    async def _post(self, slot: _Slot, body: JsonBody) -> tuple[str, bool, dict]:
        try:
            response = await slot.lane.post(
                f"{slot.endpoint.base_url}/v1/chat/completions", content=body.stream(),
                headers=body.headers)
        except httpx.TimeoutException:
            raise _Retry(f"timeout after {self.timeout:g} s", kind=TIMEOUT,
                         endpoint_fault=True) from None
        except httpx.HTTPError as exc:
            raise _Retry(describe_error(exc), kind=CONNECTION, endpoint_fault=True) from None
        status = response.status_code
        if status == 500 and (message := _vllm_error(response.text)) is not None:
            raise _Retry(f"HTTP 500: {message[:200]}", kind=SERVER, endpoint_fault=False,
                         raw=response.text[:2000], content=True)
        if status >= 500:
            raise _Retry(f"HTTP {status}: {response.text[:200]}", kind=SERVER,
                         endpoint_fault=True, raw=response.text[:2000])
        if status in (408, 429):
            raise _Retry(f"HTTP {status} (busy)", kind=BUSY, endpoint_fault=False)
        if status in MISCONFIGURED_STATUSES:
            why = ("refuses our API key" if status in (401, 403) else "does not serve")
            raise _Misconfigured(f"{why}: HTTP {status} to a query: "
                                 f"{error_message(response.text)}")
        if status == 400 and (_vllm_error(response.text) or "").startswith(CACHE_MISS):
            raise _CacheMiss(_vllm_error(response.text))
        if status >= 400:
            raise _Fatal(f"the judge refused the query (HTTP {status}): "
                         f"{error_message(response.text)}", raw=response.text[:2000])
        try:
            reply = response.json()
            choice = reply["choices"][0]
            text = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            # The server's fault, not the judge's reply: lost like a 5xx if it persists.
            raise _Retry("malformed response: not an OpenAI chat completion", kind=SERVER,
                         endpoint_fault=True, raw=response.text[:2000]) from None
        text = text if isinstance(text, str) else ""
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            raise _Retry(f"truncated reply: cut at max_tokens={self.sampling['max_tokens']}",
                         kind=TRUNCATED, endpoint_fault=False, raw=text[:2000])
        simulated = (
            reply.get("system_fingerprint") == SIMULATOR_FINGERPRINT
            or response.headers.get("x-judge-simulator") is not None
        )
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return text, simulated, usage

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return delay * random.uniform(0.5, 1.0)

    def summary(self) -> list[dict]:
        return [
            {
                "endpoint": e.base_url,
                "healthy": e.healthy,
                "served": e.served,
                "failed_attempts": e.failed,
                "last_error": e.last_error,
            }
            for e in self.endpoints
        ]


@functools.cache
def ssl_context(trust_store: bool = True) -> ssl.SSLContext:
    """One context per process: building one loads the CA store (tens of milliseconds of
    CPU), and the pipeline opens a fleet client for every batch. A fleet of plain http
    endpoints gets one that loads no CA (so it trusts none): httpx wants a context for every
    client, and that fleet never uses it."""
    if trust_store:
        return ssl.create_default_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


