"""Scoring runs in the database: their lifecycle (create, claim batches, fail, retry, cancel) and
the sweeper. The query loop that scores claimed batches is scoring.query_loop, the judgment
cache and the answers' store scoring.judgments, the aggregation scoring.aggregation.

Background work follows one pattern: ids in, a conditional UPDATE to claim a row (zero rows
updated means someone else has it, or it is done: do nothing), idempotent writes under unique
constraints, and a sweeper that hands back work whose heartbeat went stale.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from config.alerts import staff_alert
from judge.fleet import LOST_KINDS, REFUSED
from scoring import cost, media
from scoring.judge_configs import judge_config_current
from scoring.judgments import output_digests
from scoring.kinds import Job, Kind, get_kind
from scoring.kinds.files import resolve_audio
from scoring.models import (
    Answer,
    Benchmark,
    Criterion,
    Item,
    JudgeConfig,
    RunBatch,
    RunCost,
    ScoringRun,
)

log = logging.getLogger(__name__)


Status = ScoringRun.Status


def _stamp(times: dict, status: str) -> dict:
    return {**times, status: timezone.now().isoformat()}


def run_move(run_id: int, source: list[str], target: str, **fields) -> bool:
    """Conditional status change: True when this caller made it."""
    run = ScoringRun.objects.only("status_times").get(id=run_id)
    return bool(ScoringRun.objects.filter(id=run_id, status__in=source).update(
        status=target, status_times=_stamp(run.status_times, target), **fields))


def items_of(benchmark: Benchmark, keys) -> list[Item]:
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
                    items=items_of(benchmark, outputs), outputs=outputs, audio_root=audio_root,
                    rounds=config.rounds, seed=config.seed, options=options)
    return list(dict.fromkeys(job.item for job in jobs)), jobs


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


def run_lost(run_id: int, lost: int, last_error: str) -> bool:
    """Count `lost` judge queries lost on our side (asked again by the caller); past
    SCORING_MAX_LOST_SHARE of the run's queries the run fails on our side instead (staff
    alerted, the author told it is not their upload's fault; run_retry resumes it). True
    while the run goes on."""
    ScoringRun.objects.filter(id=run_id).update(lost_queries=F("lost_queries") + lost)
    run = ScoringRun.objects.only("lost_queries", "total_queries").get(id=run_id)
    if run.lost_queries <= settings.SCORING_MAX_LOST_SHARE * run.total_queries:
        return True
    run_fail(run_id, f"failed on our side: the judge fleet lost {run.lost_queries:,} answers "
                     f"to {run.total_queries:,} queries (a run goes on with at most "
                     f"{settings.SCORING_MAX_LOST_SHARE:.0%} lost and asked again); "
                     f"last: {last_error}")
    return False


def run_try_aggregate(run_id: int) -> bool:
    """Move a run to aggregating once every batch is done; True for the caller that did."""
    if RunBatch.objects.filter(run_id=run_id).exclude(status=RunBatch.Status.DONE).exists():
        return False
    return run_move(run_id, [Status.QUEUED, Status.SCORING], Status.AGGREGATING)


def run_fail(run_id: int, why: str) -> bool:
    """Fail an active run, on our side (the author's mistakes never reach scoring): staff
    are alerted, and the run can be resumed (run_retry)."""
    if not run_move(run_id, list(ScoringRun.ACTIVE), Status.FAILED, error=why):
        return False
    staff_alert(f"scoring run {run_id} failed", f"Scoring run {run_id} failed: {why}\n"
                "Its answers are kept; retry it from the staff submissions page once the "
                "cause is fixed.", key=f"run-failed:{run_id}")
    return True


def run_retry(run_id: int) -> bool:
    """Resume a failed run: its answers kept but those the judge refused and any lost on our
    side (asked again: a run that failed for its refusals is retried once the judge takes
    them), its batches not done
    (every batch, if all are done yet answers are missing: each then asks only what it lacks)
    pending again with their claims reset, and the run queued. True when this caller resumed
    it; it then enqueues the run (scoring.tasks.enqueue_run)."""
    with transaction.atomic():
        if not run_move(run_id, [Status.FAILED], Status.QUEUED, error="", refused_queries=0,
                        lost_queries=0):
            return False
        Answer.objects.filter(run_id=run_id, error_kind__in=[REFUSED, *LOST_KINDS]).delete()
        batches = RunBatch.objects.filter(run_id=run_id)
        undone = batches.exclude(status=RunBatch.Status.DONE)
        if undone.exists() or Answer.objects.filter(run_id=run_id).count() >= \
                ScoringRun.objects.values_list("total_queries", flat=True).get(id=run_id):
            batches = undone
        batches.update(status=RunBatch.Status.PENDING, claims=0)
    return True


def run_cancel(run_id: int) -> bool:
    return run_move(run_id, [Status.QUEUED, Status.SCORING], Status.CANCELLED)


def sweep(now=None, *, queue_lost: bool = False) -> tuple[list[int], list[int]]:
    """Work to hand out again: (batch ids, run ids to aggregate).

    A claimed batch whose heartbeat is older than SCORING_STALE_SECONDS lost its worker: it
    goes back to pending and is listed. A pending batch queued longer ago than
    SCORING_REQUEUE_SECONDS (its message lost), a run stuck aggregating, and a run whose
    batches are all done but that never moved on are listed too, so nothing is stranded.

    `queue_lost`: the broker lost its queues (config.celery.broker_emptied), so every message
    is gone: every pending batch of an active run and every run aggregating is listed
    however recently it was queued (one that still has a message, or a worker, gets a
    duplicate, which finds its claim taken or its run moved on).
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
    pending = RunBatch.objects.filter(status=RunBatch.Status.PENDING, run__status__in=active)
    if not queue_lost:
        pending = pending.filter(Q(enqueued_at__lt=lost)
                                 | Q(enqueued_at=None, run__created_at__lt=lost))
    batch_ids += pending.exclude(id__in=batch_ids).values_list("id", flat=True)
    run_ids = [
        run.id for run in ScoringRun.objects.filter(status=Status.AGGREGATING)
        if queue_lost
        or run.status_times.get(Status.AGGREGATING, now.isoformat()) < stale.isoformat()
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


def batches_unsent(batch_ids: list[int]) -> None:
    """Their messages could not be published (the broker unreachable): unsent_batch_ids
    lists them for the next connection to the broker."""
    RunBatch.objects.filter(id__in=batch_ids).update(enqueued_at=None)


def unsent_batch_ids() -> list[int]:
    """Pending batches of active runs with no message queued: one that could not be published
    (batches_unsent), or a new run's whose enqueue has not run yet (a duplicate for it is
    harmless: its claim is conditional)."""
    return list(RunBatch.objects.filter(
        status=RunBatch.Status.PENDING, enqueued_at=None,
        run__status__in=[Status.QUEUED, Status.SCORING]).values_list("id", flat=True))


def cached_count(*, benchmark: Benchmark, outputs: dict[str, str], audio_root: str,
                 digests: dict[str, str], config: JudgeConfig, options: dict) -> tuple[int, int]:
    """(answers a run of these outputs under `config` needs, how many of them the judgment
    cache already has): the dry run of a rescore, by the very keys a batch looks up."""
    items = items_of(benchmark, outputs)
    jobs = run_jobs(kind=get_kind(benchmark.kind), benchmark=benchmark, items=items,
                    outputs=outputs, audio_root=audio_root, rounds=config.rounds,
                    seed=config.seed, options=options)
    digest = output_digests(audio_root=audio_root, outputs=outputs, digests=digests,
                      benchmark=benchmark, items=items)
    keys = [job.content_key(config=str(config.id), digest=digest) for job in jobs]
    found = set()
    for start in range(0, len(keys), 5000):
        found.update(Answer.objects.filter(content_key__in=keys[start:start + 5000],
                                           error=None, cached=False)
                     .values_list("content_key", flat=True).distinct())
    return len(jobs), sum(1 for key in keys if key in found)


def connection_replace_broken() -> None:
    """Close this thread's database connection if a database error broke it (it was
    terminated, say), so that the next query opens a new one instead of failing too."""
    if connection.connection is not None and connection.errors_occurred \
            and not connection.in_atomic_block and not connection.is_usable():
        log.warning("the database connection broke; opening a new one")
        connection.close()


def cost_add(run_id: int, counted: Counter) -> None:
    """Add a worker's tally to the run's card."""
    counted = {k: v for k, v in counted.items() if v and k in cost.FIGURES}
    if not counted:
        return
    with transaction.atomic():
        RunCost.objects.get_or_create(run_id=run_id)
        RunCost.objects.filter(run_id=run_id).update(
            **{name: F(name) + value for name, value in counted.items()})


def cost_card(run: ScoringRun) -> dict | None:
    """The run's figures (cost.FIGURES) with its wall time (from its scoring's start to its
    end, or to now while it runs), None before anything was asked or reused."""
    found = RunCost.objects.filter(run_id=run.pk).values(*cost.FIGURES).first()
    if found is None:
        return None
    times = run.status_times or {}
    start = times.get("scoring")
    end = times.get("finished") or times.get("failed") or times.get("cancelled")
    wall = None
    if start:
        until = datetime.fromisoformat(end) if end else timezone.now()
        wall = (until - datetime.fromisoformat(start)).total_seconds()
    return {**{k: round(v, 3) if isinstance(v, float) else v for k, v in found.items()},
            "wall_seconds": None if wall is None else round(wall, 3)}


def measured_cost(benchmark: Benchmark, *, latest: int = 20) -> dict | None:
    """What a full submission to `benchmark` costs the judge, measured: the per-reply means
    of the latest finished runs under its current judge config that asked the judge, times
    the queries of a submission with every output (its criteria x the config's rounds).
    None before any such run."""
    config = benchmark.judge_config
    if config is None:
        return None
    cards = list(RunCost.objects.filter(
        run__benchmark=benchmark, run__judge_config=config, run__status=Status.FINISHED,
        replies__gt=0).order_by("-run__created_at")[:latest].values(*cost.FIGURES))
    if not cards:
        return None
    total = Counter()
    for card in cards:
        total.update(card)
    queries = Criterion.objects.filter(item__benchmark=benchmark).count() * config.rounds
    per_reply = {name: total[name] / total["replies"]
                 for name in ("prompt_tokens", "completion_tokens", "audio_seconds")}
    return {"runs": len(cards), "replies": total["replies"], "queries": queries,
            "per_query": per_reply,
            "full": {name: round(value * queries) for name, value in per_reply.items()},
            "busy_seconds_per_query": total["busy_seconds"] / max(total["requests"], 1),
            "simulated": RunCost.objects.filter(
                run__benchmark=benchmark, run__judge_config=config,
                run__simulated=True).exists()}
