"""Scoring runs in the database: create, claim and score batches, aggregate, sweep.

Background work follows one pattern: ids in, a conditional UPDATE to claim a row (zero rows
updated means someone else has it, or it is done: do nothing), idempotent writes under unique
constraints, and a sweeper that hands back work whose heartbeat went stale.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from judge.fleet import FleetUnavailable, JudgeFleet
from judge.selectors import disabled_base_urls
from scoring.jobs import TextJob, ask_jobs
from scoring.judge_configs import judge_config_current
from scoring.kinds import get_kind
from scoring.models import (
    Answer,
    Benchmark,
    Item,
    ItemResult,
    JudgeConfig,
    RunBatch,
    ScoringRun,
    SliceResult,
)
from scoring.scorer import AudioCache, ask_all

log = logging.getLogger(__name__)
Status = ScoringRun.Status


@dataclass(frozen=True)
class JudgeSettings:
    """How a worker talks to the judge fleet; what is asked, and of which endpoints, comes
    from the run's judge config."""

    concurrency: int
    timeout: float
    down_wait: float

    @classmethod
    def from_settings(cls) -> JudgeSettings:
        return cls(concurrency=settings.JUDGE_CONCURRENCY, timeout=settings.JUDGE_TIMEOUT,
                   down_wait=settings.JUDGE_DOWN_WAIT)


def _stamp(times: dict, status: str) -> dict:
    return {**times, status: timezone.now().isoformat()}


def _move(run_id: int, source: list[str], target: str, **fields) -> bool:
    """Conditional status change: True when this caller made it."""
    run = ScoringRun.objects.only("status_times").get(id=run_id)
    return bool(ScoringRun.objects.filter(id=run_id, status__in=source).update(
        status=target, status_times=_stamp(run.status_times, target), **fields))


# --- creating a run --------------------------------------------------------------------


def run_workload(*, benchmark: Benchmark, outputs: dict[str, str], config: JudgeConfig,
                 options: dict | None = None) -> tuple[list[str], int]:
    """What scoring these outputs asks of the judge: the keys of the items with a query, in
    file order, and the number of queries (before the judgment cache)."""
    kind = get_kind(benchmark.kind)
    keys = list(Item.objects.filter(benchmark=benchmark, key__in=list(outputs))
                .order_by("position").values_list("key", flat=True))
    if kind.text_jobs is not None:  # only the items with a judge query are batched (AIR-Bench)
        items = Item.objects.filter(benchmark=benchmark, key__in=keys).prefetch_related(
            "criteria").order_by("position")
        jobs = kind.text_jobs([kind.from_rows(i.as_rows()) for i in items], outputs,
                              options or {})
        asked = {job.key for job in jobs}
        return [key for key in keys if key in asked], len(jobs)
    n_criteria = Item.objects.filter(benchmark=benchmark, key__in=keys).aggregate(
        n=Count("criteria"))["n"] or 0
    return keys, n_criteria * config.rounds


def run_create(*, benchmark: Benchmark, audio_root: str, outputs: dict[str, str],
               missing: dict[str, str], config: JudgeConfig | None = None,
               options: dict | None = None,
               purpose: str = ScoringRun.Purpose.SUBMISSION, label: str = "") -> ScoringRun:
    """A queued run with its batches under `config` (by default the benchmark's current judge
    config); the caller enqueues them after commit."""
    kind = get_kind(benchmark.kind)
    config = config or judge_config_current(benchmark)
    keys, total = run_workload(benchmark=benchmark, outputs=outputs, config=config,
                               options=options)
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config, purpose=purpose, label=label,
        audio_root=audio_root,
        outputs=outputs, missing=missing,
        digests={key: kind.output_digest(audio_root, outputs[key]) for key in keys},
        judge_model=config.judge_model, base_urls=config.base_urls,
        prompt_sha256=config.prompt_sha256, rounds=config.rounds, seed=config.seed,
        sampling=config.sampling, max_attempts=config.max_attempts, status=Status.QUEUED,
        status_times=_stamp({}, Status.QUEUED), total_queries=total, options=options or {},
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


class _Heartbeat(threading.Thread):
    """Touches a claimed batch's heartbeat while its queries are in flight."""

    def __init__(self, batch_id: int):
        super().__init__(daemon=True)
        self.batch_id = batch_id
        self.stopped = threading.Event()

    def run(self):
        try:
            while not self.stopped.wait(settings.SCORING_HEARTBEAT_SECONDS):
                RunBatch.objects.filter(id=self.batch_id, status=RunBatch.Status.CLAIMED) \
                    .update(heartbeat_at=timezone.now())
        finally:
            connection.close()

    def stop(self):
        self.stopped.set()
        self.join(timeout=30)


