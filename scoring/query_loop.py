"""The one query loop: a worker's claimed batches of a run turned into judge queries, sent to the
fleet with every slot busy, their answers stored as they come (a query lost on our side asked
again, never stored), claims of further batches of
the run made while the loop runs, a heartbeat kept, and a run stopped (cancelled, failed) seen
within SCORING_STOP_CHECK_SECONDS."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import logging
import queue
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError
from django.db.models import F
from django.utils import timezone

from config.alerts import staff_alert
from config.heartbeat import Heartbeat
from judge.errors import FleetUnavailable, LeaseError
from judge.fleet import JudgeFleet
from judge.leases import fleet_leases
from judge.runner import fleet_runner
from judge.selectors import disabled_base_urls
from scoring import media
from scoring.cost import tally
from scoring.jobs import JobFeed, ask_jobs
from scoring.judgments import answer_from, answers_store, answers_write, from_cache, output_digests
from scoring.kinds import Job, get_kind
from scoring.kinds.base import answer_record
from scoring.models import (
    Answer,
    JudgeConfig,
    RunBatch,
    ScoringRun,
)
from scoring.runs import (
    Status,
    batch_claim,
    batch_claim_next,
    connection_replace_broken,
    cost_add,
    items_of,
    run_jobs,
    run_lost,
    run_move,
)

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class JudgeSettings:
    """How a worker talks to the judge fleet; what is asked, and of which endpoints, comes
    from the run's judge config."""

    concurrency: int  # per endpoint, across every worker when redis_url is set
    timeout: float
    down_wait: float
    redis_url: str = ""  # where the fleet-wide leases live; "" keeps the cap per process
    lease_ttl: float = 30.0
    max_inflight_bytes: int = 256 * 2**20
    claim_ahead: float = 0.0  # seconds a task claims batches ahead (0: its own batch only)

    @classmethod
    def from_settings(cls) -> JudgeSettings:
        return cls(concurrency=settings.JUDGE_CONCURRENCY, timeout=settings.JUDGE_TIMEOUT,
                   down_wait=settings.JUDGE_DOWN_WAIT, redis_url=settings.REDIS_URL,
                   lease_ttl=settings.JUDGE_LEASE_TTL,
                   max_inflight_bytes=settings.JUDGE_MAX_INFLIGHT_BYTES,
                   claim_ahead=settings.SCORING_CLAIM_AHEAD_SECONDS)


@dataclass(eq=False)
class _Open:
    """A claimed batch whose queries are being asked, and its answers so far."""

    id: int
    run: ScoringRun
    criterion_ids: dict  # (item key, criterion index) -> criterion id
    keys: dict  # job -> content key
    left: int  # queries not answered yet
    records: list[Answer] = field(default_factory=list)
    simulated: bool = False

    def add(self, job: Job, answer) -> None:
        self.records.append(answer_from(self.run, self.criterion_ids[(job.item, job.criterion)],
                                    self.keys[job], answer_record(job, answer)))
        self.simulated = self.simulated or answer.simulated
        self.left -= 1

    def store(self) -> None:
        answers_write(self.run, self.records, [self.simulated])
        self.records = []


def _batch_open(batch_id: int) -> tuple[_Open, list[Job]]:
    """A batch just claimed: its run moves to scoring, what the judgment cache has is stored,
    and the queries left to ask are returned."""
    batch = RunBatch.objects.select_related("run__benchmark", "run__judge_config").get(
        id=batch_id)
    run = batch.run
    run_move(run.id, [Status.QUEUED], Status.SCORING)
    items = items_of(run.benchmark, batch.item_keys)
    media.outputs_fetch(run, batch.item_keys)
    criterion_ids = {(item.key, c.index): c.id for item in items for c in item.ordered_criteria()}
    answered = set(Answer.objects.filter(run=run, criterion_id__in=criterion_ids.values())
                   .values_list("criterion_id", "round"))
    jobs = [job for job in run_jobs(kind=get_kind(run.benchmark.kind), benchmark=run.benchmark,
                                    items=items, outputs=run.outputs,
                                    audio_root=run.audio_root, rounds=run.rounds,
                                    seed=run.seed, options=run.options)
            if (criterion_ids[(job.item, job.criterion)], job.round) not in answered]
    key_of = functools.partial(Job.content_key, config=str(run.judge_config_id),
                               digest=output_digests(audio_root=run.audio_root, outputs=run.outputs,
                                               digests=run.digests, benchmark=run.benchmark,
                                               items=items))
    keys = {job: key_of(job) for job in jobs}
    run.simulated = False
    cached = from_cache(run, {keys[job]: job for job in jobs}, criterion_ids)
    answers_store(cached)
    if run.simulated:
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)
    cost_add(run.id, Counter(reused=len(cached)))
    hit = {(a.criterion_id, a.round) for a in cached}
    jobs = [job for job in jobs
            if (criterion_ids[(job.item, job.criterion)], job.round) not in hit]
    return _Open(batch_id, run, criterion_ids, keys, left=len(jobs)), jobs


