"""AIR-Bench's figures as the official scripts compute them: a foundation item's row and the
accuracies per task, domain and average; a chat item's row from its two passes and the mean
scores per category, mixed audio and average. Plain Python with no Django import."""

from __future__ import annotations

from collections.abc import Sequence

from scoring.kinds.airbench.rules import (
    AVERAGE_OF,
    CATEGORY_ORDER,
    CHAT_RIGHT_ABOVE,
    CHAT_TASK_ORDER,
    DOMAINS,
    MIXED,
    MIXED_OF,
    TASK_ORDER,
    TASKS,
    ChatItem,
    FoundationItem,
    extract_letter,
)


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def foundation_row(item: FoundationItem, response: str | None,
                   aligned: str | None = None) -> dict:
    """One item's outcome. `response` None means no prediction (missing); `aligned` is the
    judge's letter for a response the rule could not read."""
    rule = extract_letter(response)
    letter = rule or aligned
    return {
        "id": item.uniq_id, "domain": item.domain, "task": item.task,
        "letter": letter, "source": "rule" if rule else "judge" if aligned else None,
        "correct_letter": item.correct_letter, "parsed": letter is not None,
        "correct": letter == item.correct_letter, "missing": response is None,
    }


def _accuracy(rows: Sequence[dict]) -> dict:
    parsed = [r for r in rows if r["parsed"]]
    correct = sum(1 for r in rows if r["correct"])
    return {
        "n": len(rows), "parsed": len(parsed), "unparsed": len(rows) - len(parsed),
        "correct": correct, "missing": sum(1 for r in rows if r["missing"]),
        "acc": 100 * correct / len(parsed) if parsed else None,
        "acc_strict": 100 * correct / len(rows) if rows else None,
    }


def _pooled(parts: Sequence[dict]) -> dict:
    """Unweighted means of acc and acc_strict over parts; counts summed."""
    counts = {k: sum(p[k] for p in parts) for k in ("n", "parsed", "unparsed", "correct",
                                                     "missing")}
    return {**counts, "acc": _mean(p["acc"] for p in parts),
            "acc_strict": _mean(p["acc_strict"] for p in parts)}


def domain_means(tasks: dict[str, dict]) -> tuple[dict[str, dict], dict]:
    """(per-domain figures, overall) from per-task figures keyed by display name: a domain is
    the unweighted mean of its tasks, overall the mean of the domains."""
    domain_of = {display: domain for domain, display in TASKS.values()}
    domains = {}
    for domain in DOMAINS:
        parts = [figures for task, figures in tasks.items() if domain_of[task] == domain]
        if parts:
            domains[domain] = _pooled(parts)
    return domains, _pooled(list(domains.values()))


def foundation_summary(rows: Sequence[dict]) -> dict:
    """scores.json's figures: per task (both dataset folders pooled), per domain, overall."""
    by_task: dict[str, list[dict]] = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row)
    tasks = {t: _accuracy(by_task[t]) for t in TASK_ORDER if t in by_task}
    domains, overall = domain_means(tasks)
    return {"overall": overall, "domain": domains, "task": tasks}


def chat_row(item: ChatItem, score_a: float | None, score_b: float | None, *,
             missing: bool = False) -> dict:
    """One item's outcome from the model's score in each pass (None: that pass's reply was
    unusable). A missing response scores 0 in both passes and is sent to no judge."""
    scores = [0, 0] if missing else [score_a, score_b]
    return {
        "id": item.uniq_id, "category": item.category, "task": item.task_name,
        "score_A": scores[0], "score_B": scores[1],
        "failed_A": not missing and score_a is None, "failed_B": not missing and score_b is None,
        "missing": missing,
    }


def chat_right(row: dict) -> bool | None:
    """The judge's verdict on an item's answer as the listening panel is asked it: right when
    the mean of its passes' scores (those not failed) is above CHAT_RIGHT_ABOVE, 5.5; None
    when both passes failed."""
    mean = _mean([row.get("score_A"), row.get("score_B")])
    return None if mean is None else mean > CHAT_RIGHT_ABOVE


def _both(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else (a + b) / 2


def _chat_figures(rows: Sequence[dict]) -> dict:
    """A category's (or task's) figures. Strict: an unanswered item scores 0 in both passes.
    Answered: over the answered items only, as the official cal_score.py (which never sees an
    unanswered item) computes the published figure."""
    a = _mean(r["score_A"] for r in rows)
    b = _mean(r["score_B"] for r in rows)
    answered = [r for r in rows if not r["missing"]]
    failed_a = sum(1 for r in rows if r["failed_A"])
    failed_b = sum(1 for r in rows if r["failed_B"])
    judged = [r for r in answered if r["score_A"] is not None and r["score_B"] is not None]
    return {"n": len(rows), "pass_A": a, "pass_B": b, "score": _both(a, b),
            "score_answered": _both(_mean(r["score_A"] for r in answered),
                                    _mean(r["score_B"] for r in answered)),
            "failed_A": failed_a, "failed_B": failed_b, "failed": failed_a + failed_b,
            "missing": sum(1 for r in rows if r["missing"]),
            # How much more the judge gives an answer in the second position than in the
            # first: pass A puts the model's answer second.
            "position_bias": _mean(r["score_A"] - r["score_B"] for r in judged),
            "judged": len(judged)}


MEANS = ("pass_A", "pass_B", "score", "score_answered")


def _chat_mean(parts: Sequence[dict]) -> dict:
    counts = {k: sum(p[k] for p in parts) for k in ("n", "failed_A", "failed_B", "failed",
                                                     "missing", "judged")}
    judged = counts["judged"]
    bias = sum(p["position_bias"] * p["judged"] for p in parts if p["judged"]) / judged \
        if judged else None
    return {**counts, **{k: _mean(p[k] for p in parts) for k in MEANS}, "position_bias": bias}


def chat_summary(rows: Sequence[dict]) -> dict:
    """scores.json's figures: per task, per category (mixed audio = mean of the two mixed
    categories), and the average of speech, sound, music and mixed audio as overall."""
    by_task: dict[str, list[dict]] = {}
    by_category: dict[str, list[dict]] = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row)
        by_category.setdefault(row["category"], []).append(row)
    categories = {c: _chat_figures(by_category[c]) for c in CATEGORY_ORDER if c in by_category}
    mixed = [categories[c] for c in MIXED_OF if c in categories]
    if mixed:
        categories[MIXED] = _chat_mean(mixed)
    overall = _chat_mean([categories[c] for c in AVERAGE_OF if c in categories])
    # The counts of the average are those of every item, not of the four parts summed (mixed
    # audio's counts already include both of its categories).
    overall.update({k: v for k, v in _chat_figures(rows).items() if k not in MEANS})
    tasks = {t: _chat_figures(by_task[t]) for t in CHAT_TASK_ORDER if t in by_task}
    return {"overall": overall, "category": categories, "task": tasks}
