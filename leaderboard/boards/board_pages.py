"""A page of a board without ranking the whole board per request. The slice's ranked order
comes from the row the worker stored for the board's state (leaderboard.boards.rank_ranges, read
with its rank ranges in one query), or, where it has not yet run on that state, from the
database ranking one window of it (leaderboard.boards.ranked_sql); then only the page's rows are
read: their submissions, models and slice figures. Reported and diagnostic rows are placed
where their figures put them, as selectors.board_table places them.

Queries that filter (search, licence, open weights) or sort by a column that does not rank
keep selectors' full ranking in Python; so does everything that needs every row.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter

from django.core.paginator import EmptyPage, Paginator
from django.http import Http404

from leaderboard.boards import rank_ranges, ranked_sql, ranking, selectors, state
from leaderboard.boards.state import OVERALL, shown
from leaderboard.models import ReferenceFigure
from scoring.kinds import Kind, get_kind
from scoring.models import Benchmark, SliceResult
from submissions import signals
from submissions.attempts import attempts_by_model


def fast(kind: Kind, query: selectors.BoardQuery) -> bool:
    """Whether the query's rows are a window of a ranked order (no filter, ranked sort)."""
    return not query.search.strip() and query.open_weights is None and not query.licence \
        and not query.no_clipping and not query.judge_family \
        and (query.sort == "rank" or selectors.ranked_metric(kind, query) is not None)


# The name under which a board state keeps the submission ids of its overall ranking's top two.
TOP_IDS = "top-two-ids"


def _window(benchmark: Benchmark, kind: Kind, dimension: str, bucket: str,
            metric: str | None, *, start: int, stop: int,
            descending: bool) -> tuple[list[tuple], int, dict]:
    """Ranked rows [start, stop) of a slice, as (submission id, rank, key) in board order
    (reversed when `descending`); how many it ranks; its stored rank ranges for the sort
    (the window's rows only: a slice's are 10,000 lists at 10,000 submissions)."""
    ranges, entries, total = rank_ranges.stored_window(
        benchmark, dimension, bucket, metric or ranking.RANK, start=start, stop=stop,
        descending=descending)
    if entries is not None and metric is None:  # the worker stores the ranking's orders
        rows = [(e[0], e[1], tuple(e[2:])) for e in entries]
    else:
        figures = list(kind.ranking) if metric is None else [metric, *kind.ranking]
        rows, total = ranked_sql.window(benchmark, figures, dimension, bucket, start=start,
                                        stop=stop, descending=descending)
        if total is None:
            total = ranked_sql.count(benchmark, dimension, bucket) if start else 0
        if dimension == OVERALL and metric is None and not descending and start == 0 \
                and stop >= 2:
            # The overall ranking's first rows: the compare link's top two, kept for the state
            # (a cold board at 10,000 submissions asked the database for them again, 43 ms).
            state.kept(state.board_state(benchmark), TOP_IDS,
                       lambda: [pk for pk, _, _ in rows[:2]])
    shown = {str(pk) for pk, _, _ in rows}
    return rows, total, {pk: pair for pk, pair in ranges.items() if pk in shown}


def _place(key: tuple, keys: list[tuple], start: int, descending: bool) -> int:
    """How many ranked rows come before a reference row of `key`, given the window `keys`
    starting at `start` (exact within the window; `start` for one before it). A reference
    row comes after the ranked rows it ties with, so before them in a reversed board."""
    if descending:
        key, keys = tuple(-k for k in key), [tuple(-k for k in ks) for ks in keys]
    if not keys or key < keys[0]:
        return start
    return start + (bisect_left if descending else bisect_right)(keys, key)


def _merged(window: list[tuple], start: int, references: list[tuple], descending: bool):
    """(position, ranked entry or reference row) of the window's rows and every reference
    row, in the board's merged order."""
    places = [_place(key, [k for *_, k in window], start, descending)
              for key, _, _ in references]
    merged = [(place + j, row) for j, (place, (_, _, row)) in enumerate(zip(
        places, references, strict=True))]
    for w, entry in enumerate(window):
        merged.append((start + w + sum(1 for p in places if p <= start + w), entry))
    return sorted(merged, key=lambda m: m[0])


