"""Reads of the item pages: the items where two models' representatives differ, most
different first, and one item across every representative of a board, in board order.

Only representatives appear (leaderboard.boards.state.representatives: public, finished, not
hidden), and their outputs are played through the explorer's audio view, which checks access again
(submissions.selectors.submission_get).
"""

from __future__ import annotations

import json

from django.db.models import Exists, F, Func, OuterRef, TextField, Value
from django.urls import reverse

from leaderboard.boards import board_pages
from leaderboard.boards.explorer_selectors import (
    CRITERION_FIELDS,
    ITEM_FIELDS,
    RESULT_COLUMNS,
    ItemRow,
)
from leaderboard.boards.model_pages import model_labels
from leaderboard.boards.state import representatives, shown, withheld
from scoring.aggregation import answers_of
from scoring.kinds import ItemRows, Kind, get_kind
from scoring.models import Benchmark, Criterion, Item, ItemBucket, ItemResult, ScoringRun
from submissions import withheld as withheld_rule

PAGE_SIZE = 20

# An item page shows this many systems at once; a board may hold thousands.
SYSTEMS_PER_PAGE = 50


def _in_slice(items, dimension: str, bucket: str, item_field: str = "pk"):
    """`items` (a queryset of items or of rows pointing at one) kept to one slice, or all of
    them where no dimension is given."""
    if not dimension:
        return items
    return items.filter(Exists(ItemBucket.objects.filter(
        item=OuterRef(item_field), dimension=dimension, bucket=bucket)))


def _wins(mine: dict, theirs: dict, by: str, winner: str) -> bool:
    """Whether `winner` ("a": mine, "b": theirs) wins the item on `by` (passed or score), as
    the compare page's per-item wins count it: both known, one above the other."""
    if mine[by] is None or theirs[by] is None:
        return False
    return mine[by] > theirs[by] if winner == "a" else mine[by] < theirs[by]


def differing(kind: Kind, a, b, *, dimension: str = "", bucket: str = "", by: str = "",
              winner: str = "") -> list[int]:
    """The ids of the items both runs scored on which A and B differ (Kind.item_difference),
    most different first, then in benchmark order; with `by` and `winner`, only the items
    that one wins. Two narrow reads of the runs' per-item columns, whatever the page. An item
    whose result of either is withheld (submissions.withheld) is not listed."""
    held = withheld(Benchmark.objects.get(runs=a.current_run_id))
    per_run: dict[int, dict[int, dict]] = {a.current_run_id: {}, b.current_run_id: {}}
    results = _in_slice(ItemResult.objects.filter(run_id__in=list(per_run)), dimension, bucket,
                        "item_id")
    for row in results.values("run_id", "item_id", "position", *RESULT_COLUMNS):
        per_run[row["run_id"]][row["item_id"]] = row
    theirs = per_run[b.current_run_id]
    found = []
    for item, mine in per_run[a.current_run_id].items():
        other = theirs.get(item)
        if other is None or (by and not _wins(mine, other, by, winner)) \
                or held(a.id, item) or held(b.id, item):
            continue
        apart = kind.item_difference(mine, other)
        if any(apart):
            found.append((tuple(-x for x in apart), mine["position"], item))
    return [item for *_, item in sorted(found)]


def _items(ids) -> list[ItemRow]:
    rows = {i: ItemRow(id=i, key=k, dimensions=d, content=c, media=tuple(m))
            for i, k, d, c, m in Item.objects.filter(id__in=list(ids)).values_list(*ITEM_FIELDS)}
    return [rows[i] for i in ids if i in rows]


def _criteria(ids) -> tuple[dict[int, list[dict]], list[int]]:
    """The items' criteria as the explorer reads them, by item, and their ids."""
    found: dict[int, list[dict]] = {}
    pks = []
    for item_id, pk, *fields in (Criterion.objects.filter(item_id__in=list(ids))
                                 .order_by("item_id", "index")
                                 .values_list("item_id", "id", *CRITERION_FIELDS)):
        found.setdefault(item_id, []).append(dict(zip(CRITERION_FIELDS, fields, strict=True)))
        pks.append(pk)
    return found, pks


def _item_rows(row: ItemRow, criteria: list[dict]) -> ItemRows:
    return ItemRows(key=row.key, dimensions=row.dimensions, content=row.content,
                    media=list(row.media), criteria=criteria)