def _batch_done(batch: _Open) -> None:
    batch.store()
    RunBatch.objects.filter(id=batch.id, status=RunBatch.Status.CLAIMED) \
        .update(status=RunBatch.Status.DONE)


def batch_score(batch_id: int, judge: JudgeSettings,
                resend: Callable[[list[int], BaseException | None], object]
                = lambda batch_ids, why: None) -> bool:
    """Score a pending batch: claim it, take what the judgment cache has, ask the rest
    through the process's judge fleet client (judge.runner), store, mark it done.

    Claim-ahead: while the batch's last queries are out (fewer waiting than the fleet has
    slots), the run's next pending batch is claimed and its queries join the same loop, and
    so on for `judge.claim_ahead` seconds (SCORING_CLAIM_AHEAD_SECONDS in a worker), so that
    no slot idles between batches. The heartbeat covers every batch the loop holds.

    Returns False when this batch was not ours to score (claimed elsewhere, done, or its run
    no longer active). Raises FleetUnavailable after handing
    every open batch back uncounted; on any other error this batch stays claimed (for
    batch_failed) and those claimed ahead are handed back uncounted. The batches claimed
    ahead and handed back are passed to `resend`, with the error that stopped the loop (None
    when a batch claimed ahead could not be opened): their own messages may be gone.
    """
    if not batch_claim(batch_id):
        return False
    batch, jobs = _batch_open(batch_id)
    if jobs:
        _Scoring(batch, jobs, judge, resend).score()
    else:
        _batch_done(batch)
    return True


