"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call scoring.runs.

Every task is acks_late and short (a batch is SCORING_BATCH_ITEMS items), far below the
broker's visibility timeout, and safe to run twice: claims are conditional UPDATEs and answers
sit under a unique constraint.
"""

import logging

import redis
from celery import shared_task
from django.conf import settings

from config.celery import (
    TransactionAwareTask,
    broker_connected,
    broker_emptied,
    broker_emptied_noticed,
)
from config.tasks import RowTask
from judge.errors import FleetUnavailable, LeaseError
from scoring import aggregation, fleet, query_loop, runs, spectrogram_store

log = logging.getLogger(__name__)


def enqueue_run(run_id: int) -> None:
    """Queue every pending batch of a run (the tasks leave once the transaction commits)."""
    batch_ids = runs.pending_batch_ids(run_id)
    _send(batch_ids)
    if not batch_ids and runs.run_try_aggregate(run_id):
        aggregate_run.delay(run_id)


def _send(batch_ids: list[int], countdown: int | None = None) -> None:
    """Queue batches: rescoring and baseline work on SCORING_RESCORE_QUEUE, so that workers
    serve new submissions first; everything else on the default queue. Those whose message
    could not be published (the broker unreachable) are marked unsent, and sent when a worker
    connects to the broker again (requeue_unsent), before the error goes on."""
    runs.batches_enqueued(batch_ids)
    queues = list(runs.batch_queues(batch_ids).items())
    for sent, (batch_id, queue) in enumerate(queues):
        try:
            score_batch.apply_async((batch_id,), queue=queue, countdown=countdown)
        except Exception:
            runs.batches_unsent([unsent for unsent, _ in queues[sent:]])
            raise


class BatchTask(TransactionAwareTask):
    def unpublished(self, args, kwargs) -> None:
        """A batch queued inside a transaction (handed back, say) whose message could not be
        published once it committed is marked unsent, as _send marks those it cannot
        publish at once, so that requeue_unsent sends it when a worker connects again."""
        runs.batches_unsent([args[0]])


@shared_task(base=BatchTask, acks_late=True, ignore_result=True)
def score_batch(batch_id: int) -> None:
    """Score one batch, and those claimed ahead of it in the same query loop (see
    scoring.query_loop.batch_score); the last batch of a run to finish queues the aggregation.

    If every judge endpoint stays down for JUDGE_DOWN_WAIT, the batches are handed back and
    queued again SCORING_FLEET_RETRY_SECONDS later: an outage delays a run, never fails it.
    Batches handed back because the judge slot leases' Redis went away are queued again at
    once if it answers by then (_retry_later).
    Any other error (ours: the author's mistakes stop at validation) hands this batch back
    the same way until it has been claimed SCORING_MAX_CLAIMS times; then the run fails on
    our side, saying which batch and why, and staff are alerted (scoring.runs.run_fail).
    """
    try:
        scored = query_loop.batch_score(batch_id, query_loop.JudgeSettings.from_settings(),
                                  resend=_retry_later)
    except FleetUnavailable as exc:
        log.warning("batch %s handed back: %s", batch_id, exc)
        _retry_later([batch_id], exc)
        return
    except Exception as exc:
        log.exception("batch %s broke", batch_id)
        if runs.batch_failed(batch_id, f"{type(exc).__name__}: {exc}"):
            _retry_later([batch_id])
        return
    if scored:
        run_id = runs.RunBatch.objects.values_list("run_id", flat=True).get(id=batch_id)
        if runs.run_try_aggregate(run_id):
            aggregate_run.delay(run_id)


# How soon batches handed back by a lost lease server that answers again are queued: soon, yet
# never a busy loop should the leases keep failing on a Redis that answers.
LEASE_RETRY_SECONDS = 1


def _retry_later(batch_ids: list[int], why: BaseException | None = None) -> None:
    """Queue batches handed back SCORING_FLEET_RETRY_SECONDS later (an outage, or a batch
    that broke); those handed back because the lease server could not be reached (`why`, a
    LeaseError) LEASE_RETRY_SECONDS later if it answers again now (a Redis restarted: the next
    task opens a fresh client), so that no run waits for the fleet's retry."""
    back = isinstance(why, LeaseError) and _lease_server_answers()
    _send(batch_ids, countdown=LEASE_RETRY_SECONDS if back else
          settings.SCORING_FLEET_RETRY_SECONDS)


def _lease_server_answers() -> bool:
    """Whether the judge slot leases' Redis (REDIS_URL) answers a PING within seconds."""
    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1,
                                  socket_timeout=2) as client:
            return bool(client.ping())
    except (redis.RedisError, ValueError):
        return False


