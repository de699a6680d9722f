"""The judge card's human figures, from each rubric's judge verdict and its raters' answers:
plain Python and numpy, no Django, so that the tests count them independently.

A rubric here is one rubric of one output (a panel task). Its human verdict is the majority
of its raters' answers (the output passes it or not, as the first option says; a tie has
none); its judge verdict is what the benchmark's kind reads from the item's result
(Kind.panel_verdict: a rubric's score, the majority of the judge's votes, or whether a scored
answer is above the middle of the scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

RESAMPLES = 1000


@dataclass(frozen=True)
class Rated:
    """One rubric: the judge's verdict, each first answer's rightness and its rater, and the
    buckets it falls in per dimension (a list: an item may be in several buckets of one)."""

    judge: bool
    rights: tuple[bool, ...]
    raters: tuple[int, ...]
    buckets: dict[str, list[str]] = field(default_factory=dict)
    item: str = ""  # the benchmark item it is about: intervals resample items


def human_verdict(rights: Sequence[bool]) -> bool | None:
    """The majority of the answers; None for a tie or no answer."""
    yes = sum(1 for r in rights if r)
    no = len(rights) - yes
    return None if yes == no else yes > no


def is_counted(rubric: Rated) -> bool:
    """Two or more answers and a majority: a rubric the figures compare."""
    return len(rubric.rights) >= 2 and human_verdict(rubric.rights) is not None


def disagrees(rubric: Rated) -> bool:
    """A counted rubric whose human verdict is not the judge's."""
    return is_counted(rubric) and human_verdict(rubric.rights) != rubric.judge


def counted(rubrics: Sequence[Rated]) -> list[Rated]:
    return [r for r in rubrics if is_counted(r)]


