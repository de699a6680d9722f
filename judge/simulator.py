"""A judge simulator: a real HTTP server speaking the part of vLLM's OpenAI API the fleet uses.

It is NOT a model. It knows no benchmark: each benchmark kind gives it a reply function
(`SimulatorConfig.replies`; `scoring/kinds/<kind>/simulated.py`, gathered by the
`judge_simulator` command), which answers that kind's queries from a hash of the seed and the
input, so verdicts are deterministic for a seed and input, differ between systems, and carry no
information about quality. Every reply says so. A query no kind knows gets a reply with no
verdict in it.

Like vLLM, each port serves at most `slots` requests at once and queues the rest; a client that
disconnects cancels its request. Faults can be injected: HTTP 500s, unparseable replies and
replies slower than a client's timeout, and a port that dies after `die_after` completions;
unparseable replies come in two kinds: a misbehaving server's (`garbage_rate`, different each
time) and a judge's own for a share of queries (`unreadable_rate`, the same reply each time the
same request is asked).

It refuses what a vLLM 0.33 server of Qwen3-Omni started by launch_qwen3_omni.sh refuses, with
vLLM's status and error body (judge.requests; `make vllm-check` compares the two), a body that is
not `Content-Type: application/json` (400), and, with an API key, a request without it on every
path but GET /health and /ping (401 `{"error": "Unauthorized"}`, the launch script's guard);
it cuts a reply at `max_tokens` (finish_reason "length"). As `vllm serve`, it answers chat
completions at POST /invocations too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import secrets
import string
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from judge import limits
from judge.fleet import SIMULATOR_FINGERPRINT
from judge.requests import (
    AUDIO_PARTS,
    CHARS_PER_TOKEN,
    MAX_MODEL_LEN,
    Checked,
    Refusal,
    audio_seconds,
    check_request,
    prompt_tokens,
    tokens,
)

DEFAULT_MODEL = "Qwen3-Omni-30B-A3B-Instruct"


NOTICE = "judge simulator: not a real model; verdicts are hashes of the input, not judgments"


# The paths the launch script's guard leaves open (GET and HEAD only).
OPEN_PATHS = ("/health", "/ping")


KEEPALIVE_SECONDS = 5.0  # vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE default


DEFAULT_MAX_AUDIO_SECONDS = limits.longest_audio_seconds(limits.DEFAULT_BATCHED_TOKENS)


# A misbehaving server's replies (--garbage-rate): each different, as a judge that is not
# reading its input gives; `noise` is letters, so that no kind reads a verdict in it.
_GARBAGE = (
    "I listened carefully, and the answer is probably the second option ({noise}).",
    '{{"reason": "The output audio contains {noise}',
    '{{"reason": "simulated garbage {noise}", "choice": "maybe"}}',
    "{noise}",
)
# The reply a judge gives, every time, to a query it cannot answer in the form asked
# (--unreadable-rate): deterministic, as a real judge at temperature 0 is.
UNREADABLE = "I cannot answer this question from the audio given."


@dataclass
class SimulatorConfig:
    latency_ms: float = 200.0
    slots: int = 32
    fail_rate: float = 0.0
    garbage_rate: float = 0.0
    unreadable_rate: float = 0.0  # share of queries (by a hash of the request) always unreadable
    slow_rate: float = 0.0
    slow_ms: float = 30000.0
    seed: int = 0
    model: str = DEFAULT_MODEL
    noise: float = 0.1  # share of queries answered off the system's usual pick
    # keep (question, choices as presented, letter) of every answer for /simulator/stats
    record: bool = False
    api_key: str = ""  # when set, /v1/* wants `Authorization: Bearer <api_key>`, as vLLM
    max_audio_seconds: float = DEFAULT_MAX_AUDIO_SECONDS  # longest audio item taken
    max_audios: int = limits.DEFAULT_MAX_AUDIOS  # --limit-mm-per-prompt's audio count
    # vLLM 0.33's audio limits as the launch script sets them by default (judge/limits.py)
    max_audio_file_mb: int = limits.DEFAULT_AUDIO_LIMITS["VLLM_MAX_AUDIO_CLIP_FILESIZE_MB"]
    max_audio_decode_seconds: int = limits.DEFAULT_AUDIO_LIMITS[
        "VLLM_MAX_AUDIO_DECODE_DURATION_S"]
    max_audio_decode_bytes: int = limits.DEFAULT_AUDIO_LIMITS["VLLM_MAX_AUDIO_DECODE_BYTES"]
    max_model_len: int = MAX_MODEL_LEN  # --max-model-len
    # Audio that is not a readable sound file (a test's placeholder bytes) is refused, as vLLM
    # does, only when this is set; otherwise it is passed unmeasured.
    refuse_unreadable_audio: bool = False
    # vLLM's multimodal processor cache (--mm-processor-cache-gb, 4 GiB by default), by the
    # bytes of the data: URLs it holds: audio sent with a uuid is kept under it, least
    # recently used first out, and a later request may send the uuid alone (0: none kept).
    audio_cache_mb: float = 4096.0
    die_after: int | None = None  # chat completions a port serves before its engine dies
    keepalive_seconds: float = KEEPALIVE_SECONDS
    # What answers a query: each benchmark kind's simulated reply, (body, config) -> (content,
    # what /simulator/stats records) or None for a query that is not its own.
    replies: tuple[Callable[[dict, SimulatorConfig], tuple[str, list] | None], ...] = ()

    def __post_init__(self):
        for name in ("fail_rate", "garbage_rate", "unreadable_rate", "slow_rate", "noise"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.slots < 1:
            raise ValueError(f"slots must be at least 1, got {self.slots}")
        if self.latency_ms < 0 or self.slow_ms < 0:
            raise ValueError("latencies cannot be negative")
        if self.max_audio_seconds < limits.MIN_AUDIO_SECONDS:
            raise ValueError(f"max_audio_seconds must be at least {limits.MIN_AUDIO_SECONDS}, "
                             f"got {self.max_audio_seconds}")
        if self.audio_cache_mb < 0:
            raise ValueError(f"audio_cache_mb cannot be negative, got {self.audio_cache_mb}")
        for name in ("max_audio_file_mb", "max_audio_decode_seconds", "max_audio_decode_bytes",
                     "max_model_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_audios < 0:
            raise ValueError(f"max_audios cannot be negative, got {self.max_audios}")
        if self.die_after is not None and self.die_after < 0:
            raise ValueError(f"die_after cannot be negative, got {self.die_after}")
        if self.keepalive_seconds <= 0:
            raise ValueError(f"keepalive_seconds must be positive, got {self.keepalive_seconds}")


class AudioCache:
    """vLLM's multimodal processor cache, as the simulator keeps it: uuid -> the data: URL
    sent under it, at most `max_bytes` of URLs, the least recently used evicted first."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.items: OrderedDict[str, str] = OrderedDict()
        self.size = 0

    def get(self, uuid: str) -> str | None:
        url = self.items.get(uuid)
        if url is not None:
            self.items.move_to_end(uuid)
        return url

    def put(self, uuid: str, url: str) -> None:
        if uuid in self.items:
            self.size -= len(self.items.pop(uuid))
        if len(url) > self.max_bytes:
            return
        self.items[uuid] = url
        self.size += len(url)
        while self.size > self.max_bytes:
            _, evicted = self.items.popitem(last=False)
            self.size -= len(evicted)