class RunTask(RowTask):
    """A task over one scoring run. An error (ours: the answers are all there) is retried
    SCORING_AGGREGATE_RETRIES times with backoff from SCORING_AGGREGATE_RETRY_SECONDS, the run
    staying aggregating; then the run fails on our side (staff alerted; it can be retried)."""

    model = "scoring.ScoringRun"
    retries = "SCORING_AGGREGATE_RETRIES"
    retry_seconds = "SCORING_AGGREGATE_RETRY_SECONDS"

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        runs.run_fail(row_id, f"failed on our side: aggregation broke {tries} times; last "
                              f"error: {why}")


@shared_task(base=RunTask)
def aggregate_run(run) -> None:
    """Aggregate a run whose batches are done. What follows a finished run (its submissions'
    board runs, the authors' emails) is done by the submissions app's periodic reconcile,
    which claims each step by a conditional UPDATE."""
    aggregation.run_aggregate(run.id)


class SpectrogramTask(RowTask):
    """Drawing the spectrograms of one row's audio (idempotent: a retry resumes). An error
    is ours (the audio passed validation or import): retried SPECTROGRAM_RETRIES times with
    backoff, then logged; the pages meanwhile say "spectrogram being drawn"."""

    abstract = True
    retries = "SPECTROGRAM_RETRIES"
    retry_seconds = "SPECTROGRAM_RETRY_SECONDS"

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        log.error("%s of %s %s gave up after %s tries: %s", self.name, self.model, row_id,
                  tries, why)


class BenchmarkSpectrogramTask(SpectrogramTask):
    model = "scoring.Benchmark"


@shared_task(base=BenchmarkSpectrogramTask)
def draw_input_spectrograms(benchmark) -> None:
    """Draw the spectrograms of a benchmark's inputs, queued by its import."""
    drawn = spectrogram_store.draw_inputs(benchmark)
    log.info("benchmark %s: %s input spectrogram(s) drawn", benchmark.pk, drawn)


@shared_task(ignore_result=True)
def sweep() -> None:
    """Periodic: hand stale or stranded work out again (see scoring.runs.sweep); first, check
    that the broker still has its queues (a flush loses them without breaking any worker's
    connection), which sends everything waiting again if it lost them."""
    if not broker_emptied_noticed():
        _sweep()


def _sweep(queue_lost: bool = False) -> tuple[list[int], list[int]]:
    batch_ids, run_ids = runs.sweep(queue_lost=queue_lost)
    _send(batch_ids)
    for run_id in run_ids:
        aggregate_run.delay(run_id)
    return batch_ids, run_ids


@broker_emptied.connect
def requeue_lost(**kwargs) -> None:
    """The broker lost its queues (config.celery.broker_emptied: a worker found it so when
    it connected again, or the sweep did): every pending batch of an active run, and every run
    aggregating, is queued again at once, rather than once SCORING_REQUEUE_SECONDS or
    SCORING_STALE_SECONDS have passed. A batch queued twice is scored once (its claim is
    conditional); a run aggregated twice finishes once, its results written the same."""
    batch_ids, run_ids = _sweep(queue_lost=True)
    log.warning("the broker lost its queues: %s batch(es) and %s aggregation(s) queued again",
                len(batch_ids), len(run_ids))


@broker_connected.connect
def requeue_unsent(**kwargs) -> None:
    """A worker connected to a broker that kept its queues (after an outage, say): the
    batches whose messages could not be published meanwhile (handed back while it was
    unreachable) are sent now, rather than once SCORING_REQUEUE_SECONDS have passed."""
    batch_ids = runs.unsent_batch_ids()
    if batch_ids:
        _send(batch_ids)
        log.warning("connected to the broker again: %s batch(es) it never got queued",
                    len(batch_ids))


@shared_task(ignore_result=True)
def probe_fleet() -> None:
    """Periodic: probe every judge endpoint for the fleet page (see scoring.fleet)."""
    fleet.fleet_probe()
