"""Workflows that change leaderboard data."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import transaction

from leaderboard.models import ReferenceFigure, ReferenceResult

METRICS = ("IFR", "CR", "EMR")


class ReferenceFileError(ValueError):
    pass


def _figures(entry: dict, where: str) -> list[tuple[str, str, dict]]:
    """(dimension, bucket, figures) of one published row: overall and any dimension."""
    rows = []
    for dimension, value in entry.items():
        if dimension == "overall":
            rows.append(("overall", "", value))
        elif isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            rows.extend((dimension, bucket, figures) for bucket, figures in value.items())
    if not any(d == "overall" for d, _, _ in rows):
        raise ReferenceFileError(f"{where}: no 'overall' figures")
    for dimension, bucket, figures in rows:
        for metric in METRICS:
            if not isinstance(figures.get(metric), (int, float)):
                raise ReferenceFileError(
                    f"{where}: {dimension}{'/' + bucket if bucket else ''} needs a number for "
                    f"{metric}, got {figures.get(metric)!r}")
    return rows


def _scope(entry: dict) -> tuple[str, int | None]:
    if "scope" in entry:
        return str(entry["scope"]), None
    n = entry.get("n_samples")
    return (f"{n:,} samples" if isinstance(n, int) else "scope not stated"), n


def reference_results_load(*, path: Path, benchmark_slug: str) -> int:
    """Load paper_results.json-shaped rows for a board, replacing earlier ones of the same
    models; all or nothing. Returns the number of rows."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReferenceFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReferenceFileError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models", []), list):
        raise ReferenceFileError(f"{path}: expected an object with a 'models' list")
    source = str(data.get("source", Path(path).name))
    entries = [(f"models[{i}]", e) for i, e in enumerate(data.get("models", []))]
    entries += [(f"challenge_baselines[{i}]", e)
                for i, e in enumerate(data.get("challenge_baselines", []))]
    parsed = []
    for where, entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise ReferenceFileError(f"{path}: {where}: needs a 'model' name")
        parsed.append((entry, _figures(entry, f"{path}: {where} ({entry['model']})")))
    with transaction.atomic():
        for entry, figures in parsed:
            scope, n = _scope(entry)
            result, _ = ReferenceResult.objects.update_or_create(
                benchmark_slug=benchmark_slug, model=entry["model"],
                defaults={"note": entry.get("note", ""), "scope": scope, "n_samples": n,
                          "source": source})
            result.figures.all().delete()
            ReferenceFigure.objects.bulk_create([
                ReferenceFigure(result=result, dimension=d, bucket=b, ifr=f["IFR"], cr=f["CR"],
                                emr=f["EMR"]) for d, b, f in figures])
    return len(parsed)
