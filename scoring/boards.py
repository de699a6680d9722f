"""A board's state: a version stored on its benchmark, raised by whatever changes what the board
shows (a submission published, hidden, flagged or deleted, a representative chosen, a run
finished or made current, a model's details edited, reported results reloaded, a calibration
baseline finished, the judge config switched, anything audited on the benchmark, an owner
renamed or verified, an admin edit of what it shows, a new version imported). Boards,
their caches, ETags and rank ranges key on it, so that reading a board's state costs no
aggregate over its submissions."""

from __future__ import annotations

from celery import current_app
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config import page_cache
from scoring.models import Benchmark

# The leaderboard's task recomputing a board's rank ranges for its new state (named, since
# the scoring app does not import the leaderboard). It does nothing when they are current.
REFRESH_TASK = "leaderboard.rank_ranges.refresh_rank_ranges"


def state_token(version: int, ranged: bool) -> int:
    """A board state as one integer that only rises: version v is 2v while its rank ranges are
    being computed and 2v + 1 once the worker stored them (leaderboard.boards.state.BoardState). The
    front (config.page_cache) answers a page while the token it was made under is the one
    published, so pages made while ranges were computed are replaced when they arrive."""
    return 2 * version + int(ranged)


def board_changed(*benchmark_ids: int, slug: str = "") -> None:
    """Raise the board version of the benchmarks given (and of every version of `slug`) in one
    UPDATE, and publish the new versions to the front (config.page_cache) at once, before the
    change commits: from the commit on, no page kept for the state before is answered (until
    then such a page is answered by Django, which reads the state before). Once the change
    commits they are published again, and a worker is asked for each new state's rank ranges
    so that no visitor waits for them (should the broker be down, the error is logged and the
    periodic sweep asks again: leaderboard.tasks.refresh_boards). A change rolled back leaves
    its published versions ahead of the boards': their pages go to Django until the next
    change, never an older state's page answered."""
    if not benchmark_ids and not slug:
        return
    boards = Q(id__in=benchmark_ids) | Q(slug=slug) if slug else Q(id__in=benchmark_ids)
    with transaction.atomic():  # a caller in autocommit too: published before the commit
        Benchmark.objects.filter(boards).update(board_version=F("board_version") + 1,
                                                board_changed_at=timezone.now())
        _publish(boards)
    transaction.on_commit(lambda: _refresh_ranges(boards), robust=True)


def _publish(boards: Q) -> list[int]:
    versions = dict(Benchmark.objects.filter(boards).values_list("id", "board_version"))
    page_cache.publish({pk: state_token(version, False) for pk, version in versions.items()})
    return list(versions)


def _refresh_ranges(boards: Q) -> None:
    for pk in _publish(boards):
        current_app.send_task(REFRESH_TASK, args=[pk])
