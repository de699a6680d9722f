"""A board's rank ranges, stored per board state: computed from the runs' per-item vectors by the
paired bootstrap of leaderboard.boards.ranking whenever the board's state changes (by the
worker: leaderboard.tasks), read by the board, and the paired differences of two submissions for the
compare page."""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.db import connection, transaction

from config import page_cache
from leaderboard.boards.ranking import (
    RANK,
    REPLICATES,
    SEED,
    board_order,
    draws,
    separable_differences,
    slice_ranges,
    verdict,
)
from leaderboard.boards.state import board_stamp, representatives
from leaderboard.models import RankRanges
from scoring.boards import state_token
from scoring.kinds import get_kind
from scoring.kinds.base import rank_value
from scoring.models import Benchmark, Item, RunVector, SliceResult

log = logging.getLogger(__name__)
# A slice of fewer items than this shows its difference and interval but no verdict: a
# bootstrap of a handful of items says little, and such slices are many.
# Slices whose ranges are computed at once (each holds a few replicates x rows arrays: about
# 0.5 GB at 10,000 rows and 1,000 replicates).
SLICE_THREADS = max(1, min(2, os.cpu_count() or 1))
MIN_VERDICT_ITEMS = 10
TOO_FEW = "too few items"
# Each verdict's interval is 95%: between two equal systems, one verdict in twenty would
# still read "ahead".
CHANCE_SHARE = 0.05


def slice_figures(submissions: list) -> dict[tuple[str, str], dict[int, dict]]:
    """{(dimension, bucket): {run id: its figures}} of the board's rows, every slice."""
    figures: dict[tuple[str, str], dict[int, dict]] = {}
    for dimension, bucket, run, n, values in SliceResult.objects.filter(
            run_id__in=[s.current_run_id for s in submissions]).values_list(
            "dimension", "bucket", "run_id", "n", "values"):
        figures.setdefault((dimension, bucket), {})[run] = {"n": n, **values}
    return figures


def orders(benchmark: Benchmark, submissions: list,
           figures: dict[tuple[str, str], dict[int, dict]]) -> dict[tuple[str, str], list]:
    """Every slice's ranked order as RankRanges.order keeps it, ranked as the board ranks
    (leaderboard.boards.ranking.board_order, the kind's ranking key)."""
    kind = get_kind(benchmark.kind)
    result = {}
    for slice_key, by_run in figures.items():
        shown = [s for s in submissions if s.current_run_id in by_run]
        keys = [kind.rank_key(by_run[s.current_run_id]) for s in shown]
        order = board_order(keys, [s.model.name for s in shown], [s.id for s in shown])
        result[slice_key] = [[shown[i].id, rank, *keys[i]] for i, rank in order]
    return result


def compute(benchmark: Benchmark, submissions: list, *, replicates: int = REPLICATES,
            seed: int = SEED, figures: dict | None = None) -> dict[tuple[str, str], dict]:
    """Every slice's ranges of the board's rows (`submissions`, its representatives) and what
    its bootstrap can tell apart: {(dimension, bucket): {"ranges": {RANK or metric:
    {submission id: [best, worst]}}, "separable": {"items": n, "metrics":
    ranking.separable_differences}}}."""
    kind = get_kind(benchmark.kind)
    dims = list(Item.objects.filter(benchmark=benchmark).order_by("position")
                .values_list("dimensions", flat=True))
    runs = {s.current_run_id: s for s in submissions}
    vectors = {v.run_id: v.array() for v in RunVector.objects.filter(run_id__in=list(runs))
               if v.names == list(kind.vector_names)}
    vectors = {run: array for run, array in vectors.items() if len(array) == len(dims)}
    resampled = [run for run in runs if run in vectors]
    others = [run for run in runs if run not in vectors]
    stacked = np.stack([vectors[r] for r in resampled], axis=1) if resampled else None
    position = {run: i for i, run in enumerate(resampled)}
    figures = slice_figures(submissions) if figures is None else figures
    weights = draws(len(dims), replicates=replicates, seed=seed) if dims else None
    metrics = [m.key for m in kind.metrics if not m.count]

    def one_slice(slice_key: tuple[str, str]) -> dict:
        dimension, bucket = slice_key
        by_run = figures[slice_key]
        at = [i for i, d in enumerate(dims)
              if dimension == SliceResult.OVERALL or bucket in kind.buckets(dimension, d)]
        # Only the rows shown on this slice: those with figures for it.
        shown = [r for r in resampled if r in by_run]
        kept = [r for r in others if r in by_run]
        fixed = {m: np.array([_figure(by_run[r].get(m)) for r in kept]) for m in metrics}
        values = {}
        if shown and at:
            # One fancy index for the slice (its items x its rows x the vector's names): at
            # 10,000 rows, looking each row up in the list took 123 s of a refresh's 573.
            part = stacked[np.ix_(at, [position[r] for r in shown])]
            values = {name: part[:, :, k] for k, name in enumerate(kind.vector_names)}
        chosen = [dims[i] for i in at] if shown else []
        picked = weights[:, at] if at and shown else np.zeros((replicates, 0))
        spread = kind.replicate_figures(picked, values, chosen) if chosen else {}
        ranges = slice_ranges(kind, weights=picked, values=values, dims=chosen, fixed=fixed,
                              figures=spread)
        order = [runs[r].id for r in [*shown, *kept]]
        return {"ranges": {key: dict(zip(map(str, order), pairs, strict=True))
                           for key, pairs in ranges.items()},
                "separable": {"items": len(at), "metrics": separable_differences(
                    kind, values=values, dims=chosen, spread=spread)}}

    # Slices on threads of their own: NumPy's sorts, most of the work, let go of the GIL.
    if SLICE_THREADS == 1:
        return {slice_key: one_slice(slice_key) for slice_key in figures}
    with ThreadPoolExecutor(max_workers=SLICE_THREADS) as pool:
        return dict(zip(figures, pool.map(one_slice, figures), strict=True))


