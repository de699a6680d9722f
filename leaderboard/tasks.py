"""The periodic task of the leaderboard. A board's own refresh is beside its rank ranges
(leaderboard.rank_ranges.refresh_rank_ranges)."""

from celery import shared_task

from leaderboard import rank_ranges, state


@shared_task(ignore_result=True)
def refresh_boards() -> None:
    """Periodic: every board's rank ranges follow its state (RANK_RANGES_SWEEP_SECONDS)."""
    for benchmark in state.benchmark_list():
        rank_ranges.refresh(benchmark)
