from django.core.management.base import BaseCommand
from django.db import transaction
from tqdm import tqdm

from scoring.aggregation import answer_groups, benchmark_items
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.models import ScoringRun, SliceResult


class Command(BaseCommand):
    help = ("Give the finished runs whose slices have no 95% intervals (AIR-Bench runs "
            "aggregated before their kinds had them) the intervals their aggregation now "
            "computes, from their stored answers; their boards change once. Idempotent.")

    def handle(self, *args, **options):
        without = SliceResult.objects.filter(dimension=SliceResult.OVERALL, intervals={},
                                             run__status=ScoringRun.Status.FINISHED) \
            .values_list("run_id", flat=True)
        runs = list(ScoringRun.objects.filter(id__in=list(without)).select_related("benchmark")
                    .order_by("id"))
        touched, given = set(), 0
        for run in tqdm(runs, desc="runs", unit="run", file=self.stderr._out,
                        disable=not runs):
            kind = get_kind(run.benchmark.kind)
            answers = dict(answer_groups(run))
            rows = [kind.item_result(item.read, run.outputs.get(item.key),
                                     answers.get(item.id, {}))
                    for item in benchmark_items(run.benchmark_id, kind)]
            found = kind.intervals(rows, seed=run.seed)
            if not found:
                continue
            with transaction.atomic():
                for figures in SliceResult.objects.filter(run=run).select_for_update():
                    bounds = found.get("overall") if figures.dimension == SliceResult.OVERALL \
                        else found.get(figures.dimension, {}).get(figures.bucket)
                    figures.intervals = {metric: list(interval) for metric, interval in
                                         (bounds or {}).items() if interval is not None}
                    figures.save(update_fields=["intervals"])
            given += 1
            touched.add(run.benchmark_id)
        if touched:
            board_changed(*sorted(touched))
        self.stdout.write(f"intervals given to {given} run(s) of {len(touched)} "
                          "benchmark(s)")
