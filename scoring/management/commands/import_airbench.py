from pathlib import Path

from scoring.kinds.airbench import rules as airbench
from scoring.management.commands.import_benchmark import Command as ImportBenchmark


class Command(ImportBenchmark):
    help = ("`import_benchmark airbench-foundation|airbench-chat PATH` under its earlier name "
            "(README: AIR-Bench).")

    def add_arguments(self, parser):
        track = parser.add_mutually_exclusive_group(required=True)
        track.add_argument("--foundation", type=Path, metavar="PATH",
                           help="Foundation_meta.json (single-choice track)")
        track.add_argument("--chat", type=Path, metavar="PATH",
                           help="Chat_meta.json (open-question track)")
        self.add_options(parser)

    def handle(self, *args, **options):
        kind = airbench.FOUNDATION if options["foundation"] else airbench.CHAT
        self.import_file(kind, options["foundation"] or options["chat"], options)