def _figure(value) -> float:
    return np.nan if value is None else rank_value(value)


def refresh(benchmark: Benchmark, *, replicates: int = REPLICATES) -> bool:
    """Compute and store the board's ranges unless they are already those of its current
    state; True when it computed."""
    benchmark = Benchmark.objects.get(pk=benchmark.pk)  # its board's state as it is now
    state = board_stamp(benchmark)
    if _stored_state(benchmark) == {state}:
        return False
    shown = representatives(benchmark)
    figures = slice_figures(shown)
    computed = compute(benchmark, shown, replicates=replicates, figures=figures)
    ordered = orders(benchmark, shown, figures)
    with transaction.atomic():
        # Refreshes of one board that finish at once store one after another (the unique
        # slice constraint would refuse the second's rows); one finding the state already
        # stored changes nothing.
        Benchmark.objects.select_for_update().get(pk=benchmark.pk)
        if _stored_state(benchmark) == {state}:
            return False
        RankRanges.objects.filter(benchmark=benchmark).delete()
        # One INSERT per slice: bulk_create sends the JSON as a text array, whose every
        # quote psycopg escapes in Python (3.7 s of a refresh at 10,000 rows).
        for (d, b), found in computed.items():
            RankRanges.objects.create(benchmark=benchmark, state=state, dimension=d,
                                      bucket=b, ranges=found["ranges"],
                                      separable=found["separable"], order=ordered[(d, b)],
                                      replicates=replicates)
        # Pages made while the ranges were computed are replaced once they are stored.
        transaction.on_commit(lambda: page_cache.publish(
            {benchmark.id: state_token(benchmark.board_version, True)}), robust=True)
    log.info("rank ranges of %s computed for %d slices", benchmark, len(computed))
    return True


def _stored_state(benchmark: Benchmark) -> set[str]:
    return set(RankRanges.objects.filter(benchmark=benchmark).values_list("state", flat=True))


def _current(benchmark: Benchmark, dimension: str, bucket: str, *fields: str) -> tuple | None:
    """`fields` of one slice's row as stored for the board's current state; None while the
    worker computes that state (a past state's row is never read as the current one's)."""
    found = RankRanges.objects.filter(benchmark=benchmark, dimension=dimension,
                                      bucket=bucket).values_list("state", *fields).first()
    if found is None or found[0] != board_stamp(benchmark):
        return None
    return found[1:]


def stored(benchmark: Benchmark, dimension: str, bucket: str) -> dict:
    """The ranges of one slice stored for the board's current state; {} while the worker
    computes them: a past state's ranges are never shown beside the new state's ranks."""
    found = _current(benchmark, dimension, bucket, "ranges")
    return (found and found[0]) or {}


def stored_separable(benchmark: Benchmark, dimension: str, bucket: str) -> dict | None:
    """What one slice's bootstrap can tell apart ({"items", "metrics"}), as stored for the
    board's current state; None while the worker computes it."""
    found = _current(benchmark, dimension, bucket, "separable")
    return found[0] if found else None


