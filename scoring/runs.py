"""Scoring runs in the database: create, claim and score batches, aggregate, sweep.

Background work follows one pattern: ids in, a conditional UPDATE to claim a row (zero rows
updated means someone else has it, or it is done: do nothing), idempotent writes under unique
constraints, and a sweeper that hands back work whose heartbeat went stale.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import itertools
import json
import logging
import operator
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from psycopg.types.json import Jsonb

from config.alerts import staff_alert
from config.heartbeat import Heartbeat
from judge.fleet import REFUSED, FleetUnavailable, JudgeFleet
from judge.leases import fleet_leases
from judge.runner import fleet_runner
from judge.selectors import disabled_base_urls
from scoring import media
from scoring.boards import board_changed
from scoring.jobs import JobFeed, ask_jobs
from scoring.judge_configs import judge_config_current
from scoring.kinds import Job, Kind, Media, file_sha256, get_kind
from scoring.kinds.base import answer_record
from scoring.kinds.files import resolve_audio
from scoring.models import (
    Answer,
    Benchmark,
    Item,
    ItemResult,
    JudgeConfig,
    RunBatch,
    RunVector,
    ScoringRun,
    SliceResult,
)

log = logging.getLogger(__name__)
Status = ScoringRun.Status


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


def _stamp(times: dict, status: str) -> dict:
    return {**times, status: timezone.now().isoformat()}


def _move(run_id: int, source: list[str], target: str, **fields) -> bool:
    """Conditional status change: True when this caller made it."""
    run = ScoringRun.objects.only("status_times").get(id=run_id)
    return bool(ScoringRun.objects.filter(id=run_id, status__in=source).update(
        status=target, status_times=_stamp(run.status_times, target), **fields))


# --- creating a run --------------------------------------------------------------------


def _items(benchmark: Benchmark, keys) -> list[Item]:
    return list(Item.objects.filter(benchmark=benchmark, key__in=list(keys))
                .prefetch_related("criteria").order_by("position"))


def run_jobs(*, kind: Kind, benchmark: Benchmark, items: list[Item], outputs: dict[str, str],
             audio_root: str, rounds: int, seed: int, options: dict) -> list[Job]:
    """The judge queries of `items` (those with an output), as the kind makes them: outputs
    resolve against the run's folder, input audio against the benchmark's own root (never
    against an upload)."""
    outputs_root, inputs_root = media.local_root(audio_root), Path(benchmark.audio_root)
    return kind.jobs([kind.from_rows(item.as_rows()) for item in items], outputs,
                     rounds=rounds, seed=seed, options=options,
                     output_path=lambda path: str(resolve_audio(outputs_root, path)),
                     input_path=lambda path: str(resolve_audio(inputs_root, path)))


def run_workload(*, benchmark: Benchmark, outputs: dict[str, str], config: JudgeConfig,
                 options: dict, audio_root: str = "") -> tuple[list[str], list[Job]]:
    """What scoring these outputs asks of the judge: the keys of the items with a query, in
    file order, and the queries (before the judgment cache)."""
    jobs = run_jobs(kind=get_kind(benchmark.kind), benchmark=benchmark,
                    items=_items(benchmark, outputs), outputs=outputs, audio_root=audio_root,
                    rounds=config.rounds, seed=config.seed, options=options)
    return list(dict.fromkeys(job.item for job in jobs)), jobs


def cached_count(*, benchmark: Benchmark, outputs: dict[str, str], audio_root: str,
                 digests: dict[str, str], config: JudgeConfig, options: dict) -> tuple[int, int]:
    """(answers a run of these outputs under `config` needs, how many of them the judgment
    cache already has): the dry run of a rescore, by the very keys a batch looks up."""
    items = _items(benchmark, outputs)
    jobs = run_jobs(kind=get_kind(benchmark.kind), benchmark=benchmark, items=items,
                    outputs=outputs, audio_root=audio_root, rounds=config.rounds,
                    seed=config.seed, options=options)
    digest = _digests(audio_root=audio_root, outputs=outputs, digests=digests,
                      benchmark=benchmark, items=items)
    keys = [job.content_key(config=str(config.id), digest=digest) for job in jobs]
    found = set()
    for start in range(0, len(keys), 5000):
        found.update(Answer.objects.filter(content_key__in=keys[start:start + 5000],
                                           error=None, cached=False)
                     .values_list("content_key", flat=True).distinct())
    return len(jobs), sum(1 for key in keys if key in found)


def run_create(*, benchmark: Benchmark, audio_root: str, outputs: dict[str, str],
               missing: dict[str, str], config: JudgeConfig | None = None,
               options: dict | None = None,
               purpose: str = ScoringRun.Purpose.SUBMISSION, label: str = "") -> ScoringRun:
    """A queued run with its batches under `config` (by default the benchmark's current judge
    config); the caller enqueues them after commit."""
    kind = get_kind(benchmark.kind)
    config = config or judge_config_current(benchmark)
    options = options or {}
    keys, jobs = run_workload(benchmark=benchmark, outputs=outputs, config=config,
                              options=options, audio_root=audio_root)
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config, purpose=purpose, label=label,
        audio_root=audio_root,
        outputs=outputs, missing=missing,
        digests={key: kind.outputs.digest(str(media.local_root(audio_root)), outputs[key])
                 for key in keys},
        judge_model=config.judge_model, base_urls=config.base_urls,
        prompt_sha256=config.prompt_sha256, rounds=config.rounds, seed=config.seed,
        sampling=config.sampling, max_attempts=config.max_attempts, status=Status.QUEUED,
        status_times=_stamp({}, Status.QUEUED), total_queries=len(jobs), options=options,
    )
    size = settings.SCORING_BATCH_ITEMS
    RunBatch.objects.bulk_create([
        RunBatch(run=run, index=i, item_keys=keys[start:start + size])
        for i, start in enumerate(range(0, len(keys), size))
    ])
    return run


def pending_batch_ids(run_id: int) -> list[int]:
    return list(RunBatch.objects.filter(run_id=run_id, status=RunBatch.Status.PENDING)
                .values_list("id", flat=True))


# --- scoring one batch -----------------------------------------------------------------


def batch_claim(batch_id: int) -> bool:
    now = timezone.now()
    return bool(RunBatch.objects.filter(
        id=batch_id, status=RunBatch.Status.PENDING,
        run__status__in=[Status.QUEUED, Status.SCORING],
    ).update(status=RunBatch.Status.CLAIMED, claimed_at=now, heartbeat_at=now,
             claims=F("claims") + 1))


def batch_claim_next(run_id: int) -> int | None:
    """Claim the run's first pending batch (ahead of its own message, whose task then finds
    it taken); its id, or None when the run has none left to claim."""
    for batch_id in RunBatch.objects.filter(run_id=run_id, status=RunBatch.Status.PENDING) \
            .order_by("index").values_list("id", flat=True)[:8]:
        if batch_claim(batch_id):
            return batch_id
    return None


def _digests(*, audio_root: str, outputs: dict[str, str], digests: dict[str, str],
             benchmark: Benchmark, items: list[Item]):
    """sha256 of each audio file a run's queries may send, by its absolute path: outputs
    from the run's digests, inputs from their items (hashed here when the import could not)."""
    known = {str(resolve_audio(media.local_root(audio_root), path)): digests[key]
             for key, path in outputs.items() if key in digests}
    root = Path(benchmark.audio_root)
    for item in items:
        for path, digest in zip(item.media, item.media_sha256, strict=False):
            known[str(resolve_audio(root, path))] = digest

    def digest(media: Media) -> str:
        if media.path not in known:
            known[media.path] = file_sha256(media.path)
        return known[media.path]

    return digest


