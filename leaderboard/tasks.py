"""Celery tasks of the leaderboard: thin wrappers over leaderboard.ranking."""

from celery import shared_task

from leaderboard import ranking, selectors
from scoring.models import Benchmark


@shared_task(ignore_result=True)
def refresh_rank_ranges(benchmark_id: int) -> None:
    """Recompute a board's rank ranges if its state changed since they were computed."""
    benchmark = Benchmark.objects.filter(id=benchmark_id).first()
    if benchmark is not None:
        ranking.refresh(benchmark)


@shared_task(ignore_result=True)
def refresh_boards() -> None:
    """Periodic: every board's rank ranges follow its state (RANK_RANGES_SWEEP_SECONDS)."""
    for benchmark in selectors.benchmark_list():
        ranking.refresh(benchmark)
