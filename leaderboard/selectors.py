"""Reads that serve the leaderboard's pages and read API.

Boards read precomputed aggregates only (SliceResult, ReferenceFigure), never the answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.models import ReferenceFigure
from scoring import mmae
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import Submission

OVERALL = SliceResult.OVERALL
METRICS = ("IFR", "CR", "EMR")
SORTS = ("rank", "model", "organisation", "IFR", "CR", "EMR", "coverage", "date")


def benchmark_list() -> list[Benchmark]:
    """The newest version of each benchmark, for the home page."""
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    return list(latest.values())


def benchmark_current(slug: str) -> Benchmark | None:
    return Benchmark.objects.filter(slug=slug).order_by("-version").first()


def representatives(benchmark: Benchmark) -> list[Submission]:
    """Each model's representative submission: its latest public, finished one."""
    chosen: dict[int, Submission] = {}
    for submission in (Submission.objects
                       .filter(benchmark=benchmark, public=True,
                               current_run__status=ScoringRun.Status.FINISHED)
                       .select_related("model", "current_run")
                       .order_by("model_id", "-created_at")):
        chosen.setdefault(submission.model_id, submission)
    return list(chosen.values())


def bucket_choices(benchmark: Benchmark) -> dict[str, list[str]]:
    """dimension -> buckets that the board's runs have figures for."""
    runs = [s.current_run_id for s in representatives(benchmark)]
    choices: dict[str, list[str]] = {d: [] for d in mmae.DIMENSIONS}
    for dimension, bucket in (SliceResult.objects.filter(run_id__in=runs)
                              .exclude(dimension=OVERALL).values_list("dimension", "bucket")
                              .distinct().order_by("dimension", "bucket")):
        choices.setdefault(dimension, []).append(bucket)
    return choices


@dataclass(frozen=True)
class BoardQuery:
    dimension: str = OVERALL
    bucket: str = ""
    search: str = ""
    open_weights: bool | None = None
    licence: str = ""
    sort: str = "rank"
    descending: bool = False


def _interval(lo, hi):
    return None if lo is None or hi is None else (lo, hi)


def _row(submission: Submission, figures: SliceResult) -> dict:
    model = submission.model
    run = submission.current_run
    return {
        "model": model.name, "model_id": model.id, "organisation": model.organisation,
        "submission": submission.id, "link": model.link, "licence": model.licence,
        "open_weights": model.open_weights, "parameters": model.parameters,
        "IFR": figures.ifr, "CR": figures.cr, "EMR": figures.emr, "n": figures.n,
        "IFR_interval": _interval(figures.ifr_lo, figures.ifr_hi),
        "CR_interval": _interval(figures.cr_lo, figures.cr_hi),
        "EMR_interval": _interval(figures.emr_lo, figures.emr_hi),
        "coverage": submission.coverage, "partial": submission.partial,
        "judge": run.judge_model, "simulated": run.simulated,
        "date": submission.created_at,
    }


def leaderboard_rows(*, benchmark: Benchmark, query: BoardQuery = BoardQuery()) -> list[dict]:
    """Ranked rows of a board on one slice (EMR, then IFR, then CR), with rank ranges from the
    EMR intervals. Ranks are over every model; filters and sorting only choose what shows."""
    subs = {s.current_run_id: s for s in representatives(benchmark)}
    figures = SliceResult.objects.filter(run_id__in=list(subs), dimension=query.dimension,
                                         bucket=query.bucket if query.dimension != OVERALL
                                         else "")
    rows = sorted((_row(subs[f.run_id], f) for f in figures), key=mmae.rank_key)
    ranges = mmae.rank_ranges([r["EMR_interval"] for r in rows])
    previous = None
    for position, (row, (best, worst)) in enumerate(zip(rows, ranges, strict=True), start=1):
        key = mmae.rank_key(row)
        row["rank"] = previous[1] if previous and previous[0] == key else position
        row["rank_range"] = (best, worst)
        previous = (key, row["rank"])
    return _sorted(_filtered(rows, query), query)


def _filtered(rows: list[dict], query: BoardQuery) -> list[dict]:
    needle = query.search.strip().lower()
    return [
        r for r in rows
        if (not needle or needle in r["model"].lower() or needle in r["organisation"].lower())
        and (query.open_weights is None or r["open_weights"] == query.open_weights)
        and (not query.licence or r["licence"].lower() == query.licence.lower())
    ]


def _sorted(rows: list[dict], query: BoardQuery) -> list[dict]:
    if query.sort == "rank":
        return rows[::-1] if query.descending else rows
    if query.sort in METRICS or query.sort == "coverage":
        present = [r for r in rows if r[query.sort] is not None]
        absent = [r for r in rows if r[query.sort] is None]
        # Figures read best-first by default: high to low unless asked otherwise.
        return sorted(present, key=lambda r: r[query.sort], reverse=not query.descending) \
            + absent
    key = {"model": lambda r: r["model"].lower(),
           "organisation": lambda r: r["organisation"].lower(),
           "date": lambda r: r["date"]}[query.sort]
    return sorted(rows, key=key, reverse=query.descending)


def reported_rows(*, slug: str, dimension: str = OVERALL, bucket: str = "") -> list[dict]:
    """Published results for the same slice, in challenge order, never ranked."""
    figures = (ReferenceFigure.objects
               .filter(result__benchmark_slug=slug, dimension=dimension,
                       bucket=bucket if dimension != OVERALL else "")
               .select_related("result"))
    rows = [{"model": f.result.model, "note": f.result.note, "scope": f.result.scope,
             "n_samples": f.result.n_samples, "source": f.result.source,
             "IFR": f.ifr, "CR": f.cr, "EMR": f.emr} for f in figures]
    return sorted(rows, key=mmae.rank_key)


def licences(benchmark: Benchmark) -> list[str]:
    return sorted({s.model.licence for s in representatives(benchmark) if s.model.licence})