def _from_cache(run: ScoringRun, wanted: dict[str, Job], criterion_ids: dict) -> list[Answer]:
    """Answers to `wanted` (content key -> job) that an earlier run already has for the very
    same request under the same judge config: copies, marked cached, that cost no judge
    query. Each is read again through this job's own parse and fields, so the verdict is
    this criterion's. Answers that failed (an error, no reply) are never reused.

    Only from runs whose answers tell this run's author nothing new, since a hit is quicker
    than a judge query and the speed would show that someone sent the same audio: baselines,
    published runs (finished, of a public submission not hidden) and the author's own runs
    (a run of no submission, e.g. from the command line, counts as its own kind of author).
    The reverse names (`submissions`) are the ORM's; scoring imports nothing of them."""
    if not wanted:
        return []
    found: dict[str, Answer] = {}
    owners = [o for o in ScoringRun.objects.filter(id=run.id)
              .values_list("submissions__owner", flat=True) if o is not None]
    sources = ScoringRun.objects.filter(
        Q(purpose=ScoringRun.Purpose.BASELINE)
        | Q(status=ScoringRun.Status.FINISHED, submissions__public=True,
            submissions__hidden=False)
        | (Q(submissions__owner__in=owners) if owners else Q(submissions=None)))
    # Originals only: every copy repeats its original, whose run it names as its source.
    earlier = (Answer.objects.filter(content_key__in=list(wanted), error=None, cached=False,
                                     run__in=sources.values("id"))
               .order_by("id")
               .values_list("content_key", "raw", "run_id", "run__simulated"))
    now = timezone.now()
    for key, raw, source, simulated in earlier:
        job = wanted[key]
        if key in found or raw is None:
            continue
        try:
            value = job.parse(raw)
        except ValueError:
            continue
        found[key] = Answer(
            run_id=run.id, criterion_id=criterion_ids[(job.item, job.criterion)],
            round=job.round, content_key=key, cached=True, source_run_id=source, attempts=0,
            raw=raw, answered_at=now, **job.fields(value))
        run.simulated = run.simulated or simulated
    return list(found.values())


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
        self.records.append(_answer(self.run, self.criterion_ids[(job.item, job.criterion)],
                                    self.keys[job], answer_record(job, answer)))
        self.simulated = self.simulated or answer.simulated
        self.left -= 1

    def store(self) -> None:
        _store(self.run, self.records, [self.simulated])
        self.records = []


