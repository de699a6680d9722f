from django.core.management.base import BaseCommand, CommandError

from leaderboard.boards import snapshots, state


class Command(BaseCommand):
    help = ("Keep a citable snapshot of a board's current state (its rows and its items "
            "dataset), at /b/<slug>/v/<board version>/, unless one is kept already; the worker "
            "keeps one a day by itself.")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="board slug, e.g. mmae")

    def handle(self, *args, **options):
        benchmark = state.benchmark_current(options["benchmark"])
        if benchmark is None:
            raise CommandError(f"no benchmark {options['benchmark']!r}")
        snapshot = snapshots.snapshot_take(benchmark=benchmark)
        if snapshot is None:
            raise CommandError("the board changed while it was read: nothing kept; run again")
        self.stdout.write(f"kept /b/{benchmark.slug}/v/{snapshot.board_version}/ "
                          f"(items: {snapshot.items_file})")
