"""A run's aggregation: its answers grouped per item, the kind's per-item results, slices and
per-item vectors stored, and the run finished (or failed for its refusals), in one
transaction."""

from __future__ import annotations

import collections
import itertools
import logging
import operator
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max
from psycopg.types.json import Jsonb

from config.alerts import staff_alert
from judge.fleet import LOST_KINDS, REFUSED
from scoring.boards import board_changed
from scoring.judgments import ANSWER_FIELDS
from scoring.kinds import ItemRows, Kind, get_kind
from scoring.models import (
    Answer,
    Criterion,
    Item,
    ItemResult,
    RunVector,
    ScoringRun,
    SliceResult,
)
from scoring.runs import Status, run_fail, run_move

log = logging.getLogger(__name__)

# Read as plain values (no model instances): an answer's item, criterion index and round, then
# its record's fields.
_ANSWER_VALUES = ("criterion__item", "criterion__index", "round", *ANSWER_FIELDS)


def answer_groups(run: ScoringRun, item_ids=None) -> Iterator[tuple[int, dict]]:
    """A run's answers (of `item_ids`' items only, when given) as records, streamed in
    benchmark order: (item id, {(criterion index, round): record}) for each item with
    answers."""
    answers = Answer.objects.filter(run=run)
    if item_ids is not None:
        answers = answers.filter(criterion__item_id__in=list(item_ids))
    answers = (answers.order_by("criterion__item__position", "criterion__index", "round")
               .values_list(*_ANSWER_VALUES))
    if item_ids is None:  # a whole run's, streamed; a few items' (a page) in one round trip
        answers = answers.iterator(chunk_size=5000)
    for item_id, group in itertools.groupby(answers, key=operator.itemgetter(0)):
        yield item_id, {(values[1], values[2]): _record(values) for values in group}


def answers_of(run_ids, criterion_ids) -> dict[tuple[int, int], dict]:
    """The answers to these criteria in these runs, in one query read through the index of a
    run's answers: {(run id, item id): {(criterion index, round): record}}."""
    found: dict[tuple[int, int], dict] = {}
    for values in (Answer.objects.filter(run_id__in=list(run_ids),
                                         criterion_id__in=list(criterion_ids))
                   .values_list("run_id", *_ANSWER_VALUES)):
        found.setdefault((values[0], values[1]), {})[(values[2], values[3])] = _record(
            values[1:])
    return found


def _record(values: tuple) -> dict:
    """An answer's record from its _ANSWER_VALUES."""
    return {"criterion": values[1], "round": values[2],
            **dict(zip(ANSWER_FIELDS, values[3:], strict=True))}


def run_aggregate(run_id: int) -> bool:
    """Per-item results and slices from the answers, by the kind's rules; the run is then
    finished."""
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    if run.status != Status.AGGREGATING:
        return False
    kind = get_kind(run.benchmark.kind)
    answers = dict(answer_groups(run))
    # An answer lost on our side is no vote (stored before the query loop asked such queries
    # again, say): missing, never a wrong vote in a published figure.
    missing = run.total_queries - sum(1 for group in answers.values()
                                      for record in group.values()
                                      if record["error_kind"] not in LOST_KINDS)
    if missing:
        run_fail(run.id, f"failed on our side: {missing} judge answers are missing")
        return False
    refused = [record for group in answers.values() for record in group.values()
               if record["error_kind"] == REFUSED]
    if len(refused) > settings.SCORING_MAX_REFUSED_SHARE * run.total_queries:
        _refused_fail(run, refused)
        return False
    items = benchmark_items(run.benchmark_id, kind)
    rows = [kind.item_result(item.read, run.outputs.get(item.key), answers.get(item.id, {}))
            for item in items]
    results = [{"run_id": run.id, "item_id": item.id, "position": item.position,
                "missing": row["missing"], **kind.item_columns(row)}
               for item, row in zip(items, rows, strict=True)]
    slices = slice_results(run, kind.summarize(rows), kind.intervals(rows, seed=run.seed))
    with transaction.atomic():
        ItemResult.objects.filter(run=run).delete()
        SliceResult.objects.filter(run=run).delete()
        item_results_store(kind, results)
        SliceResult.objects.bulk_create(slices, batch_size=1000)
        run_vector_store(run, kind, rows)
        run_move(run.id, [Status.AGGREGATING], Status.FINISHED, refused_queries=len(refused))
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
    if run_move(run.id, [Status.AGGREGATING], Status.FAILED, error=why,
             refused_queries=len(refused)):
        staff_alert(f"run {run.id}: the judge refused {share:.1%} of its queries", why,
                    key=f"run-refused:{run.id}")