def _batch_open(batch_id: int) -> tuple[_Open, list[Job]]:
    """A batch just claimed: its run moves to scoring, what the judgment cache has is stored,
    and the queries left to ask are returned."""
    batch = RunBatch.objects.select_related("run__benchmark", "run__judge_config").get(
        id=batch_id)
    run = batch.run
    _move(run.id, [Status.QUEUED], Status.SCORING)
    items = _items(run.benchmark, batch.item_keys)
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
                               digest=_digests(audio_root=run.audio_root, outputs=run.outputs,
                                               digests=run.digests, benchmark=run.benchmark,
                                               items=items))
    keys = {job: key_of(job) for job in jobs}
    run.simulated = False
    cached = _from_cache(run, {keys[job]: job for job in jobs}, criterion_ids)
    answers_store(cached)
    if run.simulated:
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)
    hit = {(a.criterion_id, a.round) for a in cached}
    jobs = [job for job in jobs
            if (criterion_ids[(job.item, job.criterion)], job.round) not in hit]
    return _Open(batch_id, run, criterion_ids, keys, left=len(jobs)), jobs


def _batch_done(batch: _Open) -> None:
    batch.store()
    RunBatch.objects.filter(id=batch.id, status=RunBatch.Status.CLAIMED) \
        .update(status=RunBatch.Status.DONE)


def batch_score(batch_id: int, judge: JudgeSettings,
                resend: Callable[[list[int]], object] = lambda batch_ids: None) -> bool:
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
    ahead and handed back are passed to `resend`: their own messages may be gone.
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
                self._drain(loop)
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
                    raise FleetUnavailable("the judge slot lease server could not be reached "
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
            batch = self.open[self.batch_of.pop(job)]
            batch.add(job, answer)
            if not batch.left:
                _batch_done(batch)
                del self.open[batch.id]
            self._store_progress()

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
            RunBatch.objects.filter(id=batch_id, status=RunBatch.Status.CLAIMED) \
                .update(status=RunBatch.Status.PENDING)
            self.resend([batch_id])
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
            self.resend(ahead)
        raise exc


def connection_replace_broken() -> None:
    """Close this thread's database connection if a database error broke it (it was
    terminated, say), so that the next query opens a new one instead of failing too."""
    if connection.connection is not None and connection.errors_occurred \
            and not connection.in_atomic_block and not connection.is_usable():
        log.warning("the database connection broke; opening a new one")
        connection.close()


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
                      unparseable_retries=settings.JUDGE_UNPARSEABLE_RETRIES)


def misconfigured_alert(config: JudgeConfig, wrong: dict[str, str]) -> None:
    """Tell staff of each endpoint that cannot serve `config`'s queries (once an hour each)."""
    for url, why in wrong.items():
        staff_alert(f"judge endpoint {url} is misconfigured",
                    f"The judge endpoint {url} of judge config {config.name} {why}. It is "
                    "taken out: runs under this config wait (nothing is scored wrong) and go "
                    "on by themselves once it serves the config's model "
                    f"{config.judge_model!r}. See the fleet page.",
                    key=f"judge-misconfigured:{url}:{why}")


ANSWER_FIELDS = ("choices", "verdict", "choice", "reason", "raw", "error", "error_kind",
                 "endpoint", "attempts", "latency_ms", "score")


