"""The leaderboard's tasks, where Celery's autodiscovery finds them: the periodic sweep, and a
board's own refresh, beside its rank ranges (leaderboard.boards.rank_ranges)."""

from celery import shared_task

from config import page_cache
from leaderboard.boards import rank_ranges, state
from leaderboard.boards.rank_ranges import refresh_rank_ranges

__all__ = ["refresh_boards", "refresh_rank_ranges"]


@shared_task(ignore_result=True)
def refresh_boards() -> None:
    """Periodic: every board's rank ranges follow its state (RANK_RANGES_SWEEP_SECONDS), and
    the front knows every board's version (a publication lost when Redis could not be reached
    is repaired here)."""
    page_cache.publish(state.boards_state()[2])
    for benchmark in state.benchmark_list():
        rank_ranges.refresh(benchmark)