def ranked_page(benchmark: Benchmark, query: selectors.BoardQuery, *, number: int, size: int,
                references: list[dict] = ()) -> tuple[list[dict], int]:
    """Page `number` (of `size` rows) of a board slice in rank order (or reversed), with the
    reference rows where their figures place them; and how many rows the board lists."""
    kind = get_kind(benchmark.kind)
    bucket = query.bucket if query.dimension != OVERALL else ""
    metric = selectors.ranked_metric(kind, query)
    rank_key = selectors.key_function(kind, metric)
    placed = sorted(((rank_key(selectors.placed_figures(kind, r)), i, r)
                     for i, r in enumerate(references)), key=lambda p: p[:2])
    placed = placed[::-1] if query.descending else placed
    first = (number - 1) * size
    start = max(0, first - len(placed))
    window, total, ranges = _window(benchmark, kind, query.dimension, bucket, metric,
                                    start=start, stop=first + size,
                                    descending=query.descending)
    entries = [e for p, e in _merged(window, start, placed, query.descending)
               if first <= p < first + size]
    ranked = _rows(benchmark, kind, query.dimension, bucket,
                   [e for e in entries if isinstance(e, tuple)],
                   ranges)
    _decided(benchmark, kind, query, window, start, metric, ranked)
    rows = [ranked.get(e[0]) if isinstance(e, tuple) else e for e in entries]
    return [r for r in rows if r is not None], total + len(placed)


def standing(benchmark: Benchmark, submission_id: int) -> dict | None:
    """Where a submission stands on its board's overall ranking, as the board lists it:
    its rank, its rank range (None until the worker stored them), how many rows are ranked
    and its position among the board's rows (reference rows inline); None when the board
    ranks it nowhere. Read from the stored order, or, before the worker stored the board's
    state, as the one row of the database's ranking (a model page read the whole order
    there: 10,000 rows for one); never by ranking the whole board in Python."""
    kind = get_kind(benchmark.kind)
    ranges, entries, _ = rank_ranges.stored_window(benchmark, OVERALL, "", ranking.RANK,
                                                   start=0, stop=0)
    if entries is not None:  # the worker's order of this state
        window, total, ranges = overall_order(benchmark)
        place = next((i for i, (pk, _, _) in enumerate(window) if pk == submission_id), None)
        if place is None:
            return None
        rank, key = window[place][1], window[place][2]
    else:
        found = ranked_sql.place(benchmark, list(kind.ranking), OVERALL, "", submission_id)
        if found is None:
            return None
        place, rank, total, key = found
    # A reference row comes after the ranked rows it ties with (_place): before this row
    # exactly when its key is the smaller.
    rank_key = selectors.key_function(kind, None)
    before = sum(1 for r in selectors.reference_rows(benchmark=benchmark, kind=kind)
                 if rank_key(selectors.placed_figures(kind, r)) < key)
    found_range = ranges.get(str(submission_id))
    return {"rank": rank, "range": tuple(found_range) if found_range else None,
            "of": total, "position": place + before}


def overall_window(benchmark: Benchmark, *, start: int,
                   stop: int) -> tuple[list[tuple], int, dict]:
    """Rows [start, stop) of the overall ranking as (submission id, rank, key) in board
    order, how many it ranks and its stored rank ranges: the stored order, or the database's
    ranking."""
    return _window(benchmark, get_kind(benchmark.kind), OVERALL, "", None, start=start,
                   stop=stop, descending=False)


def overall_order(benchmark: Benchmark) -> tuple[list[tuple], int, dict]:
    """The whole overall ranking (overall_window's rows, every one)."""
    bound = max(benchmark.submissions.count(), 1)  # no slice ranks more rows than this
    return overall_window(benchmark, start=0, stop=bound)


def _decided(benchmark: Benchmark, kind: Kind, query: selectors.BoardQuery,
             window: list[tuple], start: int, metric: str | None, rows: dict) -> None:
    """Each row's `decided_by` (as selectors._ranked gives it): the figure of the ranking key
    on which it differs from the row ranked just above it, read from the stored keys; that
    row, when outside the window, read as a window of one (before it, or after it on a
    reversed board)."""
    bucket = query.bucket if query.dimension != OVERALL else ""
    if query.descending:
        at = start + len(window)
    else:
        at = start - 1
    extra = _window(benchmark, kind, query.dimension, bucket, metric, start=at, stop=at + 1,
                    descending=query.descending)[0][:1] if at >= 0 else []
    ascending = list(reversed(window + extra)) if query.descending else extra + window
    names = selectors.key_metrics(kind, metric)
    places = ranking.deciders([tuple(k) for *_, k in ascending])
    for index, ((pk, _, _), place) in enumerate(zip(ascending, places, strict=True)):
        if pk in rows and index >= len(extra):  # the extra row comes first either way
            rows[pk]["decided_by"] = names[place] if place is not None else \
                selectors.TIED if index else None