def _side(kind: Kind, rows: ItemRows, system: dict, columns: dict | None, answers: dict,
          output, missing: str, *, held: bool = False) -> dict:
    """One system's output of an item as the explorer shows it (Kind.explorer_item), with
    the system's name and submission, for the item templates; `held`, nothing of its output,
    figures or verdicts (submissions.withheld)."""
    if held:
        sample = kind.explorer_item(rows, None, [], None)
        sample.update({"missing_reason": "", "withheld": withheld_rule.NOTE})
        return {**system, "s": sample}
    sample = kind.explorer_item(rows, None if columns is None else kind.stored_row(rows, columns),
                                [answers[k] for k in sorted(answers)], output)
    sample["missing_reason"] = "" if output is not None else missing
    return {**system, "s": sample}


def anchor(submission_id: int, index: int | None = None) -> str:
    """The id of a system's side on the item page (`s-<submission>`), or of its verdict on
    one rubric (`s-<submission>-r<index>`), which the judge card links to."""
    return f"s-{submission_id}" if index is None else f"s-{submission_id}-r{index}"


def _item(kind: Kind, rows: ItemRows, item_id: int, sides: list[dict], playable: bool,
          anchored: bool = False) -> dict:
    """An item with its systems' sides: its own text and tags (the explorer's, unscored), and
    its input players, served through the first side's submission. Anchored (the item page,
    one item a page): each side and each of its verdicts carries its anchor's id."""
    own = kind.explorer_item(rows, None, [], None)
    first = sides[0]["submission"] if sides else None
    for side in sides:
        side["anchor"] = anchor(side["submission"]) if anchored else ""
        # A kind without rubric rows judges one criterion an item: its verdict is the side's.
        side["verdict_anchor"] = anchor(side["submission"], 0) \
            if anchored and not own.get("rubrics") else ""
    # A kind whose explorer item lists rubrics (MMAE) has them compared row by row.
    rubrics = [(rubric, [(side["model"], side["s"]["rubrics"][n],
                          anchor(side["submission"], rubric["index"]) if anchored else "")
                         for side in sides])
               for n, rubric in enumerate(own.get("rubrics", []))]
    return {"id": item_id, "key": rows.key, "s": {**own, "key": rows.key}, "sides": sides,
            "rubrics": rubrics,
            "inputs": [f"input{n}" for n in range(1, len(rows.media) + 1)]
            if playable and first is not None else [],
            "input_submission": first, "template": kind.versus_template}


def systems(entries) -> list[dict]:
    """What a side says of its system: its label (names shared by two models told apart),
    model and submission."""
    labels = model_labels([e.model for e in entries])
    return [{"model": labels[e.model_id], "model_id": e.model_id, "submission": e.id,
             "run": e.current_run_id} for e in entries]


def pair_items(benchmark: Benchmark, a, b, ids: list[int]) -> list[dict]:
    """A page of items where A and B differ, in the order of `ids`, each with both sides:
    output, figures, verdicts and every vote. A few queries whatever the page's size."""
    kind = get_kind(benchmark.kind)
    rows, (criteria, criterion_ids) = _items(ids), _criteria(ids)
    sides_of = systems([a, b])
    results: dict[tuple[int, int], dict] = {
        (r["run_id"], r["item_id"]): r for r in ItemResult.objects.filter(
            run_id__in=[a.current_run_id, b.current_run_id], item_id__in=ids)
        .values("run_id", "item_id", *RESULT_COLUMNS)}
    runs = {r.id: r for r in ScoringRun.objects.filter(id__in=[s["run"] for s in sides_of])
            .only("id", "outputs", "missing")}
    answers = answers_of(runs, criterion_ids)
    playable = bool(benchmark.audio_root)
    held = withheld(benchmark)
    page = []
    for row in rows:
        item_rows = _item_rows(row, criteria.get(row.id, []))
        sides = [_side(kind, item_rows, system, results.get((system["run"], row.id)),
                       answers.get((system["run"], row.id), {}),
                       runs[system["run"]].outputs.get(row.key),
                       runs[system["run"]].missing.get(row.key, ""),
                       held=held(system["submission"], row.id))
                 for system in sides_of]
        page.append(_item(kind, item_rows, row.id, sides, playable))
    return page


class KeyText(Func):
    """The text under one key of a JSON object column. Django's key transforms read a key
    that looks like a number as an array index; an item's key is always a key."""

    output_field = TextField()

    def __init__(self, column: str, key: str):
        super().__init__(F(column), Value(key))

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="(%(expressions)s)",
                           arg_joiner=" ->> ", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        column, key = self.get_source_expressions()
        path = Value("$." + json.dumps(key.value))
        return Func(column, path, function="JSON_EXTRACT", output_field=TextField()) \
            .as_sql(compiler, connection, **extra)