@dataclass(eq=False)
class PortState:
    port: int
    config: SimulatorConfig
    slots: asyncio.Semaphore = field(init=False)
    rng: random.Random = field(init=False)
    counts: dict = field(default_factory=lambda: {
        "completions": 0, "ok": 0, "failed": 0, "garbage": 0, "unreadable": 0, "slow": 0,
        "cancelled": 0,
        "models": 0, "in_progress": 0, "waiting": 0, "peak_in_progress": 0, "refused": 0,
        # audio items that came with their data (and the data: URLs' characters), in any
        # request; items sent by their uuid alone and found in the cache; requests refused
        # for one it did not hold (vLLM's cache miss)
        "audio_sent": 0, "audio_bytes": 0, "audio_cached": 0, "audio_cache_misses": 0,
        # of the completions answered 200: the usage they reported
        "prompt_tokens": 0, "completion_tokens": 0, "audio_seconds": 0.0,
    })
    queries: list = field(default_factory=list)  # (question, choices) of each answered query
    # How busy the slots were, for benchmarks and tests (Unix times, comparable across the
    # processes of one machine): when a slot was first taken, when every slot first was, and
    # the integral of slots busy over time.
    first_busy_at: float | None = None
    all_busy_at: float | None = None
    last_freed_at: float | None = None
    busy_slot_seconds: float = 0.0
    _changed_at: float = field(default=0.0, repr=False)
    died: asyncio.Event = field(init=False)  # set when the port's engine dies (die_after)
    audio_cache: AudioCache = field(init=False)

    def __post_init__(self):
        self.audio_cache = AudioCache(int(self.config.audio_cache_mb * limits.MiB))
        self.slots = asyncio.Semaphore(self.config.slots)
        self.rng = random.Random(f"{self.config.seed}:{self.port}")
        self.died = asyncio.Event()

    def _account(self, change: int) -> None:
        now = time.time()
        running = self.counts["in_progress"]
        if running:
            self.busy_slot_seconds += running * (now - self._changed_at)
        self._changed_at = now
        running += change
        self.counts["in_progress"] = running
        self.counts["peak_in_progress"] = max(self.counts["peak_in_progress"], running)
        if self.first_busy_at is None:
            self.first_busy_at = now
        if running == self.config.slots and self.all_busy_at is None:
            self.all_busy_at = now
        if change < 0:
            self.last_freed_at = now

    def slot_taken(self) -> None:
        self._account(+1)

    def slot_freed(self) -> None:
        self._account(-1)

    def load(self) -> dict:
        """The load figures of /simulator/stats, the busy time counted up to now."""
        now = time.time()
        busy = self.busy_slot_seconds + self.counts["in_progress"] * (now - self._changed_at)
        return {"slots": self.config.slots, "first_busy_at": self.first_busy_at,
                "all_busy_at": self.all_busy_at, "last_freed_at": self.last_freed_at,
                "busy_slot_seconds": busy, "now": now}


