"""The health of a fleet's endpoints: each endpoint's state (`Endpoint`), whether it serves our
model (GET /v1/models: a misconfigured one is taken out without spending a query's attempt),
failures in a row that take an endpoint out, the probe that lets it back in, staff taking
endpoints out, and how long the fleet may wait with every endpoint down. JudgeFleet
(judge.fleet) is built on it."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import httpx

from judge.errors import FleetUnavailable

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Endpoint:
    base_url: str
    capacity: int
    in_flight: int = 0
    healthy: bool = True
    excluded: bool = False  # taken out by staff: no new queries, whatever its health
    consecutive_failures: int = 0
    last_error: str | None = None
    # Why the endpoint cannot serve our queries (a wrong model id, our key refused), while it
    # cannot; None when it can, as far as we know.
    misconfigured: str | None = None
    served: int = 0
    failed: int = 0
    probe_task: asyncio.Task | None = field(default=None, repr=False)
    lanes: list = field(default_factory=list, repr=False)  # idle one-connection clients
    # The audio this endpoint holds as far as we know (sent under its uuid and answered):
    # uuid -> size, least recently used first; and the audio on its way there now, uuid ->
    # an event set when that request ends (judge.fleet's audio policy).
    audio: OrderedDict = field(default_factory=OrderedDict, repr=False)
    audio_size: int = 0
    audio_sending: dict = field(default_factory=dict, repr=False)

    @property
    def load(self) -> float:
        return self.in_flight / self.capacity


class EndpointHealth:
    """What JudgeFleet knows of its endpoints' health; its attributes are set by JudgeFleet."""

    def _down_remaining(self) -> float:
        """Seconds left to wait for an endpoint to come back; FleetUnavailable when none."""
        if self._all_down_since is None:
            self._all_down_since = time.monotonic()
            log.warning(
                "all %d judge endpoints are down (%s); waiting up to %.0f s for one "
                "to answer GET /v1/models",
                len(self.endpoints), self._describe_down(), self.down_wait,
            )
        remaining = self._all_down_since + self.down_wait - time.monotonic()
        if remaining <= 0:
            raise FleetUnavailable(
                f"every judge endpoint has been down for {self.down_wait:.0f} s: "
                f"{self._describe_down()}"
            )
        return remaining

    def _describe_down(self) -> str:
        return "; ".join(f"{e.base_url}: {self._why_out(e)}" for e in self.endpoints)

    @staticmethod
    def _why_out(endpoint: Endpoint) -> str:
        if endpoint.excluded:
            return "taken out"
        if endpoint.misconfigured:
            return f"misconfigured: {endpoint.misconfigured}"
        return endpoint.last_error or "no answer"

    def misconfigured(self) -> dict[str, str]:
        """base URL -> why, for each endpoint that is misconfigured now."""
        return {e.base_url: e.misconfigured for e in self.endpoints if e.misconfigured}

    async def _models_problem(self, endpoint: Endpoint) -> str | None:
        """Why GET /v1/models says the endpoint cannot serve our queries (None: it can).
        Raises httpx.HTTPError when it does not answer at all (down, not misconfigured)."""
        response = await self._client.get(f"{endpoint.base_url}/v1/models",
                                           timeout=min(10.0, self.timeout))
        status = response.status_code
        if status in (401, 403):
            return (f"refuses our API key (HTTP {status} on /v1/models): set JUDGE_API_KEY to "
                    "the key the server was started with")
        if status != 200:
            return f"HTTP {status} on /v1/models: {error_message(response.text)}"
        try:
            served = [m["id"] for m in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return "/v1/models answered something that is not a model list"
        if self.model not in served:
            return (f"serves {', '.join(map(repr, served)) or 'no model'}, not {self.model!r} "
                    "(the judge config's model)")
        return None

    async def check(self, max_age: float = 0.0) -> dict[str, str]:
        """Ask every endpoint whether it serves our model, once in `max_age` seconds: those
        that do not are taken out as misconfigured (and probed until they do); those that do
        not answer are left to the failures of the queries sent to them. Returns
        misconfigured()."""
        now = time.monotonic()
        if self._checked_at is not None and now - self._checked_at < max_age:
            return self.misconfigured()
        self._checked_at = now

        async def one(endpoint: Endpoint) -> None:
            if not endpoint.healthy:
                return  # its probe is on it
            try:
                problem = await self._models_problem(endpoint)
            except httpx.HTTPError:
                return
            if problem is not None:
                self._take_out_misconfigured(endpoint, problem)

        await asyncio.gather(*(one(e) for e in self.endpoints))
        return self.misconfigured()

    def _take_out_misconfigured(self, endpoint: Endpoint, why: str) -> None:
        first = endpoint.misconfigured != why
        endpoint.misconfigured = endpoint.last_error = why
        if first:
            log.error("judge endpoint %s is misconfigured, taken out until it serves %r: %s",
                      endpoint.base_url, self.model, why)
            if self.on_misconfigured is not None:
                try:
                    self.on_misconfigured(endpoint.base_url, why)
                except Exception:
                    log.exception("reporting the misconfigured endpoint %s failed",
                                  endpoint.base_url)
        if endpoint.healthy:
            endpoint.healthy = False
            endpoint.probe_task = asyncio.create_task(self._probe(endpoint))

    async def exclude(self, base_urls: set[str]) -> None:
        """Send no new queries to the endpoints of `base_urls` (taken out by staff); those
        not listed take queries again. Queries in flight finish where they are."""
        for endpoint in self.endpoints:
            endpoint.excluded = endpoint.base_url in base_urls
        if any(e.healthy and not e.excluded for e in self.endpoints):
            self._all_down_since = None
        self._bump()

    async def _mark_failure(self, endpoint: Endpoint, error: str) -> None:
        endpoint.consecutive_failures += 1
        endpoint.failed += 1
        endpoint.last_error = error
        if endpoint.healthy and endpoint.consecutive_failures >= self.failure_threshold:
            endpoint.healthy = False
            log.warning("judge endpoint %s taken out after %d failures in a row (last: %s)",
                        endpoint.base_url, endpoint.consecutive_failures, error)
            endpoint.probe_task = asyncio.create_task(self._probe(endpoint))

    async def _probe(self, endpoint: Endpoint) -> None:
        interval = self.probe_interval
        while True:
            await asyncio.sleep(interval)
            try:
                problem = await self._models_problem(endpoint)
                if problem is None:
                    break
                if endpoint.misconfigured:
                    endpoint.misconfigured = endpoint.last_error = problem
                else:
                    endpoint.last_error = f"probe: {problem}"
            except httpx.HTTPError as exc:
                endpoint.last_error = f"probe: {describe_error(exc)}"
            interval = min(interval * 2, self.probe_interval_max)
        log.warning("judge endpoint %s serves %r again; back in the fleet", endpoint.base_url,
                    self.model)
        endpoint.healthy = True
        endpoint.misconfigured = None
        endpoint.consecutive_failures = 0
        endpoint.probe_task = None
        self._all_down_since = None
        self._bump()


def error_message(text: str) -> str:
    """vLLM's own words from an error body (`{"error": {"message": ...}}`, older servers'
    `{"message": ...}`, or its authentication middleware's `{"error": "Unauthorized"}`), else
    the start of the body."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:500]
        if isinstance(error, str):
            return error[:500]
    return text[:500] or "(empty body)"


def describe_error(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
