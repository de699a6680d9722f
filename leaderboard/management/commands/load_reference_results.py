from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.services import (
    ReferenceFileError,
    airbench_reference_load,
    reference_results_load,
)
from scoring import airbench
from scoring.models import Benchmark


class Command(BaseCommand):
    help = ("Load published results onto a board, where they show marked 'reported' with their "
            "scope and are never ranked with scored submissions: MMAE's paper_results.json, or "
            "AIR-Bench's leaderboard_reference.json (the chat or the foundation tables, as the "
            "board's kind says).")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--benchmark", required=True, help="board slug, e.g. mmae")

    def handle(self, *args, **options):
        slug = options["benchmark"]
        kind = Benchmark.objects.filter(slug=slug).values_list("kind", flat=True).first()
        try:
            if kind in (airbench.FOUNDATION, airbench.CHAT):
                n = airbench_reference_load(path=options["path"], benchmark_slug=slug,
                                            kind=kind)
            else:
                n = reference_results_load(path=options["path"], benchmark_slug=slug)
        except ReferenceFileError as exc:
            raise CommandError(f"nothing loaded: {exc}") from None
        self.stdout.write(f"loaded {n} reported results onto {options['benchmark']}")
