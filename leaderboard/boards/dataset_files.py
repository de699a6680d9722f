"""A board's items dataset as stored files: written by the worker (leaderboard.boards.datasets)
once per board state, format and slice, never in a web request, and kept in Django's default
storage (the bucket in production) under a name that holds the state, so a request serves the
file as it is. The overall Parquet of each new state is built when the board changes (beside
its rank ranges: leaderboard.tasks); any other file when first asked for. Building a state's
files deletes those of older states but the one before (a download begun on it ends) and the
files a snapshot cites (leaderboard.boards.snapshots). A small board's file (INLINE_ROWS) is
built by the request that first asks for it instead, so that it is there from the moment the
board changes."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile

from celery import shared_task
from django.core.cache import cache
from django.core.files import File
from django.core.files.storage import default_storage

from leaderboard.boards import datasets, state
from leaderboard.models import BoardSnapshot
from scoring.models import Benchmark

log = logging.getLogger(__name__)
FOLDER = "datasets"
# How long a request's ask stands: within it no other request asks again for the same file
# (one build per file); past it, a lost task is asked for again.
ASKED_SECONDS = 120
# What a request for a file still being built is told to wait.
RETRY_SECONDS = 30
# Files (and snapshots' items) sent at once, in all and per client address (config.slots):
# a slow or hostile client holds a web thread for as long as a file takes to send. A slot a
# killed process held frees itself after SLOT_SECONDS.
DOWNLOADS = 4
DOWNLOADS_PER_CLIENT = 2
SLOT_SECONDS = 300
# A file of at most this many rows (representatives x items) that no worker has built yet is
# built by the request that asks for it, within its download slot, and stored for the next:
# a board's first submissions are downloadable the moment they finish (ten representatives
# of MMAE's 2,000 items). About 0.6-0.9 s of a web thread, at the 28-45 us a row measured in
# one (8.5-13.4 s for 501 x 600 rows, docs/security.md). A larger one is the worker's (the
# request answers 503 with Retry-After).
INLINE_ROWS = 20_000


def file_name(benchmark: Benchmark, fmt: str, dimension: str = state.OVERALL,
              bucket: str = "") -> str:
    """The storage name of the dataset of the board's current state, in `fmt`, of a slice."""
    return (f"{FOLDER}/{benchmark.id}/board{benchmark.board_version}/"
            + datasets.filename(benchmark, state.board_stamp(benchmark), fmt, dimension, bucket))


def opened(name: str) -> File | None:
    """The stored file `name`, open for reading; None while it is not built."""
    if not default_storage.exists(name):
        return None
    try:
        return default_storage.open(name, "rb")
    except FileNotFoundError:  # deleted in between
        return None


def dataset_build(benchmark: Benchmark, fmt: str = "parquet", *,
                  dimension: str = state.OVERALL, bucket: str = "") -> str | None:
    """Build and store the dataset of the board's current state (read afresh) unless it is
    stored already: its storage name, or None when the board changed while it was read (the
    file would be of no one state)."""
    benchmark = Benchmark.objects.get(pk=benchmark.pk)
    name = file_name(benchmark, fmt, dimension, bucket)
    if default_storage.exists(name):
        return name
    with tempfile.TemporaryFile() as out:
        for part in datasets.stream(benchmark, fmt, dimension=dimension, bucket=bucket):
            out.write(part)
        if not Benchmark.objects.filter(pk=benchmark.pk,
                                        board_version=benchmark.board_version).exists():
            return None
        out.seek(0)
        saved = default_storage.save(name, File(out))
    if saved != name:  # another worker stored it first; the storage renamed this one
        default_storage.delete(saved)
    log.info("dataset %s built", name)
    dataset_prune(benchmark)
    return name


def dataset_prune(benchmark: Benchmark) -> None:
    """Delete the stored datasets of the board's states but its current one and the one
    before, and the files snapshots cite. A folder of another version (a storage that
    outlived its database) is no state of this board's: it goes too."""
    root = f"{FOLDER}/{benchmark.id}"
    kept = {f"board{benchmark.board_version}", f"board{benchmark.board_version - 1}"}
    folders = [f for f in default_storage.listdir(root)[0] if f.startswith("board")]
    cited = set(BoardSnapshot.objects.filter(benchmark=benchmark)
                .values_list("items_file", flat=True))
    for folder in folders:
        if folder in kept:
            continue
        path = f"{root}/{folder}"
        files = [f"{path}/{f}" for f in default_storage.listdir(path)[1]]
        for name in files:
            if name not in cited:
                default_storage.delete(name)
        if not set(files) & cited and hasattr(default_storage, "path"):
            with contextlib.suppress(OSError):  # a folder only the filesystem keeps
                os.rmdir(default_storage.path(path))


def built_inline(benchmark: Benchmark) -> bool:
    """Whether a request builds the board's dataset files itself (INLINE_ROWS)."""
    return len(state.representatives(benchmark)) * benchmark.n_items <= INLINE_ROWS


def dataset_ask(benchmark: Benchmark, fmt: str, *, dimension: str = state.OVERALL,
                bucket: str = "") -> None:
    """Ask a worker to build a dataset file of the board's current state, once for all the
    requests that want it within ASKED_SECONDS."""
    name = file_name(benchmark, fmt, dimension, bucket)
    if not cache.add(f"dataset-asked:{name}", True, ASKED_SECONDS):
        return
    try:
        build_file.delay(benchmark.id, benchmark.board_version, fmt, dimension, bucket)
    except Exception:  # the broker is down: a later request asks again
        log.exception("could not ask for dataset %s", name)
        cache.delete(f"dataset-asked:{name}")


@shared_task(ignore_result=True, name="leaderboard.dataset_files.build_file")
def build_file(benchmark_id: int, board_version: int, fmt: str, dimension: str,
               bucket: str) -> None:
    """Build a dataset file a request asked for, unless its board has changed since (a request
    for the new state asks for that state's)."""
    benchmark = Benchmark.objects.filter(id=benchmark_id, board_version=board_version).first()
    if benchmark is not None:
        dataset_build(benchmark, fmt, dimension=dimension, bucket=bucket)