def batch_claim(batch_id: int) -> bool:
    now = timezone.now()
    return bool(RunBatch.objects.filter(
        id=batch_id, status=RunBatch.Status.PENDING,
        run__status__in=[Status.QUEUED, Status.SCORING],
    ).update(status=RunBatch.Status.CLAIMED, claimed_at=now, heartbeat_at=now,
             claims=F("claims") + 1))


def _batch_samples(run: ScoringRun, keys: list[str]):
    kind = get_kind(run.benchmark.kind)
    items = (Item.objects.filter(benchmark_id=run.benchmark_id, key__in=keys)
             .prefetch_related("criteria").order_by("position"))
    samples, criterion_ids = [], {}
    for item in items:
        samples.append(kind.from_rows(item.as_rows()))
        criterion_ids.update({(item.key, c.index): c.id for c in item.ordered_criteria()})
    return samples, criterion_ids


def _answer(run: ScoringRun, criterion_id: int, record: dict, now) -> Answer:
    return Answer(
        run_id=run.id, criterion_id=criterion_id, round=record["round"],
        choices=record["choices"], correct_letter=record["correct_letter"],
        choice=record["choice"], correct=record["correct"], reason=record["reason"],
        raw=record["raw"], error=record["error"], endpoint=record["endpoint"],
        attempts=record["attempts"], latency_ms=record["latency_ms"],
        score=record.get("score"),
        content_sha256=run.digests.get(record["id"], ""), answered_at=now,
    )


CACHE_COPIED = ("choices", "correct_letter", "choice", "correct", "reason", "raw", "score")


def _from_cache(run: ScoringRun, wanted: dict[tuple[int, str, int], tuple]) -> list[Answer]:
    """Answers to `wanted` (criterion id, output digest, round) that an earlier run under the
    same judge config already has: copies, marked cached, that cost no judge query. Answers
    that failed (an error, no reply) are never reused."""
    if not wanted:
        return []
    found: dict[tuple, Answer] = {}
    earlier = (Answer.objects.filter(
        run__judge_config_id=run.judge_config_id, error=None,
        criterion_id__in={key[0] for key in wanted},
        content_sha256__in={key[1] for key in wanted if key[1]},
    ).exclude(run_id=run.id).values("criterion_id", "content_sha256", "round",
                                     "run__simulated", *CACHE_COPIED))
    now = timezone.now()
    for row in earlier:
        key = (row["criterion_id"], row["content_sha256"], row["round"])
        if key in wanted and key not in found:
            found[key] = Answer(
                run_id=run.id, criterion_id=key[0], round=key[2], content_sha256=key[1],
                cached=True, attempts=0, answered_at=now,
                **{name: row[name] for name in CACHE_COPIED})
            if row["run__simulated"]:
                run.simulated = True
    return list(found.values())


def batch_score(batch_id: int, judge: JudgeSettings) -> bool:
    """Score a pending batch: claim it, take what the judgment cache has, ask the rest, store,
    mark it done.

    Returns False when the batch was not ours to score (claimed elsewhere, done, or its run
    is no longer active). Raises FleetUnavailable after handing the batch back.
    """
    if not batch_claim(batch_id):
        return False
    batch = RunBatch.objects.select_related("run__benchmark", "run__judge_config").get(
        id=batch_id)
    run = batch.run
    _move(run.id, [Status.QUEUED], Status.SCORING)
    samples, criterion_ids = _batch_samples(run, batch.item_keys)
    answered = set(Answer.objects.filter(run=run, criterion_id__in=criterion_ids.values())
                   .values_list("criterion_id", "round"))
    kind = get_kind(run.benchmark.kind)
    if kind.text_jobs is not None:
        jobs = [j for j in kind.text_jobs(samples, run.outputs, run.options)
                if (criterion_ids[(j.key, j.criterion_index)], j.round) not in answered]
    else:
        jobs = [(s, r, k) for s in samples for r in s.rubrics for k in range(run.rounds)
                if (criterion_ids[(s.id, r.index)], k) not in answered]
    wanted = {(criterion_ids[(key, index)], run.digests.get(key, ""), k): job
              for job in jobs for key, index, k in [_job_key(job)]}
    run.simulated = False
    cached = _from_cache(run, wanted)
    Answer.objects.bulk_create(cached, ignore_conflicts=True, batch_size=2000)
    if run.simulated:
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)
    hit = {(a.criterion_id, a.round) for a in cached}
    jobs = [job for job in jobs for key, index, k in [_job_key(job)]
            if (criterion_ids[(key, index)], k) not in hit]
    records: list[dict] = []
    simulated = []

    def on_answer(record: dict, is_simulated: bool) -> None:
        records.append(record)
        simulated.append(is_simulated)

    heartbeat = _Heartbeat(batch_id)
    heartbeat.start()
    try:
        if jobs:
            endpoints = run_endpoints(run)
            if not endpoints:
                # Like an outage: the batch waits for staff to put an endpoint back.
                raise FleetUnavailable(f"every endpoint of judge config "
                                       f"{run.judge_config.name} is taken out by staff")
            asyncio.run(_ask(jobs, run, judge, on_answer, endpoints))
    except FleetUnavailable:
        _store(run, criterion_ids, records, simulated)
        # Handed back without counting the claim: an outage is not the batch's fault, and
        # SCORING_MAX_CLAIMS is about batches that break or kill their worker.
        RunBatch.objects.filter(id=batch_id).update(status=RunBatch.Status.PENDING,
                                                    claims=F("claims") - 1)
        raise
    finally:
        heartbeat.stop()
    _store(run, criterion_ids, records, simulated)
    RunBatch.objects.filter(id=batch_id, status=RunBatch.Status.CLAIMED) \
        .update(status=RunBatch.Status.DONE)
    return True


