"""Reads that serve a submission's page: its figures and the per-sample explorer.

The caller has already checked visibility (submissions.selectors.submission_visible); these
functions take the submission it returned and never look one up themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.core.paginator import Paginator

from scoring import airbench, mmae
from scoring.kinds import BenchmarkKind, get_kind
from scoring.models import Answer, Criterion, Item, ItemResult, ScoringRun, SliceResult
from scoring.predictions import resolve_audio
from submissions.models import Submission

PAGE_SIZE = 20
METRICS = ("IFR", "CR", "EMR")
HINTS = {
    "IFR": "instruction following rate: mean share of a sample's instruction-following "
           "rubrics passed",
    "CR": "consistency rate: mean share of a sample's consistency rubrics passed",
    "EMR": "exact match rate: share of samples passing every rubric",
    "acc_strict": "correct answers of all items (an unreadable or missing answer is wrong)",
    "acc": "correct answers of the items whose answer could be read (the published figure)",
    "unparsed": "items whose answer neither the rule nor the judge could read",
    "score": "mean of the two passes (1-10), averaged over speech, sound, music and mixed",
    "pass_A": "the judge's score with the reference answer shown first",
    "pass_B": "the judge's score with the reference answer shown second",
    "failed": "judge replies that were not two scores (left out of the means)",
}


class ExplorerError(ValueError):
    """A well-formed explorer request that still cannot be served (a page past the last)."""


def finished_run(submission: Submission) -> ScoringRun | None:
    run = submission.current_run
    return run if run is not None and run.status == ScoringRun.Status.FINISHED else None


# --- figures -----------------------------------------------------------------------------


def _figures(s: SliceResult, kind: BenchmarkKind) -> dict:
    values = s.figures()
    row = {"dimension": s.dimension, "bucket": s.bucket, "n": s.n}
    for metric in kind.metrics:
        row[metric] = values.get(metric)
        lo = getattr(s, f"{metric.lower()}_lo", None)
        hi = getattr(s, f"{metric.lower()}_hi", None)
        row[f"{metric}_interval"] = None if lo is None or hi is None else (lo, hi)
    row["cells"] = [(row[m], row[f"{m}_interval"], m in kind.counts)
                    for m in kind.metrics]  # display order
    return row


def submission_figures(submission: Submission) -> dict | None:
    """Overall figures and every bucket of every dimension (in SPEC order), with bootstrap
    intervals; None until the current run is finished."""
    run = finished_run(submission)
    if run is None:
        return None
    kind = get_kind(submission.benchmark.kind)
    rows = [_figures(s, kind) for s in SliceResult.objects.filter(run=run)]
    overall = next((r for r in rows if r["dimension"] == SliceResult.OVERALL), None)
    order = {d: i for i, d in enumerate(kind.dimensions)}
    slices = sorted((r for r in rows if r["dimension"] != SliceResult.OVERALL),
                    key=lambda r: (order.get(r["dimension"], len(order)), r["dimension"],
                                   kind.bucket_key(r["dimension"], r["bucket"])))
    previous = None
    for row in slices:
        row["first_of_dimension"] = row["dimension"] != previous
        row["dimension_label"] = row["dimension"].replace("_", " ")
        previous = row["dimension"]
    cells = [] if overall is None else [
        (kind.label(metric), overall[metric], overall[f"{metric}_interval"],
         HINTS.get(metric, ""), metric in kind.counts)
        for metric in kind.metrics]
    return {"overall": overall, "overall_cells": cells, "slices": slices,
            "labels": [kind.label(m) for m in kind.metrics]}


# --- the explorer ------------------------------------------------------------------------


@dataclass(frozen=True)
class ExplorerQuery:
    dimension: str = ""
    bucket: str = ""
    failed: bool = False
    search: str = ""
    page: int = 1


@dataclass(frozen=True)
class ItemRow:
    """What filtering needs of an item; the page's items are then loaded in full."""

    id: int
    key: str
    dimensions: dict
    turns: tuple[str, ...]
    media: tuple[str, ...]

    @property
    def instruction(self) -> str:
        return "\n".join(self.turns)


def user_turns(content: dict) -> tuple[str, ...]:
    """The text of each user turn (a multi-round sample has several), in order; a text
    kind's question."""
    if isinstance(content.get("question"), str):
        return (content["question"],)
    turns = []
    for message in content.get("messages") or []:
        if not isinstance(message, dict) or message.get("role", "user") != "user":
            continue
        parts = message.get("content")
        parts = [{"type": "text", "text": parts}] if isinstance(parts, str) else parts or []
        text = "\n".join(p["text"] for p in parts if isinstance(p, dict)
                         and p.get("type") == "text" and isinstance(p.get("text"), str))
        if text:
            turns.append(text)
    return tuple(turns)


