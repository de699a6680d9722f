import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.kinds import KINDS, get_kind
from scoring.services import BenchmarkFileError, benchmark_import


class Command(BaseCommand):
    help = (
        "Import a benchmark's metadata file as a version of its board: KIND is the benchmark "
        "kind (mmae, airbench-foundation, airbench-chat, or any other registered), PATH its "
        "file. The same file again changes nothing; a changed file becomes a new version; a "
        "malformed file imports nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=sorted(KINDS), help="the benchmark kind")
        parser.add_argument("path", type=Path, help="its metadata file (e.g. MMAE-meta.json)")
        self.add_options(parser)

    def add_options(self, parser):
        parser.add_argument("--audio-root", type=Path, default=None,
                            help="folder the metadata's audio paths are under (required for a "
                                 "kind whose judge hears the inputs, e.g. mmae; otherwise "
                                 "every item's audio must be there when given)")
        parser.add_argument("--slug", default="", help="the board's address (default: the "
                                                       "kind's, e.g. mmae)")
        parser.add_argument("--title", default="")
        parser.add_argument("--synthetic", action="store_true",
                            help="label the benchmark as synthetic (demo and benchmark data)")
        parser.add_argument("--hidden-rubrics", action="store_true",
                            help="hide its rubric texts, per-item results and judge replies "
                                 "from all but staff and its challenge's organizers until "
                                 "`manage.py reveal SLUG`")
        parser.add_argument("--where", action="append", default=[], metavar="DIMENSION=BUCKET",
                            help="import only the items in this bucket (a challenge track's, "
                                 "e.g. complexity=single); repeat for more buckets, "
                                 "comma-separate them or name other dimensions")

    def handle(self, *args, **options):
        self.import_file(options["kind"], options["path"], options)

    def import_file(self, kind_name: str, path: Path, options: dict) -> None:
        kind = get_kind(kind_name)
        started = time.monotonic()
        try:
            benchmark, created = benchmark_import(
                kind=kind.name, path=path, audio_root=options["audio_root"],
                slug=options["slug"] or kind.slug or kind.name, title=options["title"],
                synthetic=options["synthetic"], rubrics_hidden=options["hidden_rubrics"],
                where=_where(options["where"]))
        except BenchmarkFileError as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        elapsed = time.monotonic() - started
        if not created:
            self.stdout.write(f"unchanged: this file is already {benchmark}; nothing imported")
            return
        criteria = f", {benchmark.n_criteria} {kind.criteria_noun}s" if kind.criteria_noun \
            else ""
        self.stdout.write(f"imported {benchmark} ({benchmark.n_items} {kind.item_noun}s"
                          f"{criteria}) in {elapsed:.2f} s")


def _where(given: list[str]) -> dict[str, list[str]]:
    """--where DIMENSION=BUCKET[,BUCKET...] options as {dimension: [bucket, ...]}."""
    where: dict[str, list[str]] = {}
    for option in given:
        dimension, equals, buckets = option.partition("=")
        if not equals or not dimension.strip() or not buckets.strip():
            raise CommandError(f"--where {option!r}: expected DIMENSION=BUCKET, e.g. "
                               "complexity=single")
        where.setdefault(dimension.strip(), []).extend(
            b.strip() for b in buckets.split(",") if b.strip())
    return where