def stored_window(benchmark: Benchmark, dimension: str, bucket: str, key: str = RANK, *,
                  start: int, stop: int, descending: bool = False) -> tuple[dict, list | None, int]:
    """Where the worker stored the board's current state: one slice's ranges for the ranking
    or a sort by a figure (`key`), entries [start, stop) of its order (reversed when
    `descending`) and their number. Else ({}, None, 0): the board ranks in the database and
    shows no ranges until they are computed (never a past state's). A slice's JSON is large:
    only the window of the order is read (on PostgreSQL; elsewhere it is cut here)."""
    first = _current(benchmark, dimension, bucket, "id", f"ranges__{key}")
    if first is None:
        return {}, None, 0
    pk, ranges = first
    found = RankRanges.objects.filter(pk=pk)
    if connection.vendor != "postgresql":
        order = found.values_list("order", flat=True).first()
        ordered = order[::-1] if descending else order
        return ranges or {}, ordered[start:stop], len(order)
    path = f"$[last - {stop - 1} to last - {start}]" if descending \
        else f"$[{start} to {stop - 1}]"
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT jsonb_array_length("order"), jsonb_path_query_array("order", '
                       f'%s::jsonpath) FROM {RankRanges._meta.db_table} WHERE id = %s',
                       [path, pk])
        total, entries = cursor.fetchone()
    entries = json.loads(entries) if isinstance(entries, str) else entries
    entries = entries if stop > start else []
    return ranges or {}, entries[::-1] if descending else entries, total


def stored_slices(benchmark: Benchmark, stamp: str) -> list[tuple[str, str]]:
    """(dimension, bucket) of the slices the board's rows have figures for, as the worker
    stored them for the state `stamp` ([] where it stored another state's)."""
    return list(RankRanges.objects.filter(benchmark=benchmark, state=stamp)
                .values_list("dimension", "bucket"))


def paired_differences(benchmark: Benchmark, a, b, *, replicates: int = REPLICATES,
                       seed: int = SEED) -> list[dict]:
    """Whether two submissions are really apart: for every slice and metric, the difference
    A - B on the board's basis (every item of the slice, a missing output scoring as the board
    scores it), with a paired bootstrap 95% interval (one resample of the items for both) and a
    verdict ("A ahead", "B ahead", "not separable", or TOO_FEW under MIN_VERDICT_ITEMS items).
    Empty when either run has no per-item values."""
    kind = get_kind(benchmark.kind)
    found = {v.run_id: v for v in RunVector.objects.filter(
        run_id__in=[a.current_run_id, b.current_run_id], names=list(kind.vector_names))}
    if a.current_run_id not in found or b.current_run_id not in found:
        return []
    dims = list(Item.objects.filter(benchmark=benchmark).order_by("position")
                .values_list("dimensions", flat=True))
    mine, theirs = found[a.current_run_id].array(), found[b.current_run_id].array()
    if len(mine) != len(dims) or len(theirs) != len(dims):
        return []
    slices = sorted(set(SliceResult.objects.filter(run_id=a.current_run_id)
                        .values_list("dimension", "bucket")),
                    key=lambda s: (s[0] != SliceResult.OVERALL,
                                   kind.dimension_keys.index(s[0])
                                   if s[0] in kind.dimension_keys else 99,
                                   kind.bucket_key(*s)))
    metrics = [m for m in kind.metrics if not m.count]
    rows = []
    for dimension, bucket in slices:
        at = [i for i, d in enumerate(dims)
              if dimension == SliceResult.OVERALL or bucket in kind.buckets(dimension, d)]
        if not at:
            continue
        values = {name: np.stack([mine[at, k], theirs[at, k]], axis=1)
                  for k, name in enumerate(kind.vector_names)}
        chosen = [dims[i] for i in at]
        point = kind.replicate_figures(np.ones((1, len(at))), values, chosen)
        spread = kind.replicate_figures(draws(len(at), replicates=replicates, seed=seed),
                                        values, chosen)
        cells = []
        for metric in metrics:
            difference = point[metric.key][0, 0] - point[metric.key][0, 1]
            if np.isnan(difference):
                cells.append({"metric": metric, "difference": None})
                continue
            lo, hi = np.nanpercentile(spread[metric.key][:, 0] - spread[metric.key][:, 1],
                                      [2.5, 97.5])
            lo, hi = round(float(lo), 9), round(float(hi), 9)
            cells.append({"metric": metric, "difference": float(difference), "lo": lo,
                          "hi": hi, "verdict": verdict(lo, hi) if len(at) >= MIN_VERDICT_ITEMS
                          else TOO_FEW})
        rows.append({"dimension": dimension, "bucket": bucket, "n": len(at), "cells": cells,
                     "dimension_label": kind.dimension_label(dimension)})
    return rows
