"""Probing judge servers: health from `GET /v1/models`, load from vLLM's `GET /metrics`.

No Django here. `probe_all` asks every server at once with a short timeout, so one dead
server costs the probe one timeout, not one per server.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass

import httpx

from judge.fleet import describe_error, ssl_context

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"


@dataclass(frozen=True)
class ProbeResult:
    base_url: str
    healthy: bool
    latency_ms: float | None  # of GET /v1/models, when it answered
    error: str  # why it is unhealthy, or what /metrics lacked; "" when all is well
    running: int | None  # requests being served, from /metrics
    waiting: int | None  # requests queued at the server, from /metrics
    simulator: bool = False  # the judge simulator answered, not a model server
    models: tuple[str, ...] | None = None  # the ids GET /v1/models listed, when it did


def parse_metrics(text: str, names: tuple[str, ...] = (RUNNING, WAITING)) -> dict[str, float]:
    """The value of each metric of `names` in a Prometheus text exposition, summed over its
    label sets (a vLLM server with several engines reports one series per engine). Names
    absent from the text are absent from the result; malformed lines are skipped."""
    wanted = set(names)
    totals: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, _, rest = line.partition("{")
            rest = rest.rpartition("}")[2]  # label values may hold spaces, not the value
        else:
            name, _, rest = line.partition(" ")
        name = name.strip()
        if name not in wanted:
            continue
        fields = rest.split()
        try:
            value = float(fields[0])
        except (IndexError, ValueError):
            continue
        if math.isfinite(value):
            totals[name] = totals.get(name, 0.0) + value
    return totals


async def probe(client: httpx.AsyncClient, base_url: str) -> ProbeResult:
    """Probe one server. It is healthy when `/v1/models` answers 200 with JSON; `/metrics`
    is read for load only, and a server without it is still healthy."""
    base_url = base_url.rstrip("/")
    started = time.monotonic()
    try:
        response = await client.get(f"{base_url}/v1/models")
        latency_ms = (time.monotonic() - started) * 1000
        if response.status_code in (401, 403):
            return ProbeResult(base_url, False, latency_ms,
                               f"GET /v1/models: HTTP {response.status_code}: the server "
                               "refuses our API key (JUDGE_API_KEY)", None, None)
        if response.status_code != 200:
            return ProbeResult(base_url, False, latency_ms,
                               f"GET /v1/models: HTTP {response.status_code}", None, None)
        listing = response.json()
        try:
            models = tuple(str(m["id"]) for m in listing["data"])
        except (KeyError, TypeError):
            return ProbeResult(base_url, False, latency_ms,
                               "GET /v1/models: not a model list", None, None)
        simulator = response.headers.get("x-judge-simulator") is not None
    except httpx.HTTPError as exc:
        return ProbeResult(base_url, False, None, f"GET /v1/models: {describe_error(exc)}",
                           None, None)
    except ValueError:
        return ProbeResult(base_url, False, latency_ms, "GET /v1/models: not JSON", None, None)
    running = waiting = None
    error = ""
    try:
        response = await client.get(f"{base_url}/metrics")
        if response.status_code == 200:
            values = parse_metrics(response.text)
            running = _count(values.get(RUNNING))
            waiting = _count(values.get(WAITING))
            if running is None or waiting is None:
                error = f"GET /metrics: no {RUNNING} or {WAITING}"
        else:
            error = f"GET /metrics: HTTP {response.status_code}"
    except httpx.HTTPError as exc:
        error = f"GET /metrics: {describe_error(exc)}"
    return ProbeResult(base_url, True, latency_ms, error, running, waiting, simulator, models)


def _count(value: float | None) -> int | None:
    return None if value is None else max(0, round(value))


async def probe_all(base_urls: list[str], *, timeout: float = 5.0,
                    api_key: str | None = None) -> list[ProbeResult]:
    """Probe every server at once, in the order given."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(timeout=timeout, headers=headers,
                                 verify=ssl_context()) as client:
        return list(await asyncio.gather(*(probe(client, url) for url in base_urls)))
