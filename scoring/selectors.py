"""Reads for the fleet page: each judge config's endpoints with their health and recent
figures, and the scoring queue."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Sum
from django.utils import timezone

from judge.models import Endpoint
from judge.selectors import endpoints_by_url
from scoring.models import Answer, JudgeConfig, RunBatch, ScoringRun

WAITING_RUNS = (ScoringRun.Status.QUEUED, ScoringRun.Status.SCORING)


def age_text(seconds: float | None) -> str:
    """A duration as the page shows it: "40 s", "12 min", "3 h 5 min", "2 days"."""
    if seconds is None:
        return ""
    seconds = max(0, round(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} days"


def percentile(ordered: list[float], p: float) -> float | None:
    """The nearest-rank percentile of an ascending list: the smallest value with at least
    p% of the values at or below it."""
    if not ordered:
        return None
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class EndpointStats:
    """Judge answers an endpoint gave over a window (the endpoint of each answer's last
    attempt; answers from the judgment cache asked no one and are left out)."""

    answers: int = 0
    errors: int = 0  # answers that failed after every attempt
    per_minute: float = 0.0
    attempts: float | None = None  # mean attempts per answer: above 1 means retries
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.answers if self.answers else None

    @property
    def error_percent(self) -> float | None:
        return None if self.error_rate is None else 100 * self.error_rate


def endpoint_stats(*, now: datetime | None = None,
                   minutes: int | None = None) -> dict[str, EndpointStats]:
    """Per endpoint: answers per minute, error rate and latency percentiles (ms, of each
    answer's last attempt) over the `minutes` before `now`. Answers are stored a batch at a
    time, so a window shorter than a batch's scoring time looks bursty."""
    now = now or timezone.now()
    minutes = minutes or settings.FLEET_STATS_MINUTES
    rows = (Answer.objects
            .filter(answered_at__gt=now - timedelta(minutes=minutes), answered_at__lte=now,
                    cached=False)
            .exclude(endpoint=None)
            .values_list("endpoint", "latency_ms", "error", "attempts"))
    grouped: dict[str, list] = {}
    for endpoint, latency_ms, error, attempts in rows:
        grouped.setdefault(endpoint.rstrip("/"), []).append((latency_ms, error, attempts))
    stats = {}
    for endpoint, answers in grouped.items():
        latencies = sorted(a[0] for a in answers if a[0] is not None)
        stats[endpoint] = EndpointStats(
            answers=len(answers), errors=sum(a[1] is not None for a in answers),
            per_minute=len(answers) / minutes,
            attempts=sum(a[2] for a in answers) / len(answers),
            p50=percentile(latencies, 50), p95=percentile(latencies, 95),
            p99=percentile(latencies, 99))
    return stats


def cached_answers(*, now: datetime | None = None, minutes: int | None = None) -> int:
    """Answers taken from the judgment cache over the window: judge queries not sent."""
    now = now or timezone.now()
    minutes = minutes or settings.FLEET_STATS_MINUTES
    return Answer.objects.filter(answered_at__gt=now - timedelta(minutes=minutes),
                                 answered_at__lte=now, cached=True).count()


@dataclass(frozen=True)
class QueueRow:
    purpose: str
    pending: int  # batches waiting for a worker
    claimed: int  # batches a worker is scoring
    queries_left: int  # judge queries of waiting runs not answered yet
    oldest_since: datetime | None  # creation of the oldest run with a pending batch
    oldest_run_id: int | None
    age_seconds: float | None

    @property
    def age(self) -> str:
        return age_text(self.age_seconds)


def fleet_queue(*, now: datetime | None = None) -> list[QueueRow]:
    """The scoring queue per purpose (submission, rescore, baseline): batches pending and
    claimed, judge queries left, and how long the oldest waiting work has waited."""
    now = now or timezone.now()
    batches = {(row["run__purpose"], row["status"]): row["n"] for row in
               RunBatch.objects.filter(run__status__in=WAITING_RUNS)
               .values("run__purpose", "status").annotate(n=Count("id"))}
    totals = dict(ScoringRun.objects.filter(status__in=WAITING_RUNS).values("purpose")
                  .annotate(n=Sum("total_queries")).values_list("purpose", "n"))
    answered = dict(Answer.objects.filter(run__status__in=WAITING_RUNS).values("run__purpose")
                    .annotate(n=Count("id")).values_list("run__purpose", "n"))
    rows = []
    for purpose in ScoringRun.Purpose.values:
        oldest = (ScoringRun.objects.filter(purpose=purpose, status__in=WAITING_RUNS,
                                            batches__status=RunBatch.Status.PENDING)
                  .order_by("created_at").values_list("id", "created_at").first())
        run_id, since = oldest or (None, None)
        rows.append(QueueRow(
            purpose=purpose, pending=batches.get((purpose, RunBatch.Status.PENDING), 0),
            claimed=batches.get((purpose, RunBatch.Status.CLAIMED), 0),
            queries_left=max(0, (totals.get(purpose) or 0) - answered.get(purpose, 0)),
            oldest_since=since, oldest_run_id=run_id,
            age_seconds=None if since is None else (now - since).total_seconds()))
    return rows


@dataclass(frozen=True)
class EndpointRow:
    base_url: str
    state: Endpoint | None  # None until probed or switched
    stats: EndpointStats
    probe_age_seconds: float | None
    model: str = ""  # the judge config's model, which the endpoint must serve

    @property
    def enabled(self) -> bool:
        return self.state is None or self.state.enabled

    @property
    def misconfigured(self) -> str:
        """Why the endpoint answers but cannot serve the config's queries ("" when it can)."""
        state = self.state
        if state is None or not state.healthy or state.served_models is None:
            return ""
        if self.model not in state.served_models:
            served = ", ".join(map(repr, state.served_models)) or "no model"
            return f"serves {served}, not {self.model!r}: queries would get HTTP 404"
        return ""

    @property
    def health(self) -> str:
        """"healthy", "misconfigured", "down" or "unknown" (never probed)."""
        if self.state is None or self.state.healthy is None:
            return "unknown"
        if self.misconfigured:
            return "misconfigured"
        return "healthy" if self.state.healthy else "down"

    @property
    def probe_age(self) -> str:
        return age_text(self.probe_age_seconds)

    @property
    def probe_stale(self) -> bool:
        """The last probe is older than three probe periods: the probing has stopped."""
        return self.probe_age_seconds is not None and \
            self.probe_age_seconds > 3 * settings.FLEET_PROBE_SECONDS


@dataclass(frozen=True)
class ConfigRow:
    config: JudgeConfig
    benchmarks: list[str]  # "slug vN" of the benchmarks it is current for
    endpoints: list[EndpointRow]

    @property
    def in_service(self) -> int:
        return sum(e.enabled for e in self.endpoints)

    @property
    def simulated(self) -> bool:
        """The judge simulator answered the last probe of every probed endpoint."""
        probed = [e.state for e in self.endpoints if e.state and e.state.last_probe_at]
        return bool(probed) and all(state.simulator for state in probed)


def fleet_configs(*, now: datetime | None = None) -> list[ConfigRow]:
    """Every judge config, those current for a benchmark first, with each endpoint's state
    and figures."""
    now = now or timezone.now()
    configs = list(JudgeConfig.objects.prefetch_related("benchmarks").order_by("name"))
    urls = [url.rstrip("/") for c in configs for url in c.base_urls]
    states = endpoints_by_url(urls)
    stats = endpoint_stats(now=now)
    rows = []
    for config in configs:
        endpoints = []
        for url in dict.fromkeys(u.rstrip("/") for u in config.base_urls):
            state = states.get(url)
            probed = state.last_probe_at if state is not None else None
            endpoints.append(EndpointRow(
                base_url=url, state=state, stats=stats.get(url, EndpointStats()),
                probe_age_seconds=None if probed is None else (now - probed).total_seconds(),
                model=config.judge_model))
        benchmarks = [f"{b.slug} v{b.version}" for b in config.benchmarks.all()]
        rows.append(ConfigRow(config=config, benchmarks=benchmarks, endpoints=endpoints))
    rows.sort(key=lambda row: not row.benchmarks)  # stable: by name within each group
    return rows