def reply(body: dict, config: SimulatorConfig) -> tuple[str, list | None]:
    """(content, what to record) of the first of the config's replies that knows the query;
    a reply with no verdict in it when none does."""
    for simulated in config.replies:
        found = simulated(body, config)
        if found is not None:
            return found
    return json.dumps({"reason": f"{NOTICE}; no simulated reply for this query",
                       "choice": None}), None


def request_share(body: dict, seed: int) -> float:
    """A number in [0, 1) from the request's messages and the seed: the same for the same
    request, so a query chosen by it is chosen every time it is asked."""
    digest = hashlib.sha256(f"{seed}:".encode()
                            + json.dumps(body.get("messages"), sort_keys=True).encode())
    return int.from_bytes(digest.digest()[:8], "big") / 2**64


def _count_audio_received(body, state: PortState) -> None:
    """Count the audio items that came with their data, and the data's characters, of any
    request (one refused too: its bytes were sent all the same)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            data = part.get(part.get("type")) if isinstance(part, dict) \
                and part.get("type") in AUDIO_PARTS else None
            url = (data.get("url") or data.get("data")) if isinstance(data, dict) else data
            if isinstance(url, str) and url:
                state.counts["audio_sent"] += 1
                state.counts["audio_bytes"] += len(url)


def _with_cached_audio(body: dict, checked: Checked, state: PortState) -> dict:
    """The body as the kinds' replies read it, each audio part sent by its uuid alone given
    the data: URL the cache holds; audio sent with a uuid kept in the cache (as vLLM's
    processor keeps what it processed). Counts the items found by their uuid."""
    resolved = iter(checked.audio)
    messages = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            messages.append(message)
            continue
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in AUDIO_PARTS:
                uuid, url, sent = next(resolved)
                if sent:  # with its data
                    if uuid is not None:
                        state.audio_cache.put(uuid, url)
                else:
                    state.counts["audio_cached"] += 1
                    part = {"type": "audio_url", "audio_url": {"url": url}, "uuid": uuid}
            parts.append(part)
        messages.append({**message, "content": parts})
    return {**body, "messages": messages}


def _seconds(url: str) -> float:
    """An audio's length from its header (0 for one that is no readable sound file)."""
    try:
        return audio_seconds(url)
    except ValueError:
        return 0.0


def _completion(content: str, checked: Checked, config: SimulatorConfig, number: int) -> dict:
    finish = "stop"
    if checked.max_tokens is not None and tokens(content) > checked.max_tokens:
        content, finish = content[:checked.max_tokens * CHARS_PER_TOKEN], "length"
    prompt = prompt_tokens(checked.text_chars, checked.audio_tokens)
    return {
        "id": f"chatcmpl-simulator-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": config.model,
        "system_fingerprint": SIMULATOR_FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": tokens(content),
                  "total_tokens": prompt + tokens(content), "prompt_tokens_details": None},
        "simulator": NOTICE,
    }


