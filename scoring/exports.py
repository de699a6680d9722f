"""A run's files of SPEC section 6, produced from the database."""

from __future__ import annotations

import json
from collections.abc import Iterator

from scoring import airbench
from scoring.kinds import get_kind
from scoring.mmae import IF_CATEGORY
from scoring.models import Answer, Item, ItemResult, ScoringRun, SliceResult

FILES = {
    "results.jsonl": "application/x-ndjson",
    "per_sample.json": "application/json",
    "taxonomy.json": "application/json",
    "scores.json": "application/json",
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


def scores(run: ScoringRun) -> dict:
    """scores.json of a text-judged kind (AIR-Bench): every slice's figures, the judge."""
    kind = get_kind(run.benchmark.kind)
    result: dict = {"benchmark": run.benchmark.slug, "version": run.benchmark.version,
                    "kind": kind.name, "judge": run.judge_model, "simulated": run.simulated,
                    "options": run.options, "missing": len(run.missing)}
    for s in SliceResult.objects.filter(run=run).order_by("dimension", "bucket"):
        if s.dimension == SliceResult.OVERALL:
            result["overall"] = s.values
        else:
            result.setdefault(s.dimension, {})[s.bucket] = s.values
    for dimension in kind.dimensions:  # buckets in the kind's order, not by name
        found = result.get(dimension, {})
        result[dimension] = {b: found[b] for b in sorted(
            found, key=lambda b, d=dimension: kind.bucket_key(d, b))}
    return result


def _text_results_lines(run: ScoringRun) -> Iterator[str]:
    """results.jsonl of a text-judged kind: one line per item and pass, benchmark order."""
    answers: dict[tuple[int, int], Answer] = {
        (a.criterion.item_id, a.round): a
        for a in Answer.objects.filter(run=run).select_related("criterion")}
    results = {r.item_id: r.values for r in ItemResult.objects.filter(run=run)}
    rounds = get_kind(run.benchmark.kind).rounds  # the kind's passes (chat: A and B)
    for item in Item.objects.filter(benchmark_id=run.benchmark_id).order_by("position"):
        row = results.get(item.id, {})
        for round_ in range(rounds):
            answer = answers.get((item.id, round_))
            yield json.dumps(_text_line(run, item, row, round_, answer), ensure_ascii=False) \
                + "\n"


def _text_line(run: ScoringRun, item: Item, row: dict, round_: int, answer) -> dict:
    line = {"uniq_id": item.key, **{k: v for k, v in item.dimensions.items()},
            "response": run.outputs.get(item.key), "missing": item.key not in run.outputs}
    judged = {"raw": answer.raw, "error": answer.error, "endpoint": answer.endpoint,
              "attempts": answer.attempts, "latency_ms": answer.latency_ms} if answer else None
    if "score_A" in row:  # chat: one line per pass
        name = airbench.PASSES[round_]
        line.update({"pass": name, "round": round_, "score": row[f"score_{name}"],
                     "failed": row[f"failed_{name}"], "judge": judged})
    else:  # foundation: the rule, and the judge's alignment where it was asked
        line.update({k: row.get(k) for k in ("letter", "source", "correct_letter", "parsed",
                                             "correct")})
        line["alignment"] = judged and {**judged, "choice": answer.choice}
    return line


def file_chunks(run: ScoringRun, name: str) -> Iterator[str]:
    if get_kind(run.benchmark.kind).output == "text":
        if name == "results.jsonl":
            return _text_results_lines(run)
        return iter([json.dumps(scores(run), indent=1, ensure_ascii=False)])
    if name == "results.jsonl":
        return results_lines(run)
    data = per_sample(run) if name == "per_sample.json" else taxonomy(run)
    return iter([json.dumps(data, indent=1, ensure_ascii=False)])