def _outputs(run_ids: list[int], key: str) -> dict[int, tuple]:
    """run id -> (its output of item `key`, why it has none), read from the runs' JSON by
    key in the database: a run's outputs name every item, and a board holds many runs."""
    return {run: (output, missing or "") for run, output, missing in
            ScoringRun.objects.filter(id__in=run_ids)
            .annotate(output=KeyText("outputs", key), why=KeyText("missing", key))
            .values_list("id", "output", "why")}


def item_across(benchmark: Benchmark, key: str, ranked: list) -> dict | None:
    """Item `key` of the benchmark (None: no such item) with one side per representative in
    `ranked` (the board's order): each one's output, figures for the item and verdicts."""
    kind = get_kind(benchmark.kind)
    found = Item.objects.filter(benchmark=benchmark, key=key).values_list(*ITEM_FIELDS).first()
    if found is None:
        return None
    row = ItemRow(id=found[0], key=found[1], dimensions=found[2], content=found[3],
                  media=tuple(found[4]))
    criteria, criterion_ids = _criteria([row.id])
    item_rows = _item_rows(row, criteria.get(row.id, []))
    sides_of = systems(ranked)
    for system, entry in zip(sides_of, ranked, strict=True):
        system["rank"] = getattr(entry, "rank", None)
    runs = [s["run"] for s in sides_of]
    results = {r["run_id"]: r for r in ItemResult.objects.filter(run_id__in=runs, item_id=row.id)
               .values("run_id", *RESULT_COLUMNS)}
    answers = answers_of(runs, criterion_ids)
    outputs = _outputs(runs, key) if runs else {}
    held = withheld(benchmark)
    sides = [_side(kind, item_rows, system, results.get(system["run"]),
                   answers.get((system["run"], row.id), {}),
                   *outputs.get(system["run"], (None, "")),
                   held=held(system["submission"], row.id)) for system in sides_of]
    return _item(kind, item_rows, row.id, sides, bool(benchmark.audio_root), anchored=True)


class Ranked:
    """A representative with its rank on the board."""

    def __init__(self, entry, rank):
        self.entry, self.rank = entry, rank

    def __getattr__(self, name):
        return getattr(self.entry, name)


def board_order(benchmark: Benchmark) -> list[Ranked]:
    """The board's representatives in board order, with their ranks: the item page's sides.
    Read from the stored order (or ranked in the database), not by ranking the board in
    Python on every render (a second at 10,000 submissions)."""
    window, _, _ = board_pages.overall_order(benchmark)
    by_id = {entry.id: entry for entry in representatives(benchmark)}
    return [Ranked(by_id[pk], rank) for pk, rank, _ in window if pk in by_id]


def systems_page(benchmark: Benchmark, number: int) -> tuple[list[Ranked], dict]:
    """Page `number` of the board's representatives in board order, with their ranks, and
    its paging: the item page's sides, read as a window of the stored order (or of the
    database's ranking) and those rows' submissions only (not every representative: a
    first visit at 10,000 submissions read all of them for a page of 50)."""
    size = SYSTEMS_PER_PAGE
    window, total, _ = board_pages.overall_window(benchmark, start=(number - 1) * size,
                                                  stop=number * size)
    paging = board_pages.paging(number, size, total)
    by_id = shown(benchmark, [pk for pk, *_ in window])
    return [Ranked(by_id[pk], rank) for pk, rank, _ in window if pk in by_id], paging


def item_linker(benchmark: Benchmark):
    """`link(key, submission, index)`: the address of one system's verdict on one rubric on
    an item page, on the page of systems that shows it (the board order read once)."""
    page_of = {entry.id: 1 + n // SYSTEMS_PER_PAGE
               for n, entry in enumerate(board_order(benchmark))}

    def link(key: str, submission_id: int, index: int) -> str:
        page = page_of.get(submission_id, 1)
        query = f"?page={page}" if page > 1 else ""
        return (reverse("leaderboard:item", args=[benchmark.slug, key]) + query
                + "#" + anchor(submission_id, index))

    return link


def neighbours(benchmark: Benchmark, item_id: int, *, dimension: str = "",
               bucket: str = "") -> tuple[str | None, str | None]:
    """The keys of the items before and after `item_id` in benchmark order, within the
    slice (every item where no dimension is given); None at either end."""
    items = _in_slice(Item.objects.filter(benchmark=benchmark), dimension, bucket)
    position = Item.objects.filter(id=item_id).values_list("position", flat=True).first()
    before = items.filter(position__lt=position).order_by("-position") \
        .values_list("key", flat=True).first()
    after = items.filter(position__gt=position).order_by("position") \
        .values_list("key", flat=True).first()
    return before, after