def _error(status: int, message: str, kind: str = "BadRequestError",
           param: str | None = None) -> web.Response:
    """vLLM's ErrorResponse, with the simulator's notice beside it."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": status},
            "simulator": NOTICE}
    return web.json_response(body, status=status)


def metrics_text(state: PortState) -> str:
    """The load gauges of vLLM's Prometheus metrics, with the port's real counts."""
    labels = f'engine="0",model_name="{state.config.model}"'
    lines = []
    for name, help_text, value in (
        ("vllm:num_requests_running", "Number of requests in model execution batches.",
         state.counts["in_progress"]),
        ("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
         state.counts["waiting"]),
        ("judge_simulator:peak_requests_running",
         "Most requests in progress at once since the simulator started (not a vLLM metric).",
         state.counts["peak_in_progress"]),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge",
                  f"{name}{{{labels}}} {float(value)}"]
    return "\n".join(lines) + "\n"


def make_app(state: PortState) -> web.Application:
    config = state.config

    async def models(request: web.Request) -> web.Response:
        state.counts["models"] += 1
        data = {
            "object": "list",
            "data": [{"id": config.model, "object": "model", "owned_by": SIMULATOR_FINGERPRINT,
                      "root": config.model, "max_model_len": config.max_model_len}],
            "simulator": NOTICE,
        }
        return web.json_response(data)

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="")

    async def stats(request: web.Request) -> web.Response:
        return web.json_response({"port": state.port, **state.counts, **state.load(),
                                  "queries": state.queries, "simulator": NOTICE})

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=metrics_text(state), content_type="text/plain")

    async def completions(request: web.Request) -> web.StreamResponse:
        if state.died.is_set() or state.counts["completions"] == config.die_after:
            return await _die(request)
        if request.content_type != "application/json":  # vLLM's validate_json_request
            state.counts["refused"] += 1
            return _error(400, "1 validation error:\n  Unsupported Media Type: Only "
                          "'application/json' is allowed", "Bad Request")
        try:
            body = await request.json()
        except ValueError as exc:  # in the words of vLLM's RequestValidationError handler
            state.counts["refused"] += 1
            pos, problem = getattr(exc, "pos", 0), getattr(exc, "msg", str(exc))
            return _error(400, "1 validation error:\n  {'type': 'json_invalid', 'loc': "
                          f"'body.{pos}', 'msg': 'JSON decode error', 'input': "
                          f"'<dict of 0 items>', 'ctx': {{'error': {problem!r}}}}}",
                          "Bad Request", param=f"body.{pos}")
        _count_audio_received(body, state)
        try:
            checked = check_request(body, config, state.audio_cache)
        except Refusal as refusal:
            state.counts["refused"] += 1
            state.counts["audio_cache_misses"] += refusal.message.startswith("Cache miss")
            return _error(refusal.status, refusal.message, refusal.kind, refusal.param)
        body = _with_cached_audio(body, checked, state)
        state.counts["waiting"] += 1
        queued = True
        try:
            async with state.slots:
                state.counts["waiting"] -= 1
                queued = False
                state.slot_taken()
                try:
                    return await _serve(body, checked)
                finally:
                    state.slot_freed()
        except asyncio.CancelledError:
            state.counts["cancelled"] += 1
            if queued:  # the client left before a slot freed
                state.counts["waiting"] -= 1
            raise

    async def _die(request: web.Request) -> web.StreamResponse:
        """What vLLM answers once its engine is dead (EngineDeadError): an empty 500, after
        which the server stops listening."""
        response = web.Response(status=500)
        await response.prepare(request)
        await response.write_eof()
        state.died.set()
        return response

    async def _serve(body: dict, checked: Checked) -> web.Response:
        state.counts["completions"] += 1
        number = state.counts["completions"]
        roll = state.rng.random()
        if roll < config.fail_rate:
            state.counts["failed"] += 1
            await asyncio.sleep(config.latency_ms / 4000)
            # A transient fault names its request, as an engine's error does: the fleet
            # tells it from a request's content, which fails alike on every endpoint.
            return _error(500, f"simulated internal server error (request {number})",
                          "InternalServerError")
        roll -= config.fail_rate
        slow = state.rng.random() < config.slow_rate
        state.counts["slow"] += slow
        # The reply is made inside the latency, not after it: a request holds its slot for
        # the latency asked, as a real server's is its whole time in the engine, however long
        # this process takes to make the reply (or to make another port's at the same moment).
        started = asyncio.get_running_loop().time()
        garbage = roll < config.garbage_rate
        unreadable = bool(config.unreadable_rate) and \
            request_share(body, config.seed) < config.unreadable_rate
        if unreadable:
            content, recorded, garbage = UNREADABLE, None, False
        elif garbage:
            noise = "".join(state.rng.choice(string.ascii_lowercase) for _ in range(12))
            content, recorded = _GARBAGE[number % len(_GARBAGE)].format(noise=noise), None
        else:
            content, recorded = reply(body, config)
        completion = _completion(content, checked, config, number)
        response = web.json_response(completion)
        latency = (config.slow_ms if slow else config.latency_ms) / 1000
        left = latency - (asyncio.get_running_loop().time() - started)
        with contextlib.suppress(TimeoutError):  # the latency, unless the engine dies
            async with asyncio.timeout(max(left, 0)):
                await state.died.wait()
        if state.died.is_set():  # as vLLM fails every request in flight when its engine dies
            return web.Response(status=500)
        if garbage or unreadable:
            state.counts["unreadable" if unreadable else "garbage"] += 1
        else:
            if config.record and recorded is not None:
                state.queries.append(recorded)
            state.counts["ok"] += 1
        state.counts["prompt_tokens"] += completion["usage"]["prompt_tokens"]
        state.counts["completion_tokens"] += completion["usage"]["completion_tokens"]
        state.counts["audio_seconds"] += sum(_seconds(url) for _, url, _ in checked.audio)
        return response

    @web.middleware
    async def authenticate(request: web.Request, handler) -> web.StreamResponse:
        """The launch script's guard (mmae_judge_guard.KeyEverywhere) over vLLM's own check:
        every request wants the API key but GET or HEAD /health and /ping, the probes a load
        balancer makes, and the simulator's own stats."""
        open_path = request.method in ("GET", "HEAD") and (
            request.path.rstrip("/") in OPEN_PATHS or request.path == "/simulator/stats")
        if config.api_key and not open_path \
                and not _bearer_matches(request.headers.get("Authorization"), config.api_key):
            return web.json_response({"error": "Unauthorized"}, status=401,
                                     headers={"WWW-Authenticate": "Bearer"})
        return await handler(request)

    async def say_simulated(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Judge-Simulator"] = "1"

    app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=[authenticate])
    app.on_response_prepare.append(say_simulated)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_get("/ping", health)
    app.router.add_get("/simulator/stats", stats)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_post("/invocations", completions)  # SageMaker's route, in vllm serve
    return app