def _answer(run: ScoringRun, criterion_id: int, content_key: str, record: dict) -> Answer:
    return Answer(run_id=run.id, criterion_id=criterion_id, round=record["round"],
                  content_key=content_key, answered_at=timezone.now(),
                  **{name: record.get(name) for name in ANSWER_FIELDS})


def run_endpoints(run: ScoringRun) -> list[str]:
    """The endpoints a run's queries go to: its judge config's, as they are now, less those
    staff have taken out (possibly none left)."""
    urls = [url.rstrip("/") for url in run.judge_config.base_urls]
    out = disabled_base_urls(urls)
    return [url for url in urls if url not in out]


def _store(run: ScoringRun, records: list[Answer], simulated: list) -> None:
    answers_store(records)
    if any(simulated):
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)


# Every column of an answer the pipeline writes (all but the id).
STORED_FIELDS = ("run_id", "criterion_id", "round", "content_key", "cached", "source_run_id",
                 "answered_at", *ANSWER_FIELDS)


def answers_store(answers: list[Answer]) -> None:
    """Store answers, leaving out any the run already has (a batch scored twice).

    On PostgreSQL: COPY into a temporary table, then one INSERT ... ON CONFLICT DO NOTHING
    from it (COPY itself cannot skip conflicts). Elsewhere: bulk_create(ignore_conflicts).
    """
    if not answers:
        return
    if connection.vendor != "postgresql":
        Answer.objects.bulk_create(answers, ignore_conflicts=True, batch_size=2000)
        return
    fields = [Answer._meta.get_field(name.removesuffix("_id")) for name in STORED_FIELDS]
    columns = ", ".join(field.column for field in fields)
    values = operator.attrgetter(*(field.attname for field in fields))
    jsons = [i for i, field in enumerate(fields) if field.get_internal_type() == "JSONField"]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE answer_load ON COMMIT DROP AS "
                       f"SELECT {columns} FROM {Answer._meta.db_table} WITH NO DATA")
        with cursor.copy(f"COPY answer_load ({columns}) FROM STDIN") as copy:
            for answer in answers:
                row = list(values(answer))
                for i in jsons:
                    row[i] = Jsonb(row[i])
                copy.write_row(row)
        cursor.execute(f"INSERT INTO {Answer._meta.db_table} ({columns}) SELECT {columns} "
                       "FROM answer_load ON CONFLICT DO NOTHING")
        cursor.execute("DROP TABLE answer_load")


def batch_failed(batch_id: int, why: str) -> bool:
    """A batch broke (not a fleet outage): hand it back, or fail its run once it has been
    tried SCORING_MAX_CLAIMS times. True when it should be tried again. A database
    connection that broke with the batch is replaced first."""
    connection_replace_broken()
    batch = RunBatch.objects.get(id=batch_id)
    if batch.claims >= settings.SCORING_MAX_CLAIMS:
        run_fail(batch.run_id, f"failed on our side: scoring batch {batch.index} broke "
                               f"{batch.claims} times; last error: {why}")
        return False
    RunBatch.objects.filter(id=batch_id, status=RunBatch.Status.CLAIMED) \
        .update(status=RunBatch.Status.PENDING)
    return True


def run_try_aggregate(run_id: int) -> bool:
    """Move a run to aggregating once every batch is done; True for the caller that did."""
    if RunBatch.objects.filter(run_id=run_id).exclude(status=RunBatch.Status.DONE).exists():
        return False
    return _move(run_id, [Status.QUEUED, Status.SCORING], Status.AGGREGATING)


# --- aggregation -----------------------------------------------------------------------


def answer_groups(run: ScoringRun, item_ids=None) -> Iterator[tuple[int, dict]]:
    """A run's answers (of `item_ids`' items only, when given) as records, streamed in
    benchmark order: (item id, {(criterion index, round): record}) for each item with
    answers."""
    answers = Answer.objects.filter(run=run)
    if item_ids is not None:
        answers = answers.filter(criterion__item_id__in=list(item_ids))
    answers = (answers.select_related("criterion")
               .order_by("criterion__item__position", "criterion__index", "round"))
    if item_ids is None:  # a whole run's, streamed; a few items' (a page) in one round trip
        answers = answers.iterator(chunk_size=5000)
    for item_id, group in itertools.groupby(answers, key=lambda a: a.criterion.item_id):
        yield item_id, {(a.criterion.index, a.round): _record_of(a) for a in group}


