from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.boards.services import ReferenceFileError, reference_results_load


class Command(BaseCommand):
    help = ("Load published results onto a board, where they show marked 'reported' with their "
            "scope and are never ranked with scored submissions: a file the board's kind reads "
            "(MMAE's paper_results.json; AIR-Bench's leaderboard_reference.json, the chat or "
            "the foundation tables).")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--benchmark", required=True, help="board slug, e.g. mmae")

    def handle(self, *args, **options):
        try:
            n = reference_results_load(path=options["path"], benchmark_slug=options["benchmark"])
        except ReferenceFileError as exc:
            raise CommandError(f"nothing loaded: {exc}") from None
        self.stdout.write(f"loaded {n} reported results onto {options['benchmark']}")
