from pathlib import Path

from scoring.management.commands.import_benchmark import Command as ImportBenchmark


class Command(ImportBenchmark):
    help = "`import_benchmark mmae PATH` under its earlier name (README: Importing a benchmark)."

    def add_arguments(self, parser):
        parser.add_argument("meta", type=Path, help="path to MMAE-meta.json")
        self.add_options(parser)
        parser.set_defaults(audio_root=None)

    def handle(self, *args, **options):
        self.import_file("mmae", options["meta"], options)