def explorer_items(benchmark) -> list[ItemRow]:
    return [ItemRow(id=i, key=k, dimensions=d, turns=user_turns(c), media=tuple(m))
            for i, k, d, c, m in Item.objects.filter(benchmark=benchmark).order_by("position")
            .values_list("id", "key", "dimensions", "content", "media")]


def slice_buckets(items: list[ItemRow],
                  kind: BenchmarkKind | None = None) -> dict[str, list[str]]:
    """dimension -> the buckets that the benchmark's items fall in."""
    kind = kind or get_kind(mmae.KIND)
    found: dict[str, set[str]] = {d: set() for d in kind.dimensions}
    for item in items:
        for dimension in kind.dimensions:
            found[dimension].update(kind.buckets(dimension, item.dimensions))
    return {d: sorted(b, key=lambda bucket, d=d: kind.bucket_key(d, bucket))
            for d, b in found.items()}


def _failed_ids(run: ScoringRun | None) -> set[int]:
    """Items with at least one rubric scored 0 (a missing output scores 0 on every one); for
    a text kind, items answered wrong or with a judge reply that could not be read."""
    if run is None:
        return set()
    return {item_id for item_id, scores, values in ItemResult.objects.filter(run=run)
            .values_list("item_id", "rubric_scores", "values")
            if (0 in scores if not values else not values.get("correct", True)
                or values.get("failed_A") or values.get("failed_B"))}


def _matching(items: list[ItemRow], query: ExplorerQuery, run: ScoringRun | None,
              kind: BenchmarkKind):
    needle = query.search.strip().casefold()
    failed = _failed_ids(run) if query.failed else None
    return [
        item for item in items
        if (not query.dimension or query.bucket in kind.buckets(query.dimension,
                                                                item.dimensions))
        and (failed is None or item.id in failed)
        and (not needle or needle in item.instruction.casefold()
             or needle in item.key.casefold())
    ]


def explorer_page(*, submission: Submission, items: list[ItemRow],
                  query: ExplorerQuery) -> dict:
    """One page of samples matching the query, each with its audio, figures and votes.

    At most four queries whatever the page size: the failed filter's scores (when asked),
    then the page's results, rubrics and answers.
    """
    run = submission.current_run
    kind = get_kind(submission.benchmark.kind)
    matching = _matching(items, query, finished_run(submission), kind)
    paginator = Paginator(matching, PAGE_SIZE)
    if query.page > paginator.num_pages:
        raise ExplorerError(f"page {query.page} is past the last page "
                            f"({paginator.num_pages})")
    page = paginator.page(query.page)
    return {"page": page, "count": paginator.count, "num_pages": paginator.num_pages,
            "samples": (_text_samples if kind.output == "text" else _samples)(
                list(page.object_list), run),
            "run_finished": finished_run(submission) is not None}


def _samples(rows: list[ItemRow], run: ScoringRun | None) -> list[dict]:
    ids = [r.id for r in rows]
    results = ({r.item_id: r for r in ItemResult.objects.filter(run=run, item_id__in=ids)}
               if run is not None else {})
    criteria: dict[int, list[Criterion]] = {}
    for criterion in Criterion.objects.filter(item_id__in=ids).order_by("item_id", "index"):
        criteria.setdefault(criterion.item_id, []).append(criterion)
    votes: dict[int, list[Answer]] = {}
    if run is not None:
        criterion_ids = [c.id for cs in criteria.values() for c in cs]
        for answer in (Answer.objects.filter(run=run, criterion_id__in=criterion_ids)
                       .only("criterion_id", "round", "choices", "correct_letter", "choice",
                             "correct", "reason", "error").order_by("criterion_id", "round")):
            votes.setdefault(answer.criterion_id, []).append(answer)
    return [_sample(row, results.get(row.id), criteria.get(row.id, []), votes, run)
            for row in rows]


