"""The panel's verdicts on one item (`GET /api/panel/<slug>/items/<key>/`), which the item page
shows beside the judge's: counted as the judge card counts them (panel.judge_card: first
answers only, removed raters' gone, published submissions only), each rubric's judge verdict
that of the board's judge config. Read apart from the item page because panel answers change
without the board changing, and the page is cached per board state."""

from __future__ import annotations

from leaderboard.boards import item_pages
from panel import agreement, judge_card
from scoring.kinds import get_kind
from scoring.models import Benchmark, Item


def item_panel(benchmark: Benchmark, key: str) -> dict | None:
    """Every rubric of item `key` with panel answers; None when the benchmark has no such
    item."""
    if not Item.objects.filter(benchmark=benchmark, key=key).exists():
        return None
    kind = get_kind(benchmark.kind)
    tasks, answers = judge_card.rated_tasks(benchmark, item_key=key)
    judged = judge_card.verdicts(kind, tasks).get(benchmark.judge_config_id, {})
    order = sorted(tasks.values(), key=lambda t: (t.submission_id, t.criterion.index))
    return {"benchmark": benchmark.slug, "item": key,
            "rubrics": [_rubric(kind, task, answers[task.id], judged.get(task.id))
                        for task in order]}


def _rubric(kind, task, answers: list, judge: bool | None) -> dict:
    rubric = judge_card.rated_rubric(kind, task, bool(judge), answers)
    verdict = judge_card.panel_verdict(rubric)
    return {"submission": task.submission_id, "rubric": task.criterion.index, **verdict,
            "judge": judge, "disagrees": judge is not None and agreement.disagrees(rubric),
            "label": label(verdict),
            "anchor": item_pages.anchor(task.submission_id, task.criterion.index)}


def label(verdict: dict) -> str:
    """`panel: right (2 of 3)`: the majority, and how many answers chose the right option;
    a rubric the card cannot count says why."""
    counts = f"{verdict['right_answers']} of {verdict['answers']}"
    if verdict["answers"] < 2:
        return f"panel: {'right' if verdict['human'] else 'wrong'} ({counts}; 2 answers needed)"
    if verdict["human"] is None:
        return f"panel: tied ({counts})"
    return f"panel: {'right' if verdict['human'] else 'wrong'} ({counts})"