def _record_of(answer: Answer) -> dict:
    return {"criterion": answer.criterion.index, "round": answer.round,
            **{name: getattr(answer, name) for name in ANSWER_FIELDS}}


def run_aggregate(run_id: int) -> bool:
    """Per-item results and slices from the answers, by the kind's rules; the run is then
    finished."""
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    if run.status != Status.AGGREGATING:
        return False
    kind = get_kind(run.benchmark.kind)
    answers = dict(answer_groups(run))
    missing = run.total_queries - sum(len(a) for a in answers.values())
    if missing:
        run_fail(run.id, f"failed on our side: {missing} judge answers are missing")
        return False
    refused = [record for group in answers.values() for record in group.values()
               if record["error_kind"] == REFUSED]
    if len(refused) > settings.SCORING_MAX_REFUSED_SHARE * run.total_queries:
        _refused_fail(run, refused)
        return False
    items = list(Item.objects.filter(benchmark=run.benchmark).prefetch_related("criteria")
                 .order_by("position"))
    rows = [kind.item_result(kind.from_rows(item.as_rows()), run.outputs.get(item.key),
                             answers.get(item.id, {})) for item in items]
    results = [item_result_row(kind, run=run, item=item, position=item.position,
                               missing=row["missing"], **kind.item_columns(row))
               for item, row in zip(items, rows, strict=True)]
    slices = _slices(run, kind.summarize(rows), kind.intervals(rows, seed=run.seed))
    with transaction.atomic():
        ItemResult.objects.filter(run=run).delete()
        SliceResult.objects.filter(run=run).delete()
        ItemResult.objects.bulk_create(results, batch_size=1000)
        SliceResult.objects.bulk_create(slices, batch_size=1000)
        run_vector_store(run, kind, rows)
        _move(run.id, [Status.AGGREGATING], Status.FINISHED, refused_queries=len(refused))
        board_changed(run.benchmark_id)
    return True


def _refused_fail(run: ScoringRun, refused: list[dict]) -> None:
    """Too many queries refused by the judge to publish the run: it fails on our side, its
    author told what the judge refused, staff alerted. A rescore once the judge takes these
    queries asks them again (refused answers are never reused)."""
    share = len(refused) / run.total_queries
    reasons = collections.Counter(record["error"] for record in refused).most_common(1)
    why = (f"The judge refused {len(refused):,} of {run.total_queries:,} queries "
           f"({share:.1%}; a run is published with at most "
           f"{settings.SCORING_MAX_REFUSED_SHARE:.0%} refused), so these figures would not be "
           f"its judgment of your outputs. It said: {reasons[0][0]} This is a limit of our "
           "judge deployment, not a fault in your upload: no quota was charged, staff have "
           "been told and will rescore it once the judge is fixed.")
    if _move(run.id, [Status.AGGREGATING], Status.FAILED, error=why,
             refused_queries=len(refused)):
        staff_alert(f"run {run.id}: the judge refused {share:.1%} of its queries", why,
                    key=f"run-refused:{run.id}")


def item_result_row(kind: Kind, **columns) -> ItemResult:
    """An ItemResult of these columns, with whether the explorer counts it as failed."""
    return ItemResult(failed=kind.failed(columns), **columns)


def run_vector_store(run: ScoringRun, kind: Kind, rows: list[dict]) -> None:
    """Keep the run's per-item values for the paired bootstrap of rank ranges."""
    RunVector.objects.update_or_create(run=run, defaults={
        "names": list(kind.vector_names),
        "data": RunVector.pack([kind.item_vector(row) for row in rows])})


def _slices(run: ScoringRun, summary: dict, intervals: dict) -> list[SliceResult]:
    def row(dimension, bucket, figures, bounds):
        return SliceResult(run=run, dimension=dimension, bucket=bucket, n=figures["n"],
                           values=figures, intervals={metric: list(interval) for metric,
                                                      interval in (bounds or {}).items()
                                                      if interval is not None})

    rows = [row(SliceResult.OVERALL, "", summary["overall"], intervals.get("overall"))]
    for dimension, buckets in summary.items():
        if dimension != "overall":
            rows.extend(row(dimension, bucket, figures,
                            intervals.get(dimension, {}).get(bucket))
                        for bucket, figures in buckets.items())
    return rows


# --- failure, cancellation and the sweeper ---------------------------------------------


