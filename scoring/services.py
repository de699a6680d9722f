"""Workflows that change scoring data."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from config.database import analyze
from scoring.boards import board_changed
from scoring.kinds import file_sha256, get_kind
from scoring.kinds.files import resolve_audio
from scoring.models import Benchmark, Criterion, Item, ItemBucket
from scoring.tasks import draw_input_spectrograms


class BenchmarkFileError(ValueError):
    """A benchmark file that cannot be imported; `problems` names each fault."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems[:20]) +
                         (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))


def _input_problem(root: Path, media: str) -> str | None:
    """Why an input audio path is unusable: it must be a file inside the audio root."""
    path = resolve_audio(root, media).resolve()
    if not path.is_relative_to(root):
        return "lies outside"
    return None if path.is_file() else "not found under"


def _media_sha256(root: Path | None, media: list[str]) -> list[str]:
    """The inputs' hashes, for the judgment cache; none when the files are not here."""
    if root is None:
        return []
    return [file_sha256(resolve_audio(root, path)) for path in media]


def rows_where(kind, rows: list, where: dict[str, list[str]], path: Path) -> list:
    """The rows in one of the listed buckets of every dimension `where` names; a dimension or
    bucket no item has is an error (a misspelt filter would otherwise import a wrong set)."""
    buckets = [set(kind.item_buckets(row.dimensions)) for row in rows]
    known = set().union(*buckets) if buckets else set()
    problems = [f"{path}: no item has {dimension} = {bucket!r}"
                for dimension, wanted in where.items() for bucket in wanted
                if (dimension, bucket) not in known]
    if problems:
        raise BenchmarkFileError(problems)
    kept = [row for row, found in zip(rows, buckets, strict=True)
            if all(any((dimension, b) in found for b in wanted)
                   for dimension, wanted in where.items())]
    if not kept:
        raise BenchmarkFileError([f"{path}: no item is in every bucket asked for ({where})"])
    return kept


def benchmark_rows(kind, path: Path, where: dict[str, list[str]] | None = None, *,
                   name: Path | None = None) -> list:
    """The rows of a benchmark file, only those `where` keeps (rows_where); its faults as
    BenchmarkFileError, naming the file as `name` (default: its path)."""
    try:
        items = kind.load(path)
    except ValueError as exc:
        raise BenchmarkFileError(getattr(exc, "problems", [str(exc)])) from None
    rows = [kind.to_rows(item) for item in items]
    return rows_where(kind, rows, where, name or path) if where else rows


def benchmark_import(
    *, kind: str, path: Path, audio_root: Path | None, slug: str, title: str = "",
    synthetic: bool = False, rubrics_hidden: bool = False,
    where: dict[str, list[str]] | None = None,
) -> tuple[Benchmark, bool]:
    """Import a benchmark file as a new version of `slug`; (benchmark, created).

    `where` ({dimension: [bucket, ...]}) keeps only the items in one of the listed buckets of
    every dimension named (a challenge track's items); `rubrics_hidden` imports it with its
    rubrics hidden until the reveal (scoring.visibility.disclosure).

    The same file again returns the version it made, changing nothing. A file with any fault
    (malformed, or naming input audio that is not under `audio_root`) imports nothing.
    `audio_root` None (text-judged kinds only) keeps the media paths unchecked and unplayable.
    """
    benchmark_kind = get_kind(kind)
    if audio_root is None and benchmark_kind.sends_inputs:
        raise BenchmarkFileError([f"a {kind} benchmark needs its audio root: its judge hears "
                                  "the input audio"])
    path = Path(path)
    audio_root = Path(audio_root).resolve() if audio_root is not None else None
    try:
        sha256 = file_sha256(path)
    except OSError as exc:
        raise BenchmarkFileError([f"{path}: cannot be read: {exc.strerror or exc}"]) from None
    existing = Benchmark.objects.filter(slug=slug, sha256=sha256).first()
    if existing is not None:
        return existing, False
    other_kind = Benchmark.objects.filter(slug=slug).exclude(kind=kind).first()
    if other_kind is not None:
        raise BenchmarkFileError(
            [f"benchmark {slug!r} is of kind {other_kind.kind!r}, not {kind!r}"]
        )
    rows = benchmark_rows(benchmark_kind, path, where)
    problems = [
        f"{path}: sample {position} (id {row.key}): input audio {media!r} {why} {audio_root}"
        for position, row in enumerate(rows, start=1)
        for media in row.media
        for why in [_input_problem(audio_root, media) if audio_root else None] if why
    ]
    if problems:
        raise BenchmarkFileError(problems)
    media_sha256 = [_media_sha256(audio_root if benchmark_kind.sends_inputs else None,
                                  row.media) for row in rows]
    with transaction.atomic():
        previous = Benchmark.objects.filter(slug=slug).order_by("-version").first()
        latest = previous.version if previous else 0
        # A new version keeps the judge of the one before; a new benchmark gets its kind's
        # config, seeded from the JUDGE_* settings, when it is first scored
        # (judge_config_current).
        benchmark = Benchmark.objects.create(
            judge_config=previous.judge_config if previous else None,
            slug=slug, kind=kind, version=latest + 1, title=title or benchmark_kind.title,
            sha256=sha256, source_name=path.name, audio_root=str(audio_root or ""),
            synthetic=synthetic, rubrics_hidden=rubrics_hidden, n_items=len(rows),
            n_criteria=sum(len(row.criteria) for row in rows),
        )
        created = Item.objects.bulk_create(
            [Item(benchmark=benchmark, position=position, key=row.key,
                  dimensions=row.dimensions, content=row.content, media=row.media,
                  media_sha256=hashes, search_text=benchmark_kind.search_text(row))
             for position, (row, hashes) in enumerate(zip(rows, media_sha256, strict=True))],
            batch_size=1000,
        )
        ItemBucket.objects.bulk_create(
            [ItemBucket(item=item, dimension=dimension, bucket=bucket)
             for item, row in zip(created, rows, strict=True)
             for dimension, bucket in benchmark_kind.item_buckets(row.dimensions)],
            batch_size=5000,
        )
        Criterion.objects.bulk_create(
            [Criterion(item=item, **criterion)
             for item, row in zip(created, rows, strict=True) for criterion in row.criteria],
            batch_size=5000,
        )
        analyze(Item, ItemBucket, Criterion)
        if previous is not None:
            # The slug's board now shows the new version: no page kept for a version before
            # (whose own state did not change) may be answered for it.
            board_changed(slug=slug)
        if audio_root is not None:  # queued once the import commits
            draw_input_spectrograms.delay(benchmark.pk)
    return benchmark, True
