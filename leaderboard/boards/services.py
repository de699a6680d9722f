"""Workflows that change leaderboard data."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import transaction

from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.models import Benchmark


class ReferenceFileError(ValueError):
    pass


def reference_results_load(*, path: Path, benchmark_slug: str) -> int:
    """Load a published table (a paper's) for a board, as its benchmark's kind reads it,
    replacing earlier rows of the same models, marked reported; all or nothing. Returns the
    number of rows."""
    benchmark = Benchmark.objects.filter(slug=benchmark_slug).order_by("-version").first()
    if benchmark is None:
        raise ReferenceFileError(f"no benchmark {benchmark_slug!r}; import it first")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReferenceFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReferenceFileError(f"{path}: invalid JSON: {exc}") from None
    except RecursionError:
        raise ReferenceFileError(f"{path}: nested too deeply") from None
    try:
        rows = get_kind(benchmark.kind).parse_reference(data, path)
    except ValueError as exc:
        raise ReferenceFileError(str(exc)) from None
    source = str(data.get("source", Path(path).name)) if isinstance(data, dict) \
        else Path(path).name
    with transaction.atomic():
        for row in rows:
            result, _ = ReferenceResult.objects.update_or_create(
                benchmark_slug=benchmark_slug, model=row.model,
                defaults={"note": row.note, "scope": row.scope, "n_samples": row.n_samples,
                          "source": source})
            result.figures.all().delete()
            ReferenceFigure.objects.bulk_create([
                ReferenceFigure(result=result, dimension=d, bucket=b, values=values)
                for d, b, values in row.figures])
        board_changed(slug=benchmark_slug)
    return len(rows)