def run_fail(run_id: int, why: str) -> bool:
    """Fail an active run, on our side (the author's mistakes never reach scoring): staff
    are alerted, and the run can be resumed (run_retry)."""
    if not _move(run_id, list(ScoringRun.ACTIVE), Status.FAILED, error=why):
        return False
    staff_alert(f"scoring run {run_id} failed", f"Scoring run {run_id} failed: {why}\n"
                "Its answers are kept; retry it from the staff submissions page once the "
                "cause is fixed.", key=f"run-failed:{run_id}")
    return True


def run_retry(run_id: int) -> bool:
    """Resume a failed run: its answers kept but those the judge refused (asked again: a run
    that failed for its refusals is retried once the judge takes them), its batches not done
    (every batch, if all are done yet answers are missing: each then asks only what it lacks)
    pending again with their claims reset, and the run queued. True when this caller resumed
    it; it then enqueues the run (scoring.tasks.enqueue_run)."""
    with transaction.atomic():
        if not _move(run_id, [Status.FAILED], Status.QUEUED, error="", refused_queries=0):
            return False
        Answer.objects.filter(run_id=run_id, error_kind=REFUSED).delete()
        batches = RunBatch.objects.filter(run_id=run_id)
        undone = batches.exclude(status=RunBatch.Status.DONE)
        if undone.exists() or Answer.objects.filter(run_id=run_id).count() >= \
                ScoringRun.objects.values_list("total_queries", flat=True).get(id=run_id):
            batches = undone
        batches.update(status=RunBatch.Status.PENDING, claims=0)
    return True


def run_cancel(run_id: int) -> bool:
    return _move(run_id, [Status.QUEUED, Status.SCORING], Status.CANCELLED)


def sweep(now=None) -> tuple[list[int], list[int]]:
    """Work to hand out again: (batch ids, run ids to aggregate).

    A claimed batch whose heartbeat is older than SCORING_STALE_SECONDS lost its worker: it
    goes back to pending and is listed. A pending batch queued longer ago than
    SCORING_REQUEUE_SECONDS (its message lost), a run stuck aggregating, and a run whose
    batches are all done but that never moved on are listed too, so nothing is stranded.
    """
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.SCORING_STALE_SECONDS)
    lost = now - timedelta(seconds=settings.SCORING_REQUEUE_SECONDS)
    active = [Status.QUEUED, Status.SCORING]
    batch_ids = [
        batch_id for batch_id in RunBatch.objects.filter(
            status=RunBatch.Status.CLAIMED, heartbeat_at__lt=stale).values_list("id", flat=True)
        if RunBatch.objects.filter(id=batch_id, status=RunBatch.Status.CLAIMED,
                                   heartbeat_at__lt=stale)
        .update(status=RunBatch.Status.PENDING)
    ]
    if batch_ids:
        log.warning("sweeper: batch(es) %s lost their worker; handed back", batch_ids)
    for batch in RunBatch.objects.filter(id__in=batch_ids,
                                         claims__gte=settings.SCORING_MAX_CLAIMS):
        run_fail(batch.run_id, f"failed on our side: scoring batch {batch.index} lost its "
                               f"worker {batch.claims} "
                               "times (a worker crash or a kill each time)")
    batch_ids += RunBatch.objects.filter(
        Q(enqueued_at__lt=lost) | Q(enqueued_at=None, run__created_at__lt=lost),
        status=RunBatch.Status.PENDING, run__status__in=active,
    ).exclude(id__in=batch_ids).values_list("id", flat=True)
    run_ids = [
        run.id for run in ScoringRun.objects.filter(status=Status.AGGREGATING)
        if run.status_times.get(Status.AGGREGATING, now.isoformat()) < stale.isoformat()
    ]
    run_ids += [run_id for run_id in ScoringRun.objects.filter(status__in=active)
                .values_list("id", flat=True) if run_try_aggregate(run_id)]
    return batch_ids, run_ids


def batch_queues(batch_ids: list[int]) -> dict[int, str]:
    """batch id -> the Celery queue its run's purpose calls for."""
    queues = {ScoringRun.Purpose.SUBMISSION: settings.CELERY_TASK_DEFAULT_QUEUE}
    return {batch_id: queues.get(purpose, settings.SCORING_RESCORE_QUEUE)
            for batch_id, purpose in
            RunBatch.objects.filter(id__in=batch_ids).values_list("id", "run__purpose")}


def batches_enqueued(batch_ids: list[int]) -> None:
    RunBatch.objects.filter(id__in=batch_ids).update(enqueued_at=timezone.now())