def _rows(benchmark: Benchmark, kind: Kind, dimension: str, bucket: str, entries: list[tuple],
          ranges: dict) -> dict[int, dict]:
    """submission id -> its board row, for the window's entries only."""
    subs = shown(benchmark, [pk for pk, _, _ in entries])
    figures = {f.run_id: f for f in SliceResult.objects.filter(
        run_id__any=[s.current_run_id for s in subs.values()], dimension=dimension,
        bucket=bucket)}
    attempts = attempts_by_model(benchmark.slug, [s.model_id for s in subs.values()])
    rows = {}
    for pk, rank, _ in entries:
        submission = subs.get(pk)
        if submission is not None and submission.current_run_id in figures:
            found = ranges.get(str(pk))
            rows[pk] = {**selectors.board_row(submission, figures[submission.current_run_id], kind),
                        "rank": rank, "rank_range": tuple(found) if found else None,
                        "attempts": attempts.get(submission.model_id, 0)}
    return rows


class PastTheLastPage(Http404):
    """A page past the end: not found (it would be one more cached copy of an empty page)."""

    def __init__(self, number: int, pages: int):
        super().__init__(f"page {number} is past the last page ({pages})")
        self.pages = pages


def paging(number: int, size: int, total: int) -> dict:
    """What a page's links need, from Django's Paginator over `total` rows (PastTheLastPage
    for a page past the end)."""
    pages = Paginator(range(total), size)
    try:
        page = pages.page(number)
    except EmptyPage:
        raise PastTheLastPage(number, pages.num_pages) from None
    return {"number": page.number, "pages": pages.num_pages, "total": total,
            "previous": page.previous_page_number() if page.has_previous() else None,
            "next": page.next_page_number() if page.has_next() else None}


def board_page(benchmark: Benchmark, query: selectors.BoardQuery, *, number: int,
               size: int) -> tuple[list[dict], dict]:
    """A board page's rows (selectors.board_table's, page `number`) and its paging."""
    kind = get_kind(benchmark.kind)
    if not fast(kind, query):
        table = selectors.board_table(benchmark=benchmark, query=query)
        info = paging(number, size, len(table))
        return table[(number - 1) * size: number * size], info
    references = selectors.reference_rows(
        benchmark=benchmark, kind=kind, dimension=query.dimension,
        bucket=query.bucket) if query.references else []
    rows, total = ranked_page(benchmark, query, number=number, size=size,
                              references=references)
    return rows, paging(number, size, total)


def api_rows(benchmark: Benchmark, query: selectors.BoardQuery, *, number: int,
             size: int) -> tuple[list[dict], int]:
    """The read API's page of ranked rows (selectors.leaderboard_rows's) and their count."""
    kind = get_kind(benchmark.kind)
    if not fast(kind, query):
        rows = selectors.leaderboard_rows(benchmark=benchmark, query=query)
        return rows[(number - 1) * size: number * size], len(rows)
    return ranked_page(benchmark, query, number=number, size=size)


def board_slices(benchmark: Benchmark) -> set[tuple[str, str]]:
    """(dimension, bucket) of the slices the board's rows have figures for in its current
    state: as the worker stored them for that state, else from the database (never a past
    state's: a submission may bring a bucket the board did not have)."""
    board = state.board_state(benchmark)
    found = rank_ranges.stored_slices(benchmark, board.stamp) if board.ranged else []
    if not found:
        return ranked_sql.slices(benchmark)
    return {s for s in found if s[0] != OVERALL}


def bucket_choices(benchmark: Benchmark) -> dict[str, list[str]]:
    """selectors.bucket_choices without reading every slice of the board."""
    kind = get_kind(benchmark.kind)
    found = board_slices(benchmark)
    found |= set(ReferenceFigure.objects.filter(result__benchmark_slug=benchmark.slug)
                 .exclude(dimension=OVERALL).values_list("dimension", "bucket").distinct())
    choices: dict[str, list[str]] = {d: [] for d in kind.dimension_keys}
    for dimension, bucket in sorted(found, key=lambda f: (f[0], kind.bucket_key(*f))):
        choices.setdefault(dimension, []).append(bucket)
    return choices