@dataclass(frozen=True)
class KindItem:
    id: int
    key: str
    position: int
    read: object  # the item as its kind reads it (Kind.from_rows)


# Each benchmark's items as its kind reads them, kept by this process between runs (a worker
# aggregates many runs of one benchmark): benchmark id -> (stamp, items).
_ITEMS: dict[int, tuple[tuple, list[KindItem]]] = {}


def benchmark_items(benchmark_id: int, kind: Kind) -> list[KindItem]:
    """A benchmark's items in position order, read from plain values once per process and
    read again only when its items or criteria change (their count or newest id)."""
    stamp = (*Item.objects.filter(benchmark_id=benchmark_id).aggregate(
        n_items=Count("id", distinct=True), last_item=Max("id"), n_criteria=Count("criteria"),
        last_criterion=Max("criteria__id")).values(), kind.name)
    kept = _ITEMS.get(benchmark_id)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    criteria: dict[int, list[dict]] = collections.defaultdict(list)
    for item_id, index, category, question, spec in (
            Criterion.objects.filter(item__benchmark_id=benchmark_id).order_by("index")
            .values_list("item_id", "index", "category", "question", "spec")):
        criteria[item_id].append({"index": index, "category": category, "question": question,
                                  "spec": spec})
    items = [KindItem(id=id_, key=key, position=position, read=kind.from_rows(ItemRows(
                 key=key, dimensions=dimensions, content=content, media=media,
                 criteria=criteria[id_])))
             for id_, key, position, dimensions, content, media in (
                 Item.objects.filter(benchmark_id=benchmark_id).order_by("position")
                 .values_list("id", "key", "position", "dimensions", "content", "media"))]
    _ITEMS[benchmark_id] = (stamp, items)
    return items


# ItemResult's columns as item_results_store takes them.
ITEM_RESULT_COLUMNS = ("run_id", "item_id", "missing", "values", "passed", "score", "failed",
                       "position")


def item_results_store(kind: Kind, results: list[dict]) -> None:
    """Per-item results (dicts of ITEM_RESULT_COLUMNS but `failed`, which the kind decides:
    whether the explorer counts the item as failed): one COPY on PostgreSQL, bulk_create
    elsewhere."""
    rows = [{**columns, "failed": kind.failed(columns)} for columns in results]
    if connection.vendor != "postgresql":
        ItemResult.objects.bulk_create([ItemResult(**row) for row in rows], batch_size=2000)
        return
    fields = [ItemResult._meta.get_field(name.removesuffix("_id")).column
              for name in ITEM_RESULT_COLUMNS]
    statement = f"COPY {ItemResult._meta.db_table} ({', '.join(fields)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([Jsonb(row[name]) if name == "values" else row[name]
                            for name in ITEM_RESULT_COLUMNS])


def run_vector_store(run: ScoringRun, kind: Kind, rows: list[dict]) -> None:
    """Keep the run's per-item values for the paired bootstrap of rank ranges."""
    RunVector.objects.update_or_create(run=run, defaults={
        "names": list(kind.vector_names),
        "data": RunVector.pack([kind.item_vector(row) for row in rows])})


def slice_results(run: ScoringRun, summary: dict, intervals: dict) -> list[SliceResult]:
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
