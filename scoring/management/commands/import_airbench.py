import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.kinds.airbench import rules as airbench
from scoring.services import BenchmarkFileError, benchmark_import

DEFAULT_SLUGS = {airbench.FOUNDATION: "air-bench-foundation", airbench.CHAT: "air-bench-chat"}


class Command(BaseCommand):
    help = (
        "Import an AIR-Bench metadata file (Foundation_meta.json or Chat_meta.json) as a "
        "benchmark version. The same file again changes nothing; a changed file becomes a new "
        "version; a malformed file imports nothing."
    )

    def add_arguments(self, parser):
        track = parser.add_mutually_exclusive_group(required=True)
        track.add_argument("--foundation", type=Path, metavar="PATH",
                           help="Foundation_meta.json (single-choice track)")
        track.add_argument("--chat", type=Path, metavar="PATH",
                           help="Chat_meta.json (open-question track)")
        parser.add_argument("--audio-root", type=Path, default=None,
                            help="folder holding Foundation/ and Chat/ (task_dataset/path); "
                                 "when given every item's audio must be there. The judge never "
                                 "hears the audio, so it may be left out")
        parser.add_argument("--slug", default="",
                            help="default air-bench-foundation or air-bench-chat")
        parser.add_argument("--title", default="")

    def handle(self, *args, **options):
        kind = airbench.FOUNDATION if options["foundation"] else airbench.CHAT
        path = options["foundation"] or options["chat"]
        started = time.monotonic()
        try:
            benchmark, created = benchmark_import(
                kind=kind, path=path, audio_root=options["audio_root"],
                slug=options["slug"] or DEFAULT_SLUGS[kind], title=options["title"],
            )
        except BenchmarkFileError as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        elapsed = time.monotonic() - started
        if created:
            self.stdout.write(f"imported {benchmark} ({benchmark.n_items} items) in "
                              f"{elapsed:.2f} s")
        else:
            self.stdout.write(f"unchanged: this file is already {benchmark}; nothing imported")