def _sample(row: ItemRow, result: ItemResult | None, criteria: list[Criterion],
            votes: dict[int, list[Answer]], run: ScoringRun | None) -> dict:
    scores = result.rubric_scores if result is not None else [None] * len(criteria)
    has_output = run is not None and row.key in run.outputs
    rubrics = [_rubric(c, score, votes.get(c.id, []))
               for c, score in zip(criteria, scores, strict=False)]
    dims = row.dimensions
    return {
        "key": row.key,
        "complexity": dims.get("complexity"),
        "modality": dims.get("modality"),
        "operations": mmae.buckets("operation", dims),
        "turns": row.turns,
        "inputs": [f"input{n}" for n in range(1, len(row.media) + 1)],
        "has_output": has_output,
        "missing_reason": "" if has_output or run is None else run.missing.get(row.key, ""),
        "IFR": None if result is None else result.ifr,
        "CR": None if result is None else result.cr,
        "EM": None if result is None else result.em,
        "scored": result is not None,
        "rubrics": rubrics,
        "n_passed": sum(1 for r in rubrics if r["score"] == 1),
        "n_failed": sum(1 for r in rubrics if r["score"] == 0),
        "n_if": sum(1 for r in rubrics if r["instruction_following"]),
        "if_passed": sum(1 for r in rubrics if r["instruction_following"] and r["score"] == 1),
        "n_cr": sum(1 for r in rubrics if not r["instruction_following"]),
        "cr_passed": sum(1 for r in rubrics
                         if not r["instruction_following"] and r["score"] == 1),
    }


def _text_samples(rows: list[ItemRow], run: ScoringRun | None) -> list[dict]:
    """A text kind's items (AIR-Bench): the question, the response, what the rule read and
    every judge reply (both passes of a chat item; the alignment of a foundation item)."""
    ids = [r.id for r in rows]
    results = ({r.item_id: r.values for r in ItemResult.objects.filter(run=run, item_id__in=ids)}
               if run is not None else {})
    contents = dict(Item.objects.filter(id__in=ids).values_list("id", "content"))
    judged: dict[int, list[Answer]] = {}
    if run is not None:
        for answer in (Answer.objects.filter(run=run, criterion__item_id__in=ids)
                       .select_related("criterion").order_by("criterion__item_id", "round")):
            judged.setdefault(answer.criterion.item_id, []).append(answer)
    samples = []
    for row in rows:
        content, result = contents[row.id], results.get(row.id)
        chat = "meta_info" in content
        samples.append({
            "key": row.key, "text": True, "chat": chat,
            "tags": [v for k, v in row.dimensions.items() if k != "task_name"],
            "turns": row.turns, "answer_gt": content.get("answer_gt"),
            "choices": [(airbench.LETTERS[i], c, c == content.get("answer_gt"))
                        for i, c in enumerate(content.get("choices", []))],
            "meta_info": content.get("meta_info"),
            "inputs": [f"input{n}" for n in range(1, len(row.media) + 1)]
            if run is not None and run.benchmark.audio_root else [],
            "has_output": run is not None and row.key in run.outputs,
            "response": run.outputs.get(row.key) if run is not None else None,
            "scored": result is not None, "result": result or {},
            "judgments": [{"label": f"pass {airbench.PASSES[a.round]}" if chat
                           else "alignment", "raw": a.raw, "error": a.error,
                           "score": a.score, "choice": a.choice, "attempts": a.attempts}
                          for a in judged.get(row.id, [])],
        })
    return samples


def _rubric(criterion: Criterion, score: int | None, answers: list[Answer]) -> dict:
    return {
        "index": criterion.index,
        "category": criterion.category,
        "instruction_following": criterion.category == mmae.IF_CATEGORY,
        "question": criterion.question,
        "score": score,
        "votes": [_vote(a) for a in answers],
    }


def _vote(answer: Answer) -> dict:
    return {
        "round": answer.round,
        "choices": [{"letter": letter, "text": text,
                     "right": letter == answer.correct_letter, "chosen": letter == answer.choice}
                    for letter, text in zip(mmae.LETTERS, answer.choices, strict=False)],
        "correct_letter": answer.correct_letter,
        "choice": answer.choice,
        "correct": answer.correct,
        "error": answer.error if answer.choice is None else None,
        "reason": answer.reason,
    }


# --- audio -------------------------------------------------------------------------------


def audio_file(submission: Submission, item_key: str, which: str) -> Path | None:
    """The file behind one of a sample's players, from the database only; None when there
    is none. `which` is "output" or "inputN" (N from 1, the sample's N-th input audio).

    An output is served only from inside its run's folder: the paths come from an upload.
    """
    item = Item.objects.filter(benchmark_id=submission.benchmark_id, key=item_key) \
        .only("media").first()
    if item is None:
        return None
    if which == "output":
        run = submission.current_run
        relative = None if run is None else run.outputs.get(item_key)
        if not isinstance(relative, str):
            return None
        root = Path(run.audio_root).resolve()
        path = resolve_audio(root, relative).resolve()
        if not path.is_relative_to(root):
            return None
    else:
        number = int(which.removeprefix("input"))
        if not 1 <= number <= len(item.media):
            return None
        root = Path(submission.benchmark.audio_root).resolve()
        path = resolve_audio(root, item.media[number - 1]).resolve()
        if not path.is_relative_to(root):
            return None
    return path if path.is_file() else None