def board_buckets(benchmark: Benchmark) -> dict[str, list[str]]:
    """The board state's bucket choices, for what validates a slice (the read API, the
    datasets, the board's form), made once per state apart from the snapshot (which also
    reads the licences and the calibration baselines, which the API never shows)."""
    return state.kept(state.board_state(benchmark), "buckets",
                      lambda: bucket_choices(benchmark))


def board_snapshot(benchmark: Benchmark) -> dict:
    """What every view of a board needs (bucket and licence choices, the calibration
    baselines), made once per board state."""
    return state.kept(state.board_state(benchmark), "snapshot",
                      lambda: {"buckets": board_buckets(benchmark),
                               "licences": ranked_sql.licences(benchmark),
                               "clipping": signals.any_clipping(benchmark),
                               "diagnostics": selectors.diagnostic_rows(benchmark)})


def top_two(benchmark: Benchmark) -> str:
    """The board's top two models, as the compare link names them ("id,id"), once per board
    state: the stored order's first two rows, or, before the worker stored the state, those
    of the board's first page when this process ranked it (`_window`), else the database's
    first two (no rank or count over the slice: 34 ms at 10,000 submissions, against 55 ms
    for the board's window)."""
    board = state.board_state(benchmark)

    def first_two() -> list[int]:
        kind = get_kind(benchmark.kind)
        return [pk for pk, _, _ in overall_window(benchmark, start=0, stop=2)[0]] \
            if board.ranged else ranked_sql.first(benchmark, list(kind.ranking), OVERALL, "", 2)

    def read() -> str:
        top = state.kept(board, TOP_IDS, first_two)  # or the board's first page's (_window)
        models = shown(benchmark, top)
        return ",".join(str(models[pk].model_id) for pk in top if pk in models)

    return state.kept(board, "top-two", read)


def pivot_page(benchmark: Benchmark, *, dimension: str, metric: str, number: int,
               size: int) -> tuple[dict, dict]:
    """A page of the pivot (model_pages.pivot's rows, in board order) and its paging: the
    board's top rows read as a board page reads them, their slices of the dimension."""
    kind = get_kind(benchmark.kind)
    window, total, _ = _window(benchmark, kind, OVERALL, "", None, start=(number - 1) * size,
                               stop=number * size, descending=False)
    info = paging(number, size, total)
    subs = shown(benchmark, [pk for pk, _, _ in window])
    cells: dict[int, dict[str, tuple]] = {s.current_run_id: {} for s in subs.values()}
    for run, bucket, n, values in SliceResult.objects.filter(
            run_id__any=list(cells), dimension=dimension).values_list(
            "run_id", "bucket", "n", "values"):
        cells[run][bucket] = (n, {"n": n, **values}.get(metric))
    buckets = sorted({b for d, b in board_slices(benchmark) if d == dimension},
                     key=lambda b: kind.bucket_key(dimension, b))
    models = [subs[pk].model for pk, _, _ in window if pk in subs]
    shared = ranked_sql.name_counts(benchmark, sorted({m.name for m in models}))
    labels = labelled(models, shared)
    rows = []
    for pk, rank, _ in window:
        if pk not in subs:
            continue
        found = cells[subs[pk].current_run_id]
        rows.append({"rank": rank, "model": labels[subs[pk].model_id],
                     "model_id": subs[pk].model_id, "submission": pk,
                     "cells": [found[b][1] if b in found else None for b in buckets],
                     "n": [found[b][0] if b in found else None for b in buckets]})
    return {"dimension": dimension, "metric": metric, "buckets": buckets, "rows": rows}, info


def labelled(models: list, counts: Counter | dict) -> dict[int, str]:
    """Display names, with the id added where two of the board's models share a name."""
    return {m.id: m.name if counts.get(m.name, 0) <= 1 else f"{m.name} (#{m.id})"
            for m in models}


def pivot_metric(benchmark: Benchmark, dimension: str) -> str:
    """The metric a pivot opens on: the first ranking metric whose cells differ."""
    kind = get_kind(benchmark.kind)
    return ranked_sql.differing(benchmark, list(kind.ranking), dimension) or kind.ranking[0]
