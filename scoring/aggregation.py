"""A run's aggregation: its answers grouped per item, the kind's per-item results, slices and
per-item vectors stored, and the run finished (or failed for its refusals), in one
transaction."""

from __future__ import annotations

import collections
import itertools
import logging
from collections.abc import Iterator

from django.conf import settings
from django.db import transaction

from config.alerts import staff_alert
from judge.fleet import REFUSED
from scoring.boards import board_changed
from scoring.judgments import ANSWER_FIELDS
from scoring.kinds import Kind, get_kind
from scoring.models import (
    Answer,
    Item,
    ItemResult,
    RunVector,
    ScoringRun,
    SliceResult,
)
from scoring.runs import Status, _move, run_fail

log = logging.getLogger(__name__)

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


def answers_of(run_ids, criterion_ids) -> dict[tuple[int, int], dict]:
    """The answers to these criteria in these runs, in one query read through the index of a
    run's answers: {(run id, item id): {(criterion index, round): record}}."""
    found: dict[tuple[int, int], dict] = {}
    for answer in (Answer.objects.filter(run_id__in=list(run_ids),
                                         criterion_id__in=list(criterion_ids))
                   .select_related("criterion")):
        found.setdefault((answer.run_id, answer.criterion.item_id), {})[
            (answer.criterion.index, answer.round)] = _record_of(answer)
    return found


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