def _bearer_matches(header: str | None, key: str) -> bool:
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(given.encode(), key.encode())


class EveryPortDied(RuntimeError):
    """Every port's engine died (die_after), as a vLLM server exits after EngineDeadError."""


async def serve(ports: list[int], config: SimulatorConfig, *, host: str = "127.0.0.1",
                ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve every port until `stop` is set (or forever); a port whose engine dies stops
    listening, and when every port has, EveryPortDied is raised."""
    runners: dict[PortState, web.AppRunner] = {}
    try:
        for port in ports:
            state = PortState(port, config)
            runner = web.AppRunner(make_app(state), handler_cancellation=True, access_log=None,
                                   keepalive_timeout=config.keepalive_seconds,
                                   shutdown_timeout=1.0)
            await runner.setup()
            runners[state] = runner
            await web.TCPSite(runner, host, port, backlog=1024).start()
        if ready is not None:
            ready.set()
        await _until_stopped(runners, stop or asyncio.Event())
    finally:
        for runner in runners.values():
            await runner.cleanup()


async def _until_stopped(runners: dict, stop: asyncio.Event) -> None:
    """Wait for `stop`, closing each port whose engine dies (taken out of `runners`)."""
    stopping = asyncio.ensure_future(stop.wait())
    deaths = {asyncio.ensure_future(state.died.wait()): state for state in runners}
    try:
        while runners:
            done, _ = await asyncio.wait({stopping, *deaths}, return_when=asyncio.FIRST_COMPLETED)
            if stopping in done:
                return
            for task in done:
                await runners.pop(deaths.pop(task)).cleanup()
        raise EveryPortDied("every port's engine died (die_after): none is listening")
    finally:
        for task in (stopping, *deaths):
            task.cancel()


def stats_totals(urls: list[str]) -> dict:
    """Every number of `GET /simulator/stats`, summed over the given ports (benchmarks and
    tests compare a run's cost card with them)."""
    import httpx

    total: dict = {}
    for url in urls:
        for name, value in httpx.get(f"{url}/simulator/stats").json().items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total