class _Scoring:
    """One task's query loop: its batch, then the batches claimed ahead of it."""

    def __init__(self, first: _Open, jobs: list[Job], judge: JudgeSettings, resend):
        self.first, self.jobs, self.judge, self.resend = first, jobs, judge, resend
        self.run = first.run
        self.urls = [url.rstrip("/") for url in self.run.judge_config.base_urls]
        self.open = {first.id: first}  # batches with queries out, by id
        self.batch_of: dict[Job, int] = {}
        self.answers: queue.SimpleQueue = queue.SimpleQueue()
        self.ahead_until = time.monotonic() + judge.claim_ahead
        self.stored_at = time.monotonic()
        self.cost = Counter()  # the queries' cost not yet added to the run's card

    def score(self) -> None:
        out = disabled_base_urls(self.urls)
        if len(out) == len(set(self.urls)):
            self._hand_back(FleetUnavailable(
                f"every endpoint of judge config {self.run.judge_config.name} is taken out "
                "by staff"))  # like an outage: the batch waits for an endpoint to come back
        config = self.run.judge_config
        try:
            fleet = fleet_runner.fleet(
                (tuple(self.urls), config.judge_model,
                 json.dumps(config.sampling, sort_keys=True), config.max_attempts,
                 settings.JUDGE_API_KEY, self.judge),
                functools.partial(_fleet, self.urls, config, self.judge))
            fleet_runner.run(fleet.exclude(out))
        except BaseException as exc:  # the lease server cannot be reached, say
            self._hand_back(exc)
        self._check(fleet)
        self.fleet = fleet
        self.feed = JobFeed(low_water=fleet.capacity)
        self._feed(self.first, self.jobs)
        self.jobs = []
        loop = fleet_runner.submit(ask_jobs(self.feed, fleet, self._on_answer))
        with Heartbeat(functools.partial(self._beat, fleet), settings.SCORING_HEARTBEAT_SECONDS):
            try:
                try:
                    self._drain(loop)
                finally:
                    self._cost_store()
            except _RunStopped:
                loop.cancel()
                fleet_runner.discard()
                self._stopped()
                return
            except BaseException as exc:
                loop.cancel()
                fleet_runner.discard()
                self._hand_back(exc)
            fleet_runner.call(self.feed.close)
            loop.result(timeout=60)

    def _check(self, fleet: JudgeFleet) -> None:
        """Before the run's queries go out: does each endpoint serve the config's model? Those
        that do not are taken out (and staff alerted); with none left, the batch is handed
        back like in an outage, to be tried again until an endpoint serves the model."""
        try:
            wrong = fleet_runner.run(fleet.check(max_age=settings.JUDGE_CHECK_SECONDS))
        except BaseException as exc:
            self._hand_back(exc)
        misconfigured_alert(self.run.judge_config, wrong)
        if all(e.misconfigured or e.excluded for e in fleet.endpoints):
            self._hand_back(FleetUnavailable(
                f"no endpoint of judge config {self.run.judge_config.name} can serve its "
                "queries: " + "; ".join(f"{url}: {why}" for url, why in wrong.items())))

    def _on_answer(self, job: Job, answer) -> None:  # in the fleet's loop
        self.answers.put((job, answer))

    def _feed(self, batch: _Open, jobs: list[Job]) -> None:
        for job in jobs:
            self.batch_of[job] = batch.id
        self.feed.low.clear()  # until the loop has them and says whether they are enough
        fleet_runner.call(self.feed.put, jobs)

    def _drain(self, loop: concurrent.futures.Future) -> None:
        checked = time.monotonic()
        lease_errors = self.fleet.lease_errors
        while self.open:
            if time.monotonic() - checked >= settings.SCORING_STOP_CHECK_SECONDS:
                checked = time.monotonic()
                if not ScoringRun.objects.filter(id=self.run.id,
                                                 status__in=ACTIVE_SCORING).exists():
                    raise _RunStopped()
                if self.fleet.lease_errors > lease_errors:
                    # The lease server went away (a Redis restarted, say): its leases, the
                    # release channel and this client's connections are in doubt. The batches
                    # go back, and the next task opens a fresh client.
                    raise LeaseError("the judge slot lease server could not be reached "
                                     "while queries were out")
            if self.feed.low.is_set():
                self._claim_ahead()
            try:
                job, answer = self.answers.get(timeout=0.1)
            except queue.Empty:
                if loop.done():
                    loop.result()  # raises what broke the loop
                    raise RuntimeError("the query loop ended with queries unanswered") from None
                self._store_progress()
                continue
            self.cost.update(tally(answer))
            if answer.lost:
                self._ask_again(job, answer)
                continue
            batch = self.open[self.batch_of.pop(job)]
            batch.add(job, answer)
            if not batch.left:
                _batch_done(batch)
                del self.open[batch.id]
            self._store_progress()

    def _ask_again(self, job: Job, answer) -> None:
        """A query lost on our side (judge.fleet.LOST_KINDS) is no vote: it goes to the back of
        the loop's queue, to be asked again after the queries waiting (by then, often of
        another endpoint), and counts against the run's SCORING_MAX_LOST_SHARE; past it the
        run fails on our side (scoring.runs.run_lost) and the loop stops, its answers kept."""
        if not run_lost(self.run.id, 1, answer.error):
            for batch in self.open.values():
                batch.store()
            raise _RunStopped()
        fleet_runner.call(self.feed.put, [job])

    def _store_progress(self) -> None:
        """Store the answers so far every SCORING_PROGRESS_SECONDS, so that progress (and
        its ETA) counts queries as they are answered, not batches as they end."""
        now = time.monotonic()
        if now - self.stored_at < settings.SCORING_PROGRESS_SECONDS:
            return
        self.stored_at = now
        for batch in self.open.values():
            if batch.records:
                batch.store()
        self._cost_store()

    def _cost_store(self) -> None:
        """Add the cost of the queries answered since the last time to the run's card (a
        database that fails here loses no answer: the card is counted, not the votes)."""
        counted, self.cost = self.cost, Counter()
        try:
            cost_add(self.run.id, counted)
        except DatabaseError:
            log.exception("the cost of run %s could not be added to its card", self.run.id)

    def _claim_ahead(self) -> None:
        if time.monotonic() > self.ahead_until:
            return
        batch_id = batch_claim_next(self.run.id)
        if batch_id is None:
            self.ahead_until = 0.0  # none left: stop looking
            return
        try:
            batch, jobs = _batch_open(batch_id)
        except Exception:
            # Its own task will try it again, and count it against the batch.
            log.exception("batch %s claimed ahead could not be opened; handed back", batch_id)
            connection_replace_broken()  # a connection the server cut hands back nothing
            RunBatch.objects.filter(id=batch_id, status=RunBatch.Status.CLAIMED) \
                .update(status=RunBatch.Status.PENDING)
            self.resend([batch_id], None)
            self.ahead_until = 0.0
            return
        if not jobs:
            _batch_done(batch)
            return
        self.open[batch.id] = batch
        self._feed(batch, jobs)

    def _beat(self, fleet: JudgeFleet) -> None:  # in the heartbeat's thread
        RunBatch.objects.filter(id__in=tuple(self.open), status=RunBatch.Status.CLAIMED) \
            .update(heartbeat_at=timezone.now())
        # Staff taking an endpoint out (or putting it back) reaches the loop within a beat.
        fleet_runner.submit(fleet.exclude(disabled_base_urls(self.urls)))
        misconfigured_alert(self.run.judge_config, fleet.misconfigured())

    def _stopped(self) -> None:
        """The run was cancelled (or failed) while its queries were out: they were cut
        short, and the batches stay as they are (a run no longer active claims nothing)."""
        log.warning("run %s stopped while scoring; its queries in flight were cut short",
                    self.run.id)

    def _hand_back(self, exc: BaseException):
        """Keep the answers so far and hand the open batches back (this task's own batch
        only on an outage: any other error is counted against it by batch_failed); then
        raise `exc`. A database connection that broke is replaced first, so that a
        database hiccup costs this batch a retry and strands none claimed ahead."""
        connection_replace_broken()
        ahead = []
        for batch in self.open.values():
            batch.store()
            if batch is self.first and not isinstance(exc, FleetUnavailable):
                continue
            # Not counted: an outage, or another batch's fault, is not this batch's.
            RunBatch.objects.filter(id=batch.id, status=RunBatch.Status.CLAIMED).update(
                status=RunBatch.Status.PENDING, claims=F("claims") - 1)
            if batch is not self.first:
                ahead.append(batch.id)
        if ahead:
            self.resend(ahead, exc)
        raise exc


