"""The periodic task of the leaderboard. A board's own refresh is beside its rank ranges
(leaderboard.rank_ranges.refresh_rank_ranges)."""

from celery import shared_task

from config import front
from leaderboard import rank_ranges, state


@shared_task(ignore_result=True)
def refresh_boards() -> None:
    """Periodic: every board's rank ranges follow its state (RANK_RANGES_SWEEP_SECONDS), and
    the front knows every board's version (a publication lost when Redis could not be reached
    is repaired here)."""
    front.publish(state.boards_state()[2])
    for benchmark in state.benchmark_list():
        rank_ranges.refresh(benchmark)
