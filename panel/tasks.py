"""The panel's periodic work: rated tasks leave the pool even when nobody uses the panel."""

from celery import shared_task

from panel import pool
from scoring.kinds import get_kind
from scoring.models import Benchmark


@shared_task(ignore_result=True)
def release_pools() -> int:
    """Release, on every benchmark with a panel, the tasks that have their raters and are due
    (panel.pool.release_due: at most one release every PANEL_RELEASE_SECONDS); how many
    (submission, item) pairs left the pools. A release otherwise waits for the panel's next
    task or answer."""
    return sum(pool.release_due(benchmark) for benchmark in Benchmark.objects.all()
               if get_kind(benchmark.kind).has_panel)
