"""A finished run's results files, produced from the database by its kind's writers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from scoring.aggregation import answer_groups
from scoring.kinds import ItemRows, get_kind
from scoring.models import Item, ItemResult, ScoringRun, SliceResult

# A kind names its own results files (Kind.files); their type follows the name's suffix.
CONTENT_TYPES = {".jsonl": "application/x-ndjson", ".json": "application/json",
                 ".csv": "text/csv"}
RESULT_COLUMNS = ("missing", "values", "passed", "score")


class StoredRun:
    """A finished run as its kind's file writers read it (scoring.kinds.base.RunData), less
    the items whose ids `withheld` holds (their results are not anyone's to read yet)."""

    def __init__(self, run: ScoringRun, *, withheld: frozenset[int] = frozenset()):
        self.run = run
        self.withheld = withheld
        self.kind = get_kind(run.benchmark.kind)
        self.outputs = run.outputs
        self.meta = {"benchmark": run.benchmark.slug, "version": run.benchmark.version,
                     "kind": self.kind.name, "judge": run.judge_model,
                     "simulated": run.simulated, "options": run.options,
                     "missing": len(run.missing)}

    def items(self) -> Iterator[tuple[ItemRows, dict | None, dict]]:
        results = {r["item_id"]: r for r in ItemResult.objects.filter(run=self.run)
                   .values("item_id", *RESULT_COLUMNS)}
        answers = answer_groups(self.run)  # in the same order as the items
        waiting = next(answers, None)
        items = (Item.objects.filter(benchmark_id=self.run.benchmark_id)
                 .prefetch_related("criteria").order_by("position"))
        for item in items.iterator(chunk_size=500):
            if item.id in self.withheld:
                if waiting is not None and waiting[0] == item.id:
                    waiting = next(answers, None)
                continue
            rows = item.as_rows()
            result = results.get(item.id)
            mine = {}
            if waiting is not None and waiting[0] == item.id:
                mine, waiting = waiting[1], next(answers, None)
            yield (rows, None if result is None else self.kind.stored_row(rows, result), mine)

    def slices(self) -> dict:
        """Every slice's figures, slices in (dimension, bucket) order."""
        result: dict = {}
        for s in SliceResult.objects.filter(run=self.run).order_by("dimension", "bucket"):
            if s.dimension == SliceResult.OVERALL:
                result["overall"] = s.figures()
            else:
                result.setdefault(s.dimension, {})[s.bucket] = s.figures()
        return result


def content_type(name: str) -> str:
    return CONTENT_TYPES.get(Path(name).suffix, "text/plain")


def file_chunks(run: ScoringRun, name: str, *,
                withheld: frozenset[int] = frozenset()) -> Iterator[str]:
    """A results file of the run, without the items whose ids `withheld` holds."""
    return iter(get_kind(run.benchmark.kind).file_chunks(name, StoredRun(run,
                                                                         withheld=withheld)))
