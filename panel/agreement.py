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


def _intervals(pairs: list[tuple[bool, bool]], *, seed: int, resamples: int) -> dict:
    """Seeded bootstrap 95% intervals of agreement and kappa over rubrics (drawn with
    replacement, the same draws for both); resamples where kappa is undefined are left out
    of its interval."""
    import numpy as np

    none = {"agreement": (None, None), "kappa": (None, None)}
    if not pairs:
        return none
    humans = np.array([h for h, _ in pairs], dtype=float)
    judges = np.array([j for _, j in pairs], dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(pairs), size=(resamples, len(pairs)))
    h, j = humans[picks], judges[picks]
    observed = (h == j).mean(axis=1)
    chance = h.mean(axis=1) * j.mean(axis=1) + (1 - h.mean(axis=1)) * (1 - j.mean(axis=1))
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
    bounds = _intervals(pairs, seed=seed, resamples=resamples)
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