def _job_key(job) -> tuple[str, int, int]:
    """(item key, criterion index, round) of a judge job: a text kind's TextJob, or MMAE's
    (sample, rubric, round)."""
    if isinstance(job, TextJob):
        return job.key, job.criterion_index, job.round
    sample, rubric, round_ = job
    return sample.id, rubric.index, round_


def run_endpoints(run: ScoringRun) -> list[str]:
    """The endpoints a run's queries go to: its judge config's, as they are now, less those
    staff have taken out (possibly none left)."""
    urls = [url.rstrip("/") for url in run.judge_config.base_urls]
    out = disabled_base_urls(urls)
    return [url for url in urls if url not in out]


async def _ask(jobs, run: ScoringRun, judge: JudgeSettings, on_answer,
               endpoints: list[str]) -> None:
    config = run.judge_config
    async with JudgeFleet(endpoints, model=config.judge_model,
                          concurrency=judge.concurrency, timeout=judge.timeout,
                          max_attempts=config.max_attempts, sampling=config.sampling,
                          down_wait=judge.down_wait,
                          api_key=settings.JUDGE_API_KEY or None) as fleet:
        # Outputs as absolute paths under the run's folder; input paths stay relative, so
        # they resolve against the benchmark's own audio, never against the upload.
        outputs = {key: str(Path(run.audio_root) / path) for key, path in run.outputs.items()}
        switches = asyncio.create_task(_follow_switches(fleet, endpoints))
        try:
            if isinstance(jobs[0], TextJob):  # text only: no audio to inline
                await ask_jobs(jobs, fleet, on_answer)
            else:
                await ask_all(jobs, fleet, seed=config.seed, outputs=outputs,
                              data_uri=AudioCache(Path(run.benchmark.audio_root)),
                              on_answer=on_answer)
        finally:
            switches.cancel()


async def _follow_switches(fleet: JudgeFleet, endpoints: list[str]) -> None:
    """Staff taking an endpoint out (or putting it back) reaches a batch in flight within a
    heartbeat period."""
    while True:
        await asyncio.sleep(settings.SCORING_HEARTBEAT_SECONDS)
        try:
            out = await asyncio.to_thread(_taken_out, endpoints)
        except Exception:  # a database hiccup must not stop the batch's queries
            log.exception("cannot read which judge endpoints are taken out")
            continue
        await fleet.exclude(out)


def _taken_out(endpoints: list[str]) -> set[str]:
    try:
        return disabled_base_urls(endpoints)
    finally:
        connection.close()  # this thread's own connection


def _store(run: ScoringRun, criterion_ids: dict, records: list[dict], simulated: list) -> None:
    now = timezone.now()
    Answer.objects.bulk_create(
        [_answer(run, criterion_ids[(r["id"], r["rubric_index"])], r, now) for r in records],
        ignore_conflicts=True, batch_size=2000,
    )
    if any(simulated):
        ScoringRun.objects.filter(id=run.id, simulated=False).update(simulated=True)


def batch_failed(batch_id: int, why: str) -> bool:
    """A batch broke (not a fleet outage): hand it back, or fail its run once it has been
    tried SCORING_MAX_CLAIMS times. True when it should be tried again."""
    batch = RunBatch.objects.get(id=batch_id)
    if batch.claims >= settings.SCORING_MAX_CLAIMS:
        run_fail(batch.run_id, f"scoring batch {batch.index} failed {batch.claims} times; "
                               f"last error: {why}")
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


