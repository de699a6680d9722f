"""Reads that serve the leaderboard's pages."""

from scoring.models import Benchmark


def benchmark_list() -> list[Benchmark]:
    """The newest version of each benchmark, for the home page."""
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    return list(latest.values())
