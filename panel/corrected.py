"""A board row's figures corrected by the listening panel (prediction-powered inference), shown
on demand from each row (`/b/<slug>/judge/models/<model>/` and its API) and listed on the
judge card for every system people rated.

A figure such as an instruction-following rate is a mean over samples of a per-sample figure
(IFR_s: the mean of the sample's instruction-following rubric scores; Kind.panel_axis says
which rubrics count toward which figure). The judge gives it on all N samples of the row's
run; people answered a few rubrics of some of them (the panel asks one rubric per item). On a
sample people rated, the gap between their verdict and the judge's on a rubric drawn from the
sample's rubrics of that axis is an unbiased estimate of the gap on IFR_s, so
prediction-powered inference for a mean (Angelopoulos et al., Science 2023) applies with
samples as its units:

    theta = mean_N(f_s) + mean_n(d_s),  theta +- z * sqrt(var_N(f_s) / N + var_n(d_s) / n)

where f_s is the judge's IFR_s and d_s the mean (human - judge) over the counted rubrics of
that axis people rated on sample s (panel.agreement.is_counted: two answers or more, and a
majority). Only this system's answers correct it: a judge may err differently on different
systems (its own family, for one), which a pooled correction would hide. A figure of all
an item's rubrics at once (an exact match) is not corrected: the panel never covers every
rubric of an item. The ranking stays the judge's.
"""

from __future__ import annotations

import numpy as np

from leaderboard.boards import state
from panel import agreement
from panel.judge_card import rated_tasks
from scoring.kinds import get_kind
from scoring.models import Benchmark, ItemResult

MIN_LABELLED = 2  # samples people rated on an axis before it is corrected (a variance needs 2)


def corrected_figures(benchmark: Benchmark, model_id: int) -> dict | None:
    """The model's board row corrected by the panel: per axis of the kind (Kind.panel_axis), the
    judge's figure, the corrected one and its 95% interval (the board's scale), the samples it
    is over and how many of them people rated (labelled) with how many rubrics; None when the
    model has no row on the board or the kind no panel."""
    kind = get_kind(benchmark.kind)
    row = state.representatives_of(benchmark, [model_id]).get(model_id)
    if row is None or not kind.has_panel:
        return None
    tasks, answers = rated_tasks(benchmark)
    mine = {pk: task for pk, task in tasks.items() if task.submission_id == row.id}
    results = dict(ItemResult.objects.filter(run_id=row.current_run_id)
                   .values_list("item_id", "values"))
    gaps: dict[str, dict[int, list[float]]] = {}  # axis -> item -> human - judge per rubric
    for pk, task in sorted(mine.items()):
        values = results.get(task.criterion.item_id)
        axis = kind.panel_axis(task.criterion.category)
        judge = None if values is None or values.get("missing") else kind.panel_verdict(
            values, task.criterion.index)
        rubric = agreement.Rated(judge=bool(judge), rights=tuple(r for _, r in answers[pk]),
                                 raters=tuple(rater for rater, _ in answers[pk]))
        if axis is None or judge is None or not agreement.is_counted(rubric):
            continue
        gaps.setdefault(axis, {}).setdefault(task.criterion.item_id, []).append(
            float(agreement.human_verdict(rubric.rights)) - float(judge))
    axes = [m.key for m in kind.metrics
            if any(kind.panel_axis(c) == m.key for c in _categories(benchmark))]
    figures = {}
    for axis in axes:
        judged = [float(v[axis]) for v in results.values() if v.get(axis) is not None]
        labelled = [float(np.mean(g)) for g in gaps.get(axis, {}).values()]
        figures[axis] = {"label": kind.label(axis),
                         **prediction_powered_mean(judged, labelled, scale=kind.scale),
                         "rubrics": sum(len(g) for g in gaps.get(axis, {}).values())}
    return {"model_id": model_id, "submission": row.id, "model": row.model.name,
            "figures": figures, "needed": MIN_LABELLED}


def prediction_powered_mean(judged: list[float], labelled: list[float], *,
                            scale: float = 1) -> dict:
    """theta and its 95% interval from the judge's per-unit figures (`judged`, N) and the
    human-minus-judge gaps on the units people rated (`labelled`, n), times `scale`; no
    correction below MIN_LABELLED labelled units."""
    f, d = np.array(judged, dtype=float), np.array(labelled, dtype=float)
    out = {"judge": float(f.mean()) * scale if len(f) else None, "samples": len(f),
           "labelled": len(d), "corrected": None, "interval": None}
    if len(f) < 2 or len(d) < MIN_LABELLED:
        return out
    theta = f.mean() + d.mean()
    half = agreement.Z_95 * float(np.sqrt(f.var(ddof=1) / len(f) + d.var(ddof=1) / len(d)))
    return {**out, "corrected": float(theta) * scale,
            "interval": (float(theta - half) * scale, float(theta + half) * scale)}


def _categories(benchmark: Benchmark) -> set[str]:
    return set(benchmark.items.values_list("criteria__category", flat=True).distinct()) - {None}


def rated_models(benchmark: Benchmark) -> list[tuple[int, str]]:
    """(model id, name) of the board's rows whose outputs people rated (a first answer out of
    the pool), by name: the judge card links each to its corrected figures."""
    tasks, _ = rated_tasks(benchmark)
    rated = {t.submission_id for t in tasks.values()}
    return sorted(((s.model_id, s.model.name) for s in state.representatives(benchmark)
                   if s.id in rated), key=lambda m: (m[1].casefold(), m[0]))
