"""The leaderboard's tasks, where Celery's autodiscovery finds them: a board's refresh for its
new state (its rank ranges, leaderboard.boards.rank_ranges; the overall items dataset,
leaderboard.boards.dataset_files; the day's snapshot, leaderboard.boards.snapshots), a dataset
file a request asked for, and the periodic sweep that repairs whatever a lost task left."""

from celery import shared_task

from config import page_cache
from leaderboard.boards import dataset_files, rank_ranges, snapshots, state
from leaderboard.boards.dataset_files import build_file
from scoring.models import Benchmark

__all__ = ["build_file", "refresh_boards", "refresh_rank_ranges"]


def board_refresh(benchmark: Benchmark) -> None:
    """What the worker keeps of a board's current state: its rank ranges, its overall items
    dataset (Parquet; other files when a request asks), and a snapshot when one is due. Each
    does nothing where it is done already."""
    rank_ranges.refresh(benchmark)
    dataset_files.dataset_build(benchmark, "parquet")
    snapshots.snapshot_due(benchmark=benchmark)


# Named as when it lived in leaderboard/rank_ranges.py: queued messages and routes keep working.
@shared_task(ignore_result=True, name="leaderboard.rank_ranges.refresh_rank_ranges")
def refresh_rank_ranges(benchmark_id: int) -> None:
    """A board changed (scoring.boards.board_changed): refresh what is kept of its state."""
    benchmark = Benchmark.objects.filter(id=benchmark_id).first()
    if benchmark is not None:
        board_refresh(benchmark)


@shared_task(ignore_result=True)
def refresh_boards() -> None:
    """Periodic: every board's kept values follow its state (RANK_RANGES_SWEEP_SECONDS), and
    the front knows every board's version (a publication lost when Redis could not be reached
    is repaired here)."""
    page_cache.publish(state.boards_state()[2])
    for benchmark in state.benchmark_list():
        board_refresh(benchmark)
