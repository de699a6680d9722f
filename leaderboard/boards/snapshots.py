"""Citable boards: a snapshot keeps a board state's overall rows (as the read API gives them)
and cites that state's stored items dataset (leaderboard.boards.dataset_files), one per board
state at most. The worker takes one of a board's current state once its rank ranges are
stored, at most every EVERY_SECONDS (a day); staff take one with `manage.py snapshot_board`.
A visitor never does: a version nobody kept answers 404.

What was withdrawn since (a submission made private, hidden or deleted) leaves every snapshot
at once: its rows are read through the published rule (submissions.models: shown) on every
request, and its items file is sent without their rows."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.db import IntegrityError, transaction
from django.utils import timezone

from config import signing
from leaderboard.boards import dataset_files, selectors, serializers, state
from leaderboard.models import BoardSnapshot
from scoring.kinds import get_kind
from scoring.models import Benchmark
from submissions.models import Submission

# The worker keeps a board's current state at most this often: a day's snapshots cost one
# items file each, however often the board changes.
EVERY_SECONDS = 86400


def snapshot_get(slug: str, version: int) -> BoardSnapshot | None:
    """The snapshot of board `slug` at board version `version` (of its newest benchmark
    version that has one), or None for a version nobody kept."""
    return BoardSnapshot.objects.filter(benchmark__slug=slug, board_version=version) \
        .select_related("benchmark").order_by("-benchmark__version").first()


def snapshot_latest(benchmark: Benchmark) -> int | None:
    """The board version of the board's newest snapshot, for its "Cite this board" link."""
    return BoardSnapshot.objects.filter(benchmark=benchmark).order_by("-board_version") \
        .values_list("board_version", flat=True).first()


def snapshot_take(*, benchmark: Benchmark) -> BoardSnapshot | None:
    """A snapshot of the board's current state (read afresh), taken unless one is kept
    already; None when the board changed while it was read."""
    benchmark = Benchmark.objects.get(pk=benchmark.pk)
    found = BoardSnapshot.objects.filter(benchmark=benchmark,
                                         board_version=benchmark.board_version).first()
    if found is not None:
        return found
    rows = serializers.BoardRowOut(selectors.leaderboard_rows(benchmark=benchmark), many=True,
                                   context={"kind": get_kind(benchmark.kind)}).data
    items = dataset_files.dataset_build(benchmark, "parquet")
    if items is None or not Benchmark.objects.filter(
            pk=benchmark.pk, board_version=benchmark.board_version).exists():
        return None
    try:
        with transaction.atomic():
            return BoardSnapshot.objects.create(
                benchmark=benchmark, board_version=benchmark.board_version,
                state=state.board_stamp(benchmark), rows=[dict(row) for row in rows],
                items_file=items)
    except IntegrityError:  # another worker kept it first: theirs is the one
        return BoardSnapshot.objects.get(benchmark=benchmark,
                                         board_version=benchmark.board_version)


def snapshot_due(*, benchmark: Benchmark) -> BoardSnapshot | None:
    """The worker's snapshot of the board's current state, once its rank ranges are stored,
    unless the board's newest snapshot is younger than EVERY_SECONDS."""
    benchmark = Benchmark.objects.get(pk=benchmark.pk)
    if not state.board_state(benchmark).ranged:
        return None
    since = timezone.now() - timedelta(seconds=EVERY_SECONDS)
    if BoardSnapshot.objects.filter(benchmark=benchmark, taken_at__gt=since).exists():
        return None
    return snapshot_take(benchmark=benchmark)


def withdrawn(snapshot: BoardSnapshot) -> list[int]:
    """The submissions of the snapshot's rows that are no longer shown (made private, hidden
    or deleted since), in id order."""
    ids = {row["submission"] for row in snapshot.rows}
    still = set(Submission.objects.shown().filter(id__in=ids).values_list("id", flat=True))
    return sorted(ids - still)


def snapshot_etag(snapshot: BoardSnapshot, gone: list[int], what: str) -> str:
    """The validator of a snapshot's page or file: moves with what was withdrawn from it."""
    parts = f"{snapshot.pk}|{snapshot.board_version}|{what}|{','.join(map(str, gone))}"
    return f'"{hashlib.sha256(parts.encode()).hexdigest()[:40]}"'


def shown_rows(snapshot: BoardSnapshot, gone: list[int]) -> list[dict]:
    """The snapshot's rows but those of the submissions `gone`."""
    out = set(gone)
    return [row for row in snapshot.rows if row["submission"] not in out]


def signed_body(snapshot: BoardSnapshot, gone: list[int]) -> dict:
    """The snapshot as JSON, signed (config.signing): what a figure quoted from it is checked
    against. Its rows are those still shown; `withdrawn` counts the others."""
    body = {"benchmark": snapshot.benchmark.slug,
            "benchmark_version": snapshot.benchmark.version,
            "benchmark_sha256": snapshot.benchmark.sha256,
            "board_version": snapshot.board_version,
            "taken_at": snapshot.taken_at.isoformat(timespec="seconds"),
            "rows": shown_rows(snapshot, gone), "withdrawn": len(gone)}
    return {**body, "signature": signing.signature(body)}


def items_without(snapshot: BoardSnapshot, gone: list[int]):
    """The snapshot's items file, open: the stored one when nothing was withdrawn, else a
    copy without the rows of the submissions `gone`; None when the file is missing."""
    stored = dataset_files.opened(snapshot.items_file)
    if stored is None or not gone:
        return stored
    with stored:
        table = pq.read_table(stored)
    kept = table.filter(pc.invert(pc.is_in(table["submission"],
                                           value_set=pa.array(gone, pa.int64()))))
    out = io.BytesIO()
    pq.write_table(kept, out)
    out.seek(0)
    return out
