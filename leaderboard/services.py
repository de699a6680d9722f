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


# --- AIR-Bench's published tables (../shared/airbench/leaderboard_reference.json) -------------

CHAT_COLUMNS = {"Speech": "speech", "Sound": "sound", "Music": "music",
                "Mixed Audio": "mixed_audio", "Average": None}
DOMAIN_COLUMNS = {"Speech": "speech", "Sound": "sound", "Music": "music", "Average": None}


def _slice(bucket: str | None, dimension: str) -> tuple[str, str]:
    return ("overall", "") if bucket is None else (dimension, bucket)


def _number(value, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ReferenceFileError(f"{where}: expected a number or null, got {value!r}")
    return value


def _table(data: dict, key: str, path) -> tuple[list[str], dict[str, list]]:
    table = data.get(key)
    if not isinstance(table, dict) or not isinstance(table.get("columns"), list) \
            or not isinstance(table.get("rows"), dict):
        raise ReferenceFileError(f"{path}: '{key}' must be an object with 'columns' and 'rows'")
    for name, values in table["rows"].items():
        if not isinstance(values, list) or len(values) != len(table["columns"]):
            raise ReferenceFileError(f"{path}: {key} row {name!r} needs "
                                     f"{len(table['columns'])} values")
    return table["columns"], table["rows"]


def airbench_chat_reference(data: dict, path) -> dict[str, tuple[str, list]]:
    """model -> (note, [(dimension, bucket, {"score": v})]) from the chat table."""
    columns, rows = _table(data, "chat", path)
    unknown = [c for c in columns if c not in CHAT_COLUMNS]
    if unknown:
        raise ReferenceFileError(f"{path}: chat columns {unknown} are not "
                                 f"{list(CHAT_COLUMNS)}")
    parsed = {}
    for model, values in rows.items():
        numbers = [_number(v, f"{path}: chat {model!r}") for v in values]
        figures = [(*_slice(CHAT_COLUMNS[c], "category"), {"score": v})
                   for c, v in zip(columns, numbers, strict=True)]
        parsed[model] = (_chat_note(dict(zip(columns, numbers, strict=True))), figures)
    return parsed


def _chat_note(row: dict) -> str:
    parts = [row.get(c) for c in ("Speech", "Sound", "Music", "Mixed Audio")]
    average = row.get("Average")
    if average is None or any(p is None for p in parts):
        return ""
    mean = sum(parts) / len(parts)
    if abs(round(mean, 2) - average) > 0.011:
        return (f"the published average {average:.2f} is not the mean of its four columns "
                f"({mean:.2f})")
    return ""


def airbench_foundation_reference(data: dict, path) -> dict[str, tuple[str, list]]:
    """model -> ("", [(dimension, bucket, {"acc": v})]) from the per-task and per-domain
    tables (percent of parsed items: the official script's accuracy)."""
    from scoring.airbench import TASK_ORDER

    task_models, task_rows = _table(data, "foundation_per_task_percent", path)
    domain_columns, domain_rows = _table(data, "foundation_per_domain_percent", path)
    unknown = [t for t in task_rows if t not in TASK_ORDER and t != "Average"]
    if unknown or [c for c in domain_columns if c not in DOMAIN_COLUMNS]:
        raise ReferenceFileError(f"{path}: unknown tasks or domain columns: "
                                 f"{unknown or domain_columns}")
    parsed: dict[str, tuple[str, list]] = {}
    for i, model in enumerate(task_models):
        figures = [("task", task, {"acc": _number(values[i], f"{path}: {task!r}")})
                   for task, values in task_rows.items() if task != "Average"]
        parsed[model] = ("", figures)
    for model, values in domain_rows.items():
        figures = [(*_slice(DOMAIN_COLUMNS[c], "domain"), {"acc": _number(v, f"{path}: {model!r}")})
                   for c, v in zip(domain_columns, values, strict=True)]
        parsed[model] = ("", parsed.get(model, ("", []))[1] + figures)
    return parsed


def airbench_reference_load(*, path: Path, benchmark_slug: str, kind: str) -> int:
    """Load AIR-Bench's published tables for one track's board (chat or foundation), marked
    reported; all or nothing. Returns the number of models."""
    from scoring import airbench

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReferenceFileError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReferenceFileError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReferenceFileError(f"{path}: expected an object")
    parsed = (airbench_chat_reference if kind == airbench.CHAT
              else airbench_foundation_reference)(data, path)
    source = str(data.get("source", Path(path).name))
    scope = (f"published, judged by {data.get('judge_model', 'the authors')}"
             if kind == airbench.CHAT else "published; accuracy over the items answered")
    with transaction.atomic():
        for model, (note, figures) in parsed.items():
            result, _ = ReferenceResult.objects.update_or_create(
                benchmark_slug=benchmark_slug, model=model,
                defaults={"note": note, "scope": scope, "n_samples": None, "source": source})
            result.figures.all().delete()
            ReferenceFigure.objects.bulk_create([
                ReferenceFigure(result=result, dimension=d, bucket=b, ifr=None, cr=None,
                                emr=None, values=values) for d, b, values in figures])
    return len(parsed)