def agreement(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    return sum(1 for h, j in pairs if h == j) / len(pairs) if pairs else None


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary verdicts; None when chance agreement is total (both
    always said the same one thing, so kappa is undefined)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = agreement(pairs)
    human_yes = sum(1 for h, _ in pairs if h) / n
    judge_yes = sum(1 for _, j in pairs if j) / n
    chance = human_yes * judge_yes + (1 - human_yes) * (1 - judge_yes)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


def human_human(rubrics: Sequence[Rated]) -> float | None:
    """Agreeing pairs over all pairs of answers to the same rubric, ties included: how often
    two people agree, the ceiling a judge can be held to."""
    pairs = agree = 0
    for rubric in rubrics:
        yes = sum(1 for r in rubric.rights if r)
        no = len(rubric.rights) - yes
        pairs += len(rubric.rights) * (len(rubric.rights) - 1) // 2
        agree += yes * (yes - 1) // 2 + no * (no - 1) // 2
    return agree / pairs if pairs else None


def _intervals(pairs: list[tuple[bool, bool]], items: list[str], *, seed: int,
               resamples: int) -> dict:
    """Seeded bootstrap 95% intervals of agreement and kappa, resampling items (each drawn
    with replacement brings all its rubrics, of every system: rubrics are nested in items, as
    the board's intervals resample items); the same draws for both figures; resamples where
    kappa is undefined are left out of its interval."""
    import numpy as np

    none = {"agreement": (None, None), "kappa": (None, None)}
    if not pairs:
        return none
    keys = sorted(set(items))
    index = {key: i for i, key in enumerate(keys)}
    cluster = np.array([index[item] for item in items])
    humans = np.array([h for h, _ in pairs], dtype=float)
    judges = np.array([j for _, j in pairs], dtype=float)
    # Per item: rubrics, agreeing verdicts, human and judge passes.
    sums = np.stack([np.bincount(cluster, weights=w, minlength=len(keys)) for w in (
        np.ones(len(pairs)), (humans == judges).astype(float), humans, judges)])
    picks = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    counts = np.stack([np.bincount(row, minlength=len(keys)) for row in picks])
    n, agree, human_yes, judge_yes = (counts @ sums[k] for k in range(4))
    observed = agree / n
    chance = (human_yes / n) * (judge_yes / n) + (1 - human_yes / n) * (1 - judge_yes / n)
    defined = chance < 1
    kappas = (observed[defined] - chance[defined]) / (1 - chance[defined])
    return {"agreement": _percentiles(observed), "kappa": _percentiles(kappas)}


def _percentiles(values) -> tuple[float | None, float | None]:
    import numpy as np

    if len(values) == 0:
        return None, None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def block(rubrics: Sequence[Rated], *, seed: int, resamples: int = RESAMPLES) -> dict:
    """The human figures over a set of rubrics (the card's `human` without `by`)."""
    compared = counted(rubrics)
    pairs = [(human_verdict(r.rights), r.judge) for r in compared]
    bounds = _intervals(pairs, [r.item for r in compared], seed=seed, resamples=resamples)
    (agreement_lo, agreement_hi), (kappa_lo, kappa_hi) = bounds["agreement"], bounds["kappa"]
    return {
        "rubrics": len(compared),
        "answers": sum(len(r.rights) for r in rubrics),
        "raters": len({rater for r in rubrics for rater in r.raters}),
        "agreement": agreement(pairs), "agreement_lo": agreement_lo,
        "agreement_hi": agreement_hi,
        "kappa": kappa(pairs), "kappa_lo": kappa_lo, "kappa_hi": kappa_hi,
        "human_human": human_human(rubrics),
    }


def human(rubrics: Sequence[Rated], *, seed: int, dimensions: Sequence[str],
          resamples: int = RESAMPLES) -> dict:
    """The card's `human` block: overall, and `by` dimension and bucket."""
    by: dict[str, dict[str, dict]] = {}
    for dimension in dimensions:
        groups: dict[str, list[Rated]] = {}
        for rubric in rubrics:
            for bucket in rubric.buckets.get(dimension, []):
                groups.setdefault(bucket, []).append(rubric)
        by[dimension] = {bucket: block(groups[bucket], seed=seed, resamples=resamples)
                         for bucket in sorted(groups)}
    return {**block(rubrics, seed=seed, resamples=resamples), "by": by}


def self_consistency(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Share of repeated tasks where the rater chose the same option (by its text, since
    each showing is shuffled alike but options are compared, not letters) both times."""
    return sum(1 for a, b in pairs if a == b) / len(pairs) if pairs else None


# --- can the judge replace a rater? -------------------------------------------------------
# The alternative annotator test (Calderon, Reichart and Dror, ACL 2025): on rubrics with 3 or
# more raters, each rater in turn is left out; the judge and that rater are each scored by
# their agreement with the remaining raters, rubric by rubric; a paired one-sided t-test with
# a tolerance epsilon asks whether the judge's advantage probability beats the rater's minus
# epsilon; the p-values of all raters are corrected by Benjamini-Yekutieli; the winning rate
# is the share of raters the judge beats so, and the judge can stand in for a rater when it is
# at least a half.

EPSILON = 0.1  # the paper's tolerance for skilled raters (0.2 for crowd workers)
ALPHA = 0.05
MIN_RATERS = 3  # raters the test leaves out in turn (the paper's minimum)
MIN_RUBRICS = 10  # rubrics a rater must share with 2 or more others to be left out


def alternative_annotator_test(rubrics: Sequence[Rated], *, epsilon: float = EPSILON,
                               alpha: float = ALPHA) -> dict:
    """The test's figures: `raters` (the raters left out in turn, with their rubrics count,
    the judge's and the rater's advantage probabilities and the corrected p-value),
    `winning_rate`, `advantage_probability` (the judge's, over the raters), `epsilon` and
    `verdict`: "yes", "no" or "not enough answers"."""
    from scipy import stats

    shared = [r for r in rubrics if len(r.rights) >= 3]
    per_rater: dict[int, list[tuple[float, float]]] = {}
    for rubric in shared:
        for k, rater in enumerate(rubric.raters):
            others = [right for i, right in enumerate(rubric.rights) if i != k]
            judge_score = sum(right == rubric.judge for right in others) / len(others)
            rater_score = sum(right == rubric.rights[k] for right in others) / len(others)
            per_rater.setdefault(rater, []).append((judge_score, rater_score))
    rows, ps = [], []
    for rater in sorted(per_rater):
        scores = per_rater[rater]
        if len(scores) < MIN_RUBRICS:
            continue
        judge_wins = [float(j >= h) for j, h in scores]
        rater_wins = [float(h >= j) for j, h in scores]
        differences = [a - b for a, b in zip(judge_wins, rater_wins, strict=True)]
        mean = sum(differences) / len(differences)
        if len(set(differences)) == 1:  # no spread: the t-test is undefined, the sign is not
            p = 0.0 if mean > -epsilon else 1.0
        else:
            p = float(stats.ttest_1samp(differences, -epsilon, alternative="greater").pvalue)
        ps.append(p)
        rows.append({"rater": rater, "rubrics": len(scores),
                     "judge_advantage": sum(judge_wins) / len(scores),
                     "rater_advantage": sum(rater_wins) / len(scores)})
    if len(rows) < MIN_RATERS:
        return {"epsilon": epsilon, "alpha": alpha, "raters": [], "rubrics": len(shared),
                "winning_rate": None, "advantage_probability": None,
                "verdict": "not enough answers"}
    adjusted = stats.false_discovery_control(ps, method="by")
    for row, p in zip(rows, adjusted, strict=True):
        row["p_value"] = float(p)
        row["judge_wins"] = bool(p <= alpha)
    winning = sum(row["judge_wins"] for row in rows) / len(rows)
    return {"epsilon": epsilon, "alpha": alpha, "raters": rows, "rubrics": len(shared),
            "winning_rate": winning,
            "advantage_probability": sum(r["judge_advantage"] for r in rows) / len(rows),
            "verdict": "yes" if winning >= 0.5 else "no"}


# --- the judge's figure corrected by people ------------------------------------------------
# Prediction-powered inference (Angelopoulos et al., Science 2023) for a mean: the judge's
# verdicts on every rubric (N of them) give the figure; the rubrics people also answered (n)
# measure the judge's error on it, which is taken off; the interval adds both variances:
#   theta = mean_N(f) + mean_n(Y - f),  theta +- z * sqrt(var_N(f) / N + var_n(Y - f) / n).
Z_95 = 1.959963984540054


def prediction_powered(judged: Sequence[bool], labelled: Sequence[tuple[bool, bool]]) -> dict:
    """The share of rubrics passed, corrected: `judged` are the judge's verdicts on every
    rubric, `labelled` (human verdict, judge verdict) pairs of the rubrics people answered.
    None figures below 2 labelled rubrics (no variance to measure)."""
    import numpy as np

    f = np.array(judged, dtype=float)
    pairs = np.array(labelled, dtype=float).reshape(-1, 2)
    out = {"judge": float(f.mean()) if len(f) else None, "rubrics": len(f),
           "labelled": len(pairs), "corrected": None, "corrected_lo": None,
           "corrected_hi": None}
    if len(f) < 2 or len(pairs) < 2:
        return out
    rectifier = pairs[:, 0] - pairs[:, 1]
    theta = f.mean() + rectifier.mean()
    half = Z_95 * float(np.sqrt(f.var(ddof=1) / len(f) + rectifier.var(ddof=1) / len(pairs)))
    return {**out, "corrected": float(theta), "corrected_lo": float(theta - half),
            "corrected_hi": float(theta + half)}