class _RunStopped(Exception):
    """The run is no longer active (cancelled, failed): stop asking its queries."""


ACTIVE_SCORING = (Status.QUEUED, Status.SCORING)


def _fleet(urls: list[str], config: JudgeConfig, judge: JudgeSettings) -> JudgeFleet:
    return JudgeFleet(urls, model=config.judge_model, concurrency=judge.concurrency,
                      timeout=judge.timeout, max_attempts=config.max_attempts,
                      sampling=config.sampling, down_wait=judge.down_wait,
                      api_key=settings.JUDGE_API_KEY or None,
                      leases=fleet_leases(judge.redis_url, ttl=judge.lease_ttl),
                      max_inflight_bytes=judge.max_inflight_bytes,
                      unparseable_retries=settings.JUDGE_UNPARSEABLE_RETRIES,
                      audio_cache_bytes=settings.JUDGE_AUDIO_CACHE_MB * 2**20)


def misconfigured_alert(config: JudgeConfig, wrong: dict[str, str]) -> None:
    """Tell staff of each endpoint that cannot serve `config`'s queries (once an hour each)."""
    for url, why in wrong.items():
        staff_alert(f"judge endpoint {url} is misconfigured",
                    f"The judge endpoint {url} of judge config {config.name} {why}. It is "
                    "taken out: runs under this config wait (nothing is scored wrong) and go "
                    "on by themselves once it serves the config's model "
                    f"{config.judge_model!r}. See the fleet page.",
                    key=f"judge-misconfigured:{url}:{why}")


def run_endpoints(run: ScoringRun) -> list[str]:
    """The endpoints a run's queries go to: its judge config's, as they are now, less those
    staff have taken out (possibly none left)."""
    urls = [url.rstrip("/") for url in run.judge_config.base_urls]
    out = disabled_base_urls(urls)
    return [url for url in urls if url not in out]
