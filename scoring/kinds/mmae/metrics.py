"""MMAE's votes and metrics as SPEC.md defines them (sections 4-6): a rubric's score from its
rounds, a sample's IFR, CR and EM, the overall figures, the slices (taxonomy.json) and their
bootstrap intervals. Plain Python with no Django import."""

from __future__ import annotations

from collections.abc import Sequence

from scoring.kinds.mmae.rules import COMPLEXITY_SINGLE, Sample


def rubric_score(corrects: Sequence[bool]) -> int:
    """1 when a strict majority of the votes is correct (2 of 3), else 0."""
    return 1 if 2 * sum(bool(c) for c in corrects) > len(corrects) else 0


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def sample_result(sample: Sample, rubric_scores: Sequence[int] | None) -> dict:
    """Per-sample figures (section 6 per_sample.json); None scores mean a missing output."""
    missing = rubric_scores is None
    scores = [0] * len(sample.rubrics) if missing else list(rubric_scores)
    if len(scores) != len(sample.rubrics):
        raise ValueError(f"sample {sample.id}: {len(scores)} scores for "
                         f"{len(sample.rubrics)} rubrics")
    if_scores = [s for r, s in zip(sample.rubrics, scores, strict=True)
                 if r.is_instruction_following]
    cr_scores = [s for r, s in zip(sample.rubrics, scores, strict=True)
                 if not r.is_instruction_following]
    return {
        "id": sample.id,
        "IFR": _mean(if_scores),
        "CR": _mean(cr_scores),
        "EM": 1 if all(scores) and not missing else 0,
        "n_if": len(if_scores),
        "n_cr": len(cr_scores),
        "rubric_scores": scores,
        "missing": missing,
        **sample.dimensions(),
    }


def summarize(rows: Sequence[dict]) -> dict:
    """IFR, CR (percent, over non-null per-sample values) and EMR over a set of samples."""
    ifr = _mean([r["IFR"] for r in rows if r["IFR"] is not None])
    cr = _mean([r["CR"] for r in rows if r["CR"] is not None])
    return {
        "n": len(rows),
        "IFR": None if ifr is None else 100 * ifr,
        "CR": None if cr is None else 100 * cr,
        "EMR": 100 * _mean([r["EM"] for r in rows]) if rows else None,
    }


DIMENSIONS = ("complexity", "complexity_group", "modality", "granularity", "operation")


def granularity_bucket(granularity: Sequence[str]) -> str:
    distinct = sorted(set(granularity))
    return distinct[0] if len(distinct) == 1 else "mixed"


def buckets(dimension: str, row: dict) -> list[str]:
    """The buckets of a dimension that a per-sample row (or Sample.dimensions()) falls in."""
    if dimension == "complexity":
        return [row["complexity"]]
    if dimension == "complexity_group":
        return ["single" if row["complexity"] == COMPLEXITY_SINGLE else "multiple"]
    if dimension == "modality":
        return [row["modality"]]
    if dimension == "granularity":
        return [granularity_bucket(row["granularity"])]
    if dimension == "operation":
        ops = {f"{op['granularity']}/{op['operation']}" for op in row["operations"]}
        return sorted(ops)
    raise ValueError(f"unknown dimension {dimension!r}; known: {', '.join(DIMENSIONS)}")


def taxonomy(rows: Sequence[dict]) -> dict:
    """taxonomy.json: overall figures and every bucket of every dimension (section 6)."""
    result: dict = {"overall": summarize(rows)}
    for dimension in DIMENSIONS:
        groups: dict[str, list[dict]] = {}
        for row in rows:
            for bucket in buckets(dimension, row):
                groups.setdefault(bucket, []).append(row)
        result[dimension] = {b: summarize(groups[b]) for b in sorted(groups)}
    return result


BOOTSTRAP_RESAMPLES = 1000


def bootstrap_intervals(rows: Sequence[dict], *, seed: int,
                        resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """Seeded bootstrap 95% intervals (percent) of IFR, CR and EMR over samples.

    Samples are drawn with replacement; a null axis of a sample stays out of that axis's
    mean, as in `summarize`. An axis with no value anywhere has no interval (None).
    """
    import numpy as np

    if not rows:
        return {"IFR": None, "CR": None, "EMR": None}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(rows), size=(resamples, len(rows)))
    result = {}
    for key, name in (("IFR", "IFR"), ("CR", "CR"), ("EM", "EMR")):
        values = np.array([np.nan if r[key] is None else float(r[key]) for r in rows])
        if np.isnan(values).all():
            result[name] = None
            continue
        drawn = values[picks]
        counts = (~np.isnan(drawn)).sum(axis=1)
        sums = np.nansum(drawn, axis=1)
        means = 100 * sums[counts > 0] / counts[counts > 0]
        lo, hi = np.percentile(means, [2.5, 97.5])
        result[name] = (float(lo), float(hi))
    return result


def taxonomy_intervals(rows: Sequence[dict], *, seed: int,
                       resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """bootstrap_intervals for the overall set and every bucket, shaped like taxonomy()."""
    result: dict = {"overall": bootstrap_intervals(rows, seed=seed, resamples=resamples)}
    for dimension in DIMENSIONS:
        groups: dict[str, list[dict]] = {}
        for row in rows:
            for bucket in buckets(dimension, row):
                groups.setdefault(bucket, []).append(row)
        result[dimension] = {b: bootstrap_intervals(groups[b], seed=seed, resamples=resamples)
                             for b in sorted(groups)}
    return result
