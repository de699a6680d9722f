"""A judge simulator: a real HTTP server speaking the part of vLLM's OpenAI API the fleet uses.

It is NOT a model. It never listens to audio: it picks an option from a hash of the seed, the
output audio's bytes and the question, so its verdicts are deterministic for a seed and input,
differ between systems, and carry no information about quality. Every reply says so. Text-only
queries (AIR-Bench) get the same treatment: a chat review gets two scores, each hashed from the
seed, the question and one answer; an alignment query gets a letter hashed from the seed, the
question and the response.

Like vLLM, each port serves at most `slots` requests at once and queues the rest; a client that
disconnects cancels its request. Faults can be injected: HTTP 500s, unparseable replies and
replies slower than a client's timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import time
from dataclasses import dataclass, field

from aiohttp import web

from judge.fleet import SIMULATOR_FINGERPRINT

DEFAULT_MODEL = "Qwen3-Omni-30B-A3B-Instruct"
NOTICE = "judge simulator: not a real model; verdicts are hashes of the input, not judgments"

_CHOICE_LINE_RE = re.compile(r"^([A-Z])\. (.*)$")
_GARBAGE = (
    "I listened carefully, and the answer is probably the second option.",
    '{"reason": "The output audio contains',
    '{"reason": "simulated garbage", "choice": "maybe"}',
    "",
)


@dataclass
class SimulatorConfig:
    latency_ms: float = 200.0
    slots: int = 32
    fail_rate: float = 0.0
    garbage_rate: float = 0.0
    slow_rate: float = 0.0
    slow_ms: float = 30000.0
    seed: int = 0
    model: str = DEFAULT_MODEL
    noise: float = 0.1  # share of queries answered off the system's usual pick
    # keep (question, choices as presented, letter) of every answer for /simulator/stats
    record: bool = False

    def __post_init__(self):
        for name in ("fail_rate", "garbage_rate", "slow_rate", "noise"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.slots < 1:
            raise ValueError(f"slots must be at least 1, got {self.slots}")
        if self.latency_ms < 0 or self.slow_ms < 0:
            raise ValueError("latencies cannot be negative")


@dataclass
class PortState:
    port: int
    config: SimulatorConfig
    slots: asyncio.Semaphore = field(init=False)
    rng: random.Random = field(init=False)
    counts: dict = field(default_factory=lambda: {
        "completions": 0, "ok": 0, "failed": 0, "garbage": 0, "slow": 0, "cancelled": 0,
        "models": 0, "in_progress": 0, "waiting": 0, "peak_in_progress": 0,
    })
    queries: list = field(default_factory=list)  # (question, choices) of each answered query
    # How busy the slots were, for benchmarks and tests (Unix times, comparable across the
    # processes of one machine): when a slot was first taken, when every slot first was, and
    # the integral of slots busy over time.
    first_busy_at: float | None = None
    all_busy_at: float | None = None
    busy_slot_seconds: float = 0.0
    _changed_at: float = field(default=0.0, repr=False)

    def __post_init__(self):
        self.slots = asyncio.Semaphore(self.config.slots)
        self.rng = random.Random(f"{self.config.seed}:{self.port}")

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

    def slot_taken(self) -> None:
        self._account(+1)

    def slot_freed(self) -> None:
        self._account(-1)

    def load(self) -> dict:
        """The load figures of /simulator/stats, the busy time counted up to now."""
        now = time.time()
        busy = self.busy_slot_seconds + self.counts["in_progress"] * (now - self._changed_at)
        return {"slots": self.config.slots, "first_busy_at": self.first_busy_at,
                "all_busy_at": self.all_busy_at, "busy_slot_seconds": busy, "now": now}


def parse_query(body: dict) -> dict | None:
    """Question, presented choices and the audio each label points to, from an MMAE query."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        audio: dict[str, str] = {}
        label = None
        question = choices = None
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                text = part.get("text") or ""
                match = re.fullmatch(r"<audio ([^>]+)>: ", text)
                if match:
                    label = match.group(1)
                elif "\nQuestion: " in text and "\n\nChoices: " in text:
                    question = text.split("\nQuestion: ", 1)[1].split("\n\nChoices: ", 1)[0]
                    lines = text.split("\n\nChoices: ", 1)[1].split("\n")
                    choices = [m.group(2) for m in map(_CHOICE_LINE_RE.match, lines) if m]
            elif part.get("type") == "audio_url":
                url = (part.get("audio_url") or {}).get("url") or ""
                audio[label or f"audio{len(audio)}"] = url
        if question is not None and choices:
            return {"question": question, "choices": choices, "audio": audio}
    return None


def verdict(query: dict, config: SimulatorConfig) -> tuple[str, str]:
    """(letter, reason) for a parsed query: the system's usual pick, sometimes another one.

    The usual pick depends on the seed, the output audio (else every audio) and the question and
    its options regardless of their order, so a system gets the same answer in every round but
    for the `noise` share, which also depends on the presented order.
    """
    audio = query["audio"].get("output") or "".join(sorted(query["audio"].values()))
    audio_digest = hashlib.sha1(audio.encode()).hexdigest()
    options = sorted(query["choices"])
    key = f"{config.seed}|{audio_digest}|{query['question']}|{json.dumps(options)}"
    digest = hashlib.sha256(key.encode()).digest()
    pick = options[digest[0] % len(options)]
    noise_key = hashlib.sha256((key + json.dumps(query["choices"])).encode()).digest()
    if noise_key[0] / 256 < config.noise:
        pick = options[noise_key[1] % len(options)]
    letter = chr(ord("A") + query["choices"].index(pick))
    return letter, f"Simulated judge, not a model: option {letter} was picked by hashing the input."


