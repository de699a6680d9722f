import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.services import BenchmarkFileError, benchmark_import


class Command(BaseCommand):
    help = (
        "Import an MMAE-meta.json as a benchmark version. The same file again changes nothing; "
        "a changed file becomes a new version; a malformed file imports nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("meta", type=Path, help="path to MMAE-meta.json")
        parser.add_argument("--audio-root", type=Path, required=True,
                            help="folder the metadata's wav/<id>/audioN.wav paths are under")
        parser.add_argument("--slug", default="mmae")
        parser.add_argument("--title", default="")
        parser.add_argument("--synthetic", action="store_true",
                            help="label the benchmark as synthetic (demo and benchmark data)")

    def handle(self, *args, **options):
        started = time.monotonic()
        try:
            benchmark, created = benchmark_import(
                kind="mmae", path=options["meta"], audio_root=options["audio_root"],
                slug=options["slug"], title=options["title"], synthetic=options["synthetic"],
            )
        except BenchmarkFileError as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        elapsed = time.monotonic() - started
        if created:
            self.stdout.write(
                f"imported {benchmark} ({benchmark.n_items} samples, {benchmark.n_criteria} "
                f"rubrics) in {elapsed:.2f} s"
            )
        else:
            self.stdout.write(f"unchanged: this file is already {benchmark}; nothing imported")