def run_aggregate(run_id: int) -> bool:
    """Per-item results and slices from the answers; the run is then finished."""
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    if run.status != Status.AGGREGATING:
        return False
    kind = get_kind(run.benchmark.kind)
    if kind.results is not None:
        return _aggregate_text(run, kind)
    votes: dict[tuple[int, int], list[bool]] = {}
    for criterion_id, correct in Answer.objects.filter(run=run).values_list(
            "criterion_id", "correct").order_by("criterion_id", "round"):
        votes.setdefault(criterion_id, []).append(correct)
    answered = sum(len(v) for v in votes.values())
    if answered != run.total_queries:
        missing = run.total_queries - answered
        _move(run.id, [Status.AGGREGATING], Status.FAILED,
              error=f"internal error: {missing} judge answers are missing; rescore this run")
        return False
    item_rows, results = [], []
    for item in Item.objects.filter(benchmark=run.benchmark).prefetch_related("criteria") \
            .order_by("position"):
        criteria = item.ordered_criteria()
        sample = kind.from_rows(item.as_rows())
        scores = None if item.key not in run.outputs else [
            _majority(votes[c.id]) for c in criteria]
        row = kind.score_item(sample, scores)
        item_rows.append(row)
        results.append(ItemResult(run=run, item=item, ifr=row["IFR"], cr=row["CR"],
                                  em=row["EM"], rubric_scores=row["rubric_scores"],
                                  missing=row["missing"]))
    slices = _slices(run, kind.aggregate(item_rows), kind.intervals(item_rows, seed=run.seed))
    with transaction.atomic():
        ItemResult.objects.filter(run=run).delete()
        SliceResult.objects.filter(run=run).delete()
        ItemResult.objects.bulk_create(results, batch_size=1000)
        SliceResult.objects.bulk_create(slices)
        _move(run.id, [Status.AGGREGATING], Status.FINISHED)
    return True


def _aggregate_text(run: ScoringRun, kind) -> bool:
    """A text kind's per-item results and slices (AIR-Bench), by the kind's own rules from the
    responses and the judge's answers; the run is then finished."""
    answers = {(key, round_): {"choice": choice, "score": score}
               for key, round_, choice, score in Answer.objects.filter(run=run).values_list(
                   "criterion__item__key", "round", "choice", "score")}
    if len(answers) != run.total_queries:
        _move(run.id, [Status.AGGREGATING], Status.FAILED,
              error=f"internal error: {run.total_queries - len(answers)} judge answers are "
                    "missing; rescore this run")
        return False
    items = list(Item.objects.filter(benchmark=run.benchmark).prefetch_related("criteria")
                 .order_by("position"))
    rows, summary = kind.results([kind.from_rows(i.as_rows()) for i in items], run.outputs,
                                 answers)
    results = [ItemResult(run=run, item=item, ifr=None, cr=None, missing=row["missing"],
                          values=row, **kind.item_columns(row))
               for item, row in zip(items, rows, strict=True)]
    slices = [SliceResult(run=run, dimension=SliceResult.OVERALL, bucket="",
                          n=summary["overall"]["n"], values=summary["overall"])]
    slices += [SliceResult(run=run, dimension=dimension, bucket=bucket, n=figures["n"],
                           values=figures)
               for dimension, buckets in summary.items() if dimension != "overall"
               for bucket, figures in buckets.items()]
    with transaction.atomic():
        ItemResult.objects.filter(run=run).delete()
        SliceResult.objects.filter(run=run).delete()
        ItemResult.objects.bulk_create(results, batch_size=1000)
        SliceResult.objects.bulk_create(slices)
        _move(run.id, [Status.AGGREGATING], Status.FINISHED)
    return True


def _majority(votes: list[bool]) -> int:
    return 1 if 2 * sum(votes) > len(votes) else 0


def _slices(run: ScoringRun, taxonomy: dict, intervals: dict) -> list[SliceResult]:
    def row(dimension, bucket, figures, interval):
        bounds = {}
        for metric in ("IFR", "CR", "EMR"):
            lo, hi = interval[metric] or (None, None)
            bounds[f"{metric.lower()}_lo"], bounds[f"{metric.lower()}_hi"] = lo, hi
        return SliceResult(run=run, dimension=dimension, bucket=bucket, n=figures["n"],
                           ifr=figures["IFR"], cr=figures["CR"], emr=figures["EMR"], **bounds)

    rows = [row(SliceResult.OVERALL, "", taxonomy["overall"], intervals["overall"])]
    for dimension, buckets in taxonomy.items():
        if dimension != "overall":
            rows.extend(row(dimension, bucket, figures, intervals[dimension][bucket])
                        for bucket, figures in buckets.items())
    return rows


# --- failure, cancellation and the sweeper ---------------------------------------------


def run_fail(run_id: int, why: str) -> bool:
    return _move(run_id, list(ScoringRun.ACTIVE), Status.FAILED, error=why)


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
        run_fail(batch.run_id, f"scoring batch {batch.index} lost its worker {batch.claims} "
                               "times (a worker crash or a kill each time)")
    batch_ids += RunBatch.objects.filter(
        Q(enqueued_at__lt=lost) | Q(enqueued_at=None, run__created_at__lt=lost),
        status=RunBatch.Status.PENDING, run__status__in=active,
    ).values_list("id", flat=True)
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
