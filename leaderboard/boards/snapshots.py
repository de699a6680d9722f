"""Citable boards: the first visit to `/b/<slug>/v/<version>/` while `version` is the board's
current version keeps a snapshot of it (its overall rows as the read API gives them and its
items dataset), which that address then shows for good, whatever the board becomes. A version
nobody cited while it was current was never kept: its address answers 404."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from leaderboard.boards import datasets, selectors, serializers, state
from leaderboard.models import BoardSnapshot
from scoring.kinds import get_kind
from scoring.models import Benchmark


def snapshot_get(slug: str, version: int) -> BoardSnapshot | None:
    """The snapshot of board `slug` at board version `version` (of its newest benchmark
    version that has one): kept now if that is the current board's version and nobody kept
    it yet; None for a version never kept and no longer current."""
    found = BoardSnapshot.objects.filter(benchmark__slug=slug, board_version=version) \
        .select_related("benchmark").order_by("-benchmark__version").first()
    if found is not None:
        return found
    benchmark = state.benchmark_current(slug)
    if benchmark is None or benchmark.board_version != version:
        return None
    return _take(benchmark)


def _take(benchmark: Benchmark) -> BoardSnapshot | None:
    kind = get_kind(benchmark.kind)
    stamp = state.board_stamp(benchmark)
    rows = serializers.BoardRowOut(selectors.leaderboard_rows(benchmark=benchmark), many=True,
                                   context={"kind": kind}).data
    items = b"".join(datasets.stream(benchmark, "parquet"))
    version = Benchmark.objects.values_list("board_version", flat=True).get(pk=benchmark.pk)
    if version != benchmark.board_version:  # it changed while being read: not that version
        return None
    try:
        with transaction.atomic():
            return BoardSnapshot.objects.create(
                benchmark=benchmark, board_version=benchmark.board_version, state=stamp,
                rows=[dict(row) for row in rows], items=items)
    except IntegrityError:  # another visit kept it first: theirs is the one
        return BoardSnapshot.objects.get(benchmark=benchmark,
                                         board_version=benchmark.board_version)
