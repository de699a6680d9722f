"""The judge card's checks of the judge itself: the robustness battery (what the judge gave
outputs no honest judge rewards, against the figure declared for each in scoring.battery) and
the rank agreement of two judge configs that scored the same submissions (Kendall's tau with
a seeded bootstrap interval, and the rows that change rank)."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from leaderboard.boards.ranking import competition_ranks
from scoring.baselines import BASELINES
from scoring.battery import EXPECTED, Expected
from scoring.kinds import get_kind
from scoring.models import Benchmark, JudgeConfig, ScoringRun, SliceResult
from submissions.models import Submission

OVERALL = SliceResult.OVERALL
AS_EXPECTED, UNCERTAIN, DEVIATES, NOT_SCORED = "as expected", "uncertain", "deviates", \
    "not scored"
RESAMPLES = 1000  # bootstrap replicates of the rank agreement
SEED = 0  # of the rank agreement's bootstrap, so that the card's interval never moves


def verdict(expected: Expected, measured: float | None, interval) -> str:
    """Whether the judge's figure lands within the tolerance of the honest one: as expected;
    deviates when it lies outside and so does its whole interval (or it has none);
    uncertain when the figure lies outside but its interval reaches into the band."""
    if measured is None:
        return NOT_SCORED
    low, high = expected.value - expected.tolerance, expected.value + expected.tolerance
    if low <= measured <= high:
        return AS_EXPECTED
    if interval and interval[0] <= high and interval[1] >= low:
        return UNCERTAIN
    return DEVIATES


def _latest_runs(benchmark: Benchmark, config: JudgeConfig) -> dict[str, ScoringRun]:
    latest: dict[str, ScoringRun] = {}
    for run in (ScoringRun.objects.filter(
            benchmark=benchmark, judge_config=config, purpose=ScoringRun.Purpose.BASELINE,
            status=ScoringRun.Status.FINISHED)
            .defer("outputs", "digests").order_by("label", "-id")):
        latest.setdefault(run.label, run)
    return latest


def battery(benchmark: Benchmark, judge_config: JudgeConfig | None = None) -> list[dict]:
    """One row per baseline and declared figure (scoring.battery.EXPECTED): the latest
    finished run of each baseline under `judge_config` (by default the benchmark's), its
    overall figure and interval, the honest figure with its tolerance, and the verdict.
    A baseline not scored yet has its rows, measured None, verdict "not scored"."""
    config = judge_config or benchmark.judge_config
    if config is None or not get_kind(benchmark.kind).calibration_baselines:
        return []
    runs = _latest_runs(benchmark, config)
    overall = {s.run_id: s for s in SliceResult.objects.filter(
        run__in=list(runs.values()), dimension=OVERALL)}
    rows = []
    for label in BASELINES:
        run = runs.get(label)
        figures = overall.get(run.id) if run else None
        for expected in EXPECTED.get(label, ()):
            measured = figures.values.get(expected.metric) if figures else None
            interval = figures.interval(expected.metric) if figures else None
            rows.append({
                "row": label, "figure": expected.metric, "measured": measured,
                "interval": interval, "expected": expected.value,
                "tolerance": expected.tolerance, "why": expected.why,
                "verdict": verdict(expected, measured, interval),
                "run": run.id if run else None, "judge_config": config.name,
                "simulated": bool(run and run.simulated),
                # Shuffled's items that no other item's public output could be given to.
                "missing": len(run.missing) if run else 0,
            })
    return rows


def kendall_tau(a, b, weights=None) -> float:
    """Kendall's tau-b of two rankings (ties corrected), over the multiset in which item i
    appears weights[i] times (a bootstrap resample); NaN when either side is all tied."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    w = np.ones(len(a)) if weights is None else np.asarray(weights, dtype=float)
    return float(_taus(_signs(a), _signs(b), w[None, :])[0])


def _signs(ranks: np.ndarray) -> np.ndarray:
    return np.sign(ranks[:, None] - ranks[None, :])


def _taus(sign_a: np.ndarray, sign_b: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """tau-b for each row of weights (R x n): pairs weighted by w_i w_j; the copies of one
    item drawn several times are pairs tied on both sides."""
    def pairs(matrix):  # sum over i < j of w_i w_j matrix[i, j], per replicate
        return ((weights @ matrix) * weights).sum(axis=1) / 2

    total = weights.sum(axis=1)
    n0 = total * (total - 1) / 2
    self_ties = (weights * (weights - 1) / 2).sum(axis=1)
    off_diagonal = 1 - np.eye(len(sign_a))
    ties_a = pairs((sign_a == 0) * off_diagonal) + self_ties
    ties_b = pairs((sign_b == 0) * off_diagonal) + self_ties
    with np.errstate(invalid="ignore", divide="ignore"):
        return pairs(sign_a * sign_b) / np.sqrt((n0 - ties_a) * (n0 - ties_b))


def tau_interval(a, b, *, resamples: int = RESAMPLES, seed: int = SEED) -> tuple | None:
    """A seeded bootstrap 95% interval of tau-b over the rows (resampled with replacement);
    None when no resample has a defined tau."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a), size=(resamples, len(a)))
    weights = np.stack([np.bincount(row, minlength=len(a)) for row in draws]).astype(float)
    taus = _taus(_signs(a), _signs(b), weights)
    taus = taus[~np.isnan(taus)]
    if not len(taus):
        return None
    return float(np.percentile(taus, 2.5)), float(np.percentile(taus, 97.5))


def _figures_by_config(benchmark: Benchmark) -> dict[int, dict[int, dict]]:
    """config id -> {submission id -> overall figures of its latest finished run under that
    config}, over the public submissions not hidden (the card is public)."""
    shown = Submission.objects.shown().filter(benchmark=benchmark)
    latest: dict[tuple[int, int], int] = {}
    for submission, config, run in (Submission.runs.through.objects.filter(
            submission__in=shown, scoringrun__status=ScoringRun.Status.FINISHED)
            .values_list("submission_id", "scoringrun__judge_config_id", "scoringrun_id")
            .order_by("scoringrun_id")):
        latest[(submission, config)] = run
    overall = {s.run_id: s.figures() for s in SliceResult.objects.filter(
        run_id__in=list(latest.values()), dimension=OVERALL)}
    found: dict[int, dict[int, dict]] = {}
    for (submission, config), run in latest.items():
        if run in overall:
            found.setdefault(config, {})[submission] = overall[run]
    return found


def rank_agreement(benchmark: Benchmark) -> list[dict]:
    """For each pair of judge configs that both scored two or more of the same public
    submissions: their rankings of those submissions (by the kind's ranking key) compared by
    Kendall's tau-b with a seeded bootstrap 95% interval over the submissions, and each row
    whose rank differs between the two."""
    kind = get_kind(benchmark.kind)
    by_config = _figures_by_config(benchmark)
    names = dict(JudgeConfig.objects.filter(id__in=list(by_config)).values_list("id", "name"))
    models = dict(Submission.objects.filter(benchmark=benchmark).values_list("id",
                                                                             "model__name"))
    pairs = []
    for first, second in combinations(sorted(by_config), 2):
        common = sorted(set(by_config[first]) & set(by_config[second]))
        if len(common) < 2:
            continue
        ranks = [competition_ranks([kind.rank_key(by_config[config][s]) for s in common])
                 for config in (first, second)]
        tau = kendall_tau(*ranks)
        interval = tau_interval(*ranks)
        changes = sorted(({"submission": s, "model": models[s], "rank_a": ra, "rank_b": rb}
                          for s, ra, rb in zip(common, *ranks, strict=True) if ra != rb),
                         key=lambda c: (-abs(c["rank_a"] - c["rank_b"]), c["rank_a"]))
        pairs.append({"config_a": names[first], "config_b": names[second], "n": len(common),
                      "tau": None if np.isnan(tau) else tau,
                      "tau_lo": interval[0] if interval else None,
                      "tau_hi": interval[1] if interval else None, "changes": changes})
    return pairs


def _number(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def checks_context(benchmark: Benchmark, judge_config: JudgeConfig | None = None) -> dict:
    """What templates/leaderboard/_judge_checks.html shows, formatted here: the battery's
    rows and each pair of configs' rank agreement."""
    return checks_shown(battery(benchmark, judge_config), rank_agreement(benchmark))


def checks_shown(battery_rows: list[dict], pairs: list[dict]) -> dict:
    """checks_context from rows already read (the judge card's)."""
    battery_rows = [{**row, "measured_text": _number(row["measured"]),
                     "interval_text": "[{}, {}]".format(*map(_number, row["interval"]))
                     if row["interval"] else "",
                     "band_text": f"{_number(row['expected'])} ± {_number(row['tolerance'])}",
                     "verdict_class": row["verdict"].replace(" ", "-")}
                    for row in battery_rows]
    agreement = [{**pair, "tau_text": _number(pair["tau"], 3),
                  "interval_text": f"[{_number(pair['tau_lo'], 3)}, "
                                   f"{_number(pair['tau_hi'], 3)}]"
                  if pair["tau_lo"] is not None else ""}
                 for pair in pairs]
    return {"battery": battery_rows, "agreement": agreement}
