"""A run's files of SPEC section 6, produced from the database."""

from __future__ import annotations

import json
from collections.abc import Iterator

from scoring.mmae import IF_CATEGORY
from scoring.models import Answer, Item, ItemResult, ScoringRun, SliceResult

FILES = {
    "results.jsonl": "application/x-ndjson",
    "per_sample.json": "application/json",
    "taxonomy.json": "application/json",
}


def results_lines(run: ScoringRun) -> Iterator[str]:
    """results.jsonl, one line per query in benchmark order, streamed from the answers."""
    answers = (Answer.objects.filter(run=run)
               .select_related("criterion__item")
               .order_by("criterion__item__position", "criterion__index", "round"))
    for a in answers.iterator(chunk_size=2000):
        yield json.dumps({
            "id": a.criterion.item.key, "rubric_index": a.criterion.index, "round": a.round,
            "category": a.criterion.category, "choices": a.choices,
            "correct_letter": a.correct_letter, "choice": a.choice, "correct": a.correct,
            "reason": a.reason, "raw": a.raw, "error": a.error, "endpoint": a.endpoint,
            "attempts": a.attempts, "latency_ms": a.latency_ms,
        }, ensure_ascii=False) + "\n"


def per_sample(run: ScoringRun) -> list[dict]:
    results = {r.item_id: r for r in ItemResult.objects.filter(run=run)}
    rows = []
    items = Item.objects.filter(benchmark_id=run.benchmark_id).prefetch_related("criteria")
    for item in items.order_by("position"):
        r = results[item.id]
        n_if = sum(1 for c in item.criteria.all() if c.category == IF_CATEGORY)
        rows.append({
            "id": item.key, "IFR": r.ifr, "CR": r.cr, "EM": r.em,
            "n_if": n_if, "n_cr": len(item.criteria.all()) - n_if,
            "rubric_scores": r.rubric_scores, "missing": r.missing, **item.dimensions,
        })
    return rows


def taxonomy(run: ScoringRun) -> dict:
    result: dict = {}
    for s in SliceResult.objects.filter(run=run).order_by("dimension", "bucket"):
        figures = {"n": s.n, "IFR": s.ifr, "CR": s.cr, "EMR": s.emr}
        if s.dimension == SliceResult.OVERALL:
            result["overall"] = figures
        else:
            result.setdefault(s.dimension, {})[s.bucket] = figures
    return result


def file_chunks(run: ScoringRun, name: str) -> Iterator[str]:
    if name == "results.jsonl":
        return results_lines(run)
    data = per_sample(run) if name == "per_sample.json" else taxonomy(run)
    return iter([json.dumps(data, indent=1, ensure_ascii=False)])
