"""Scoring runs in the database: create, claim and score batches, aggregate, sweep.

Background work follows one pattern: ids in, a conditional UPDATE to claim a row (zero rows
updated means someone else has it, or it is done: do nothing), idempotent writes under unique
constraints, and a sweeper that hands back work whose heartbeat went stale.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from judge.fleet import FleetUnavailable, JudgeFleet
from scoring.kinds import get_kind
from scoring.models import Answer, Benchmark, Item, ItemResult, RunBatch, ScoringRun, SliceResult
from scoring.scorer import AudioCache, ask_all, prompt_hash

log = logging.getLogger(__name__)
Status = ScoringRun.Status


@dataclass(frozen=True)
class JudgeSettings:
    base_urls: list[str]
    model: str
    concurrency: int
    timeout: float
    max_attempts: int
    down_wait: float
    sampling: dict = field(default_factory=lambda: {"temperature": 0.0, "max_tokens": 1024})

    @classmethod
    def from_settings(cls) -> JudgeSettings:
        return cls(base_urls=list(settings.JUDGE_BASE_URLS), model=settings.JUDGE_MODEL,
                   concurrency=settings.JUDGE_CONCURRENCY, timeout=settings.JUDGE_TIMEOUT,
                   max_attempts=settings.JUDGE_MAX_ATTEMPTS, down_wait=settings.JUDGE_DOWN_WAIT)


def _stamp(times: dict, status: str) -> dict:
    return {**times, status: timezone.now().isoformat()}


def _move(run_id: int, source: list[str], target: str, **fields) -> bool:
    """Conditional status change: True when this caller made it."""
    run = ScoringRun.objects.only("status_times").get(id=run_id)
    return bool(ScoringRun.objects.filter(id=run_id, status__in=source).update(
        status=target, status_times=_stamp(run.status_times, target), **fields))


# --- creating a run --------------------------------------------------------------------


def run_create(*, benchmark: Benchmark, audio_root: str, outputs: dict[str, str],
               missing: dict[str, str], judge: JudgeSettings, seed: int) -> ScoringRun:
    """A queued run with its batches (the caller enqueues them after commit)."""
    kind = get_kind(benchmark.kind)
    keys = list(Item.objects.filter(benchmark=benchmark, key__in=list(outputs))
                .order_by("position").values_list("key", flat=True))
    n_criteria = Item.objects.filter(benchmark=benchmark, key__in=keys).aggregate(
        n=Count("criteria"))["n"] or 0
    run = ScoringRun.objects.create(
        benchmark=benchmark, audio_root=audio_root, outputs=outputs, missing=missing,
        judge_model=judge.model, base_urls=judge.base_urls, prompt_sha256=prompt_hash(),
        rounds=kind.rounds, seed=seed, sampling=judge.sampling,
        max_attempts=judge.max_attempts, status=Status.QUEUED,
        status_times=_stamp({}, Status.QUEUED), total_queries=n_criteria * kind.rounds,
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


def _answer(run_id: int, criterion_id: int, record: dict) -> Answer:
    return Answer(
        run_id=run_id, criterion_id=criterion_id, round=record["round"],
        choices=record["choices"], correct_letter=record["correct_letter"],
        choice=record["choice"], correct=record["correct"], reason=record["reason"],
        raw=record["raw"], error=record["error"], endpoint=record["endpoint"],
        attempts=record["attempts"], latency_ms=record["latency_ms"],
    )


def batch_score(batch_id: int, judge: JudgeSettings) -> bool:
    """Score a pending batch: claim it, ask what has no answer yet, store, mark it done.

    Returns False when the batch was not ours to score (claimed elsewhere, done, or its run
    is no longer active). Raises FleetUnavailable after handing the batch back.
    """
    if not batch_claim(batch_id):
        return False
    batch = RunBatch.objects.select_related("run__benchmark").get(id=batch_id)
    run = batch.run
    _move(run.id, [Status.QUEUED], Status.SCORING)
    samples, criterion_ids = _batch_samples(run, batch.item_keys)
    answered = set(Answer.objects.filter(run=run, criterion_id__in=criterion_ids.values())
                   .values_list("criterion_id", "round"))
    jobs = [(s, r, k) for s in samples for r in s.rubrics for k in range(run.rounds)
            if (criterion_ids[(s.id, r.index)], k) not in answered]
    records: list[dict] = []
    simulated = []

    def on_answer(record: dict, is_simulated: bool) -> None:
        records.append(record)
        simulated.append(is_simulated)

    heartbeat = _Heartbeat(batch_id)
    heartbeat.start()
    try:
        if jobs:
            asyncio.run(_ask(jobs, run, judge, on_answer))
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


async def _ask(jobs, run: ScoringRun, judge: JudgeSettings, on_answer) -> None:
    async with JudgeFleet(run.base_urls, model=run.judge_model, concurrency=judge.concurrency,
                          timeout=judge.timeout, max_attempts=run.max_attempts,
                          sampling=run.sampling, down_wait=judge.down_wait) as fleet:
        # Outputs as absolute paths under the run's folder; input paths stay relative, so
        # they resolve against the benchmark's own audio, never against the upload.
        outputs = {key: str(Path(run.audio_root) / path) for key, path in run.outputs.items()}
        await ask_all(jobs, fleet, seed=run.seed, outputs=outputs,
                      data_uri=AudioCache(Path(run.benchmark.audio_root)),
                      on_answer=on_answer)


def _store(run: ScoringRun, criterion_ids: dict, records: list[dict], simulated: list) -> None:
    Answer.objects.bulk_create(
        [_answer(run.id, criterion_ids[(r["id"], r["rubric_index"])], r) for r in records],
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


def batches_enqueued(batch_ids: list[int]) -> None:
    RunBatch.objects.filter(id__in=batch_ids).update(enqueued_at=timezone.now())