_CHAT_ANSWER_RE = re.compile(
    r"\[The Start of Assistant ([12])s Answer\]\n(.*?)\n\[The End of Assistant \1s Answer\]",
    re.DOTALL)
_ALIGN_MARK = "Among the following choices, which option best matches this response?"
_ALIGN_RE = re.compile(r'^There is a question "(.*)", and one response is "(.*)"\. Among ',
                       re.DOTALL)


def _user_text(body: dict) -> str | None:
    """The text of a text-only user message, if that is what the query is."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user" \
                and isinstance(message.get("content"), str):
            return message["content"]
    return None


def chat_score(question: str, answer: str, seed: int) -> int:
    """The simulated 1-10 score of one answer: a hash, the same in either position."""
    digest = hashlib.sha256(f"{seed}|chat|{question}|{answer}".encode()).digest()
    return 1 + digest[0] % 10


def align_letter(question: str, response: str, n_options: int, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}|align|{question}|{response}".encode()).digest()
    return "ABCD"[digest[0] % n_options]


def text_reply(body: dict, config: SimulatorConfig) -> tuple[str, list] | None:
    """(reply, what to record) for an AIR-Bench text query, else None."""
    text = _user_text(body)
    if text is None:
        return None
    answers = dict(_CHAT_ANSWER_RE.findall(text))
    if "1" in answers and "2" in answers and "[Question]\n" in text:
        question = text.split("[Question]\n", 1)[1].split("\n[The Start of Assistant 1s", 1)[0]
        scores = [chat_score(question, answers[k], config.seed) for k in ("1", "2")]
        return f"{scores[0]} {scores[1]}", [question, [answers["1"], answers["2"]]]
    match = _ALIGN_RE.match(text)
    if _ALIGN_MARK in text and match:
        listed = text.split("The following lines are the options.", 1)[-1]
        listed = listed.split("\nTo reiterate, the response", 1)[0]
        options = [m.group(2) for m in map(_CHOICE_LINE_RE.match, listed.split("\n")) if m]
        if options:
            question, response = match.groups()
            return align_letter(question, response, len(options), config.seed), \
                [question, options]
    return None


def _completion(content: str, config: SimulatorConfig, number: int) -> dict:
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
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "simulator": NOTICE,
    }


def _error(status: int, message: str) -> web.Response:
    body = {"object": "error", "message": f"{message} ({NOTICE})", "type": "simulator",
            "code": status}
    return web.json_response(body, status=status, headers={"X-Judge-Simulator": "1"})


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
                      "root": config.model, "max_model_len": 32768}],
            "simulator": NOTICE,
        }
        return web.json_response(data, headers={"X-Judge-Simulator": "1"})

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="", headers={"X-Judge-Simulator": "1"})

    async def stats(request: web.Request) -> web.Response:
        return web.json_response({"port": state.port, **state.counts, **state.load(),
                                  "queries": state.queries, "simulator": NOTICE})

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=metrics_text(state), content_type="text/plain",
                            headers={"X-Judge-Simulator": "1"})

    async def completions(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not JSON")
        if body.get("model") != config.model:
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        state.counts["waiting"] += 1
        queued = True
        try:
            async with state.slots:
                state.counts["waiting"] -= 1
                queued = False
                state.slot_taken()
                try:
                    return await _serve(body)
                finally:
                    state.slot_freed()
        except asyncio.CancelledError:
            state.counts["cancelled"] += 1
            if queued:  # the client left before a slot freed
                state.counts["waiting"] -= 1
            raise

    async def _serve(body: dict) -> web.Response:
        state.counts["completions"] += 1
        number = state.counts["completions"]
        roll = state.rng.random()
        if roll < config.fail_rate:
            state.counts["failed"] += 1
            await asyncio.sleep(config.latency_ms / 4000)
            return _error(500, "simulated internal server error")
        roll -= config.fail_rate
        slow = state.rng.random() < config.slow_rate
        state.counts["slow"] += slow
        await asyncio.sleep((config.slow_ms if slow else config.latency_ms) / 1000)
        if roll < config.garbage_rate:
            state.counts["garbage"] += 1
            content = _GARBAGE[number % len(_GARBAGE)]
        elif (text := text_reply(body, config)) is not None:
            content, recorded = text
            if config.record:
                state.queries.append(recorded)
            state.counts["ok"] += 1
        else:
            query = parse_query(body)
            if query is None:
                content = json.dumps({"reason": f"{NOTICE}; no multiple-choice question found",
                                      "choice": None})
            else:
                letter, reason = verdict(query, config)
                content = json.dumps({"reason": reason, "choice": letter})
                if config.record:
                    state.queries.append([query["question"], query["choices"], letter])
            state.counts["ok"] += 1
        return web.json_response(_completion(content, config, number),
                                 headers={"X-Judge-Simulator": "1"})

    app = web.Application(client_max_size=256 * 1024 * 1024)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_get("/simulator/stats", stats)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/chat/completions", completions)
    return app


async def serve(ports: list[int], config: SimulatorConfig, *, host: str = "127.0.0.1",
                ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve every port until `stop` is set (or forever)."""
    runners = []
    try:
        for port in ports:
            runner = web.AppRunner(make_app(PortState(port, config)), handler_cancellation=True,
                                   access_log=None)
            await runner.setup()
            await web.TCPSite(runner, host, port, backlog=1024).start()
            runners.append(runner)
        if ready is not None:
            ready.set()
        await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        for runner in runners:
            await runner.cleanup()
