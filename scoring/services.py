"""Workflows that change scoring data."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.db import transaction
from django.db.models import Max

from scoring.kinds import get_kind
from scoring.models import Benchmark, Criterion, Item
from scoring.predictions import resolve_audio


class BenchmarkFileError(ValueError):
    """A benchmark file that cannot be imported; `problems` names each fault."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems[:20]) +
                         (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _input_problem(root: Path, media: str) -> str | None:
    """Why an input audio path is unusable: it must be a file inside the audio root."""
    path = resolve_audio(root, media).resolve()
    if not path.is_relative_to(root):
        return "lies outside"
    return None if path.is_file() else "not found under"


def benchmark_import(
    *, kind: str, path: Path, audio_root: Path, slug: str, title: str = "",
    synthetic: bool = False,
) -> tuple[Benchmark, bool]:
    """Import a benchmark file as a new version of `slug`; (benchmark, created).

    The same file again returns the version it made, changing nothing. A file with any fault
    (malformed, or naming input audio that is not under `audio_root`) imports nothing.
    """
    benchmark_kind = get_kind(kind)
    path, audio_root = Path(path), Path(audio_root).resolve()
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
    try:
        items = benchmark_kind.load(path)
    except ValueError as exc:
        raise BenchmarkFileError(getattr(exc, "problems", [str(exc)])) from None
    rows = [benchmark_kind.to_rows(item) for item in items]
    problems = [
        f"{path}: sample {position} (id {row.key}): input audio {media!r} {why} {audio_root}"
        for position, row in enumerate(rows)
        for media in row.media
        for why in [_input_problem(audio_root, media)] if why
    ]
    if problems:
        raise BenchmarkFileError(problems)
    with transaction.atomic():
        latest = Benchmark.objects.filter(slug=slug).aggregate(v=Max("version"))["v"] or 0
        benchmark = Benchmark.objects.create(
            slug=slug, kind=kind, version=latest + 1, title=title or benchmark_kind.title,
            sha256=sha256, source_name=path.name, audio_root=str(audio_root),
            synthetic=synthetic, n_items=len(rows),
            n_criteria=sum(len(row.criteria) for row in rows),
        )
        created = Item.objects.bulk_create(
            [Item(benchmark=benchmark, position=position, key=row.key,
                  dimensions=row.dimensions, content=row.content, media=row.media)
             for position, row in enumerate(rows)],
            batch_size=1000,
        )
        Criterion.objects.bulk_create(
            [Criterion(item=item, **criterion)
             for item, row in zip(created, rows, strict=True) for criterion in row.criteria],
            batch_size=5000,
        )
    return benchmark, True
