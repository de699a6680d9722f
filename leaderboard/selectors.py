"""Reads that serve the leaderboard's pages and read API.

Boards read precomputed aggregates only (SliceResult, ReferenceFigure), never the answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import combinations

from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum
from django.http import Http404

from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring import mmae
from scoring.models import Benchmark, ItemResult, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission

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


def _published(benchmark: Benchmark):
    return Submission.objects.filter(benchmark=benchmark, public=True,
                                     current_run__status=ScoringRun.Status.FINISHED)


def representatives(benchmark: Benchmark) -> list[Submission]:
    """Each model's representative submission: its latest public, finished one."""
    chosen: dict[int, Submission] = {}
    # The runs' and submissions' large JSON fields are not needed on a board.
    for submission in (_published(benchmark)
                       .select_related("model", "current_run")
                       .defer("report", "status_times", "current_run__outputs",
                              "current_run__missing", "current_run__status_times",
                              "current_run__sampling", "current_run__base_urls")
                       .order_by("model_id", "-created_at")):
        chosen.setdefault(submission.model_id, submission)
    return list(chosen.values())


def board_stamp(benchmark: Benchmark) -> str:
    """Changes whenever what a board shows may change: a submission published or a run
    finished (its id and run), a model added, reported results reloaded."""
    published = _published(benchmark).aggregate(
        n=Count("id"), last=Max("id"), runs=Sum("current_run_id"), models=Max("model_id"))
    reported = ReferenceResult.objects.filter(benchmark_slug=benchmark.slug).aggregate(
        n=Count("id"), last=Max("loaded_at"))
    return (f"{benchmark.id}:{published['n']}:{published['last']}:{published['runs']}:"
            f"{published['models']}:{reported['n']}:{reported['last']}")


def cache_key(prefix: str, *parts) -> str:
    """A cache key safe for every backend, from a board's stamp and a query."""
    return f"{prefix}:" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def board_snapshot(benchmark: Benchmark, stamp: str) -> dict:
    """What every view of a board needs (bucket and licence choices, the top two models),
    computed once per board state."""
    key = cache_key("board-snapshot", stamp)
    snapshot = cache.get(key)
    if snapshot is None:
        top = leaderboard_rows(benchmark=benchmark)[:2]
        snapshot = {"buckets": bucket_choices(benchmark), "licences": licences(benchmark),
                    "compare_models": ",".join(str(r["model_id"]) for r in top)}
        cache.set(key, snapshot, 300)
    return snapshot


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


# --- model pages, pivots and comparisons ----------------------------------------------------


def _finished():
    return Submission.objects.filter(current_run__status=ScoringRun.Status.FINISHED)


def visible_models(user):
    """Models the user may know of: anyone those with a public finished submission; their
    owner and staff the others too (a model with only private submissions must not leak)."""
    if user.is_authenticated and user.is_staff:
        return ModelEntry.objects.all()
    rule = Q(id__in=_finished().filter(public=True).values("model_id"))
    if user.is_authenticated:
        rule |= Q(owner=user)
    return ModelEntry.objects.filter(rule)


def model_for(user, model_id) -> ModelEntry:
    """The one access-checked lookup of a model for its page: anyone else than those
    visible_models allows gets 404, as if there were no such model."""
    try:
        return visible_models(user).get(pk=model_id)
    except (ModelEntry.DoesNotExist, ValueError, TypeError):
        raise Http404("no such model") from None


def model_submissions(user, model: ModelEntry) -> list[Submission]:
    """The model's finished submissions the user may see, newest first: public ones for
    everyone, private ones for their owner and staff only (submission_for's rule)."""
    queryset = _finished().filter(model=model).select_related("benchmark", "current_run")
    if not user.is_authenticated:
        queryset = queryset.filter(public=True)
    elif not user.is_staff:
        queryset = queryset.filter(Q(public=True) | Q(owner=user))
    return list(queryset.order_by("-created_at", "-id"))


def submission_rows(submissions: list[Submission]) -> list[dict]:
    """A model page's list of submissions with their overall figures (one query)."""
    overall = {f.run_id: f for f in SliceResult.objects.filter(
        run_id__in=[s.current_run_id for s in submissions], dimension=OVERALL)}
    rows = []
    for s in submissions:
        figures = overall.get(s.current_run_id)
        rows.append({
            "submission": s.id, "benchmark": s.benchmark.title, "slug": s.benchmark.slug,
            "version": s.benchmark.version, "public": s.public, "date": s.created_at,
            "coverage": s.coverage, "partial": s.partial, "judge": s.current_run.judge_model,
            "simulated": s.current_run.simulated,
            **(_figures(figures) if figures else dict.fromkeys(
                ("IFR", "CR", "EMR", "n", "IFR_interval", "CR_interval", "EMR_interval"))),
        })
    return rows


def featured_submissions(submissions: list[Submission]) -> dict[str, Submission]:
    """benchmark slug -> the submission whose slices a model page shows: on the newest
    version, the latest public one (the board's representative), else the latest private one
    the viewer may see."""
    featured: dict[str, Submission] = {}
    for submission in sorted(submissions, key=lambda s: (-s.benchmark.version, not s.public,
                                                         -s.created_at.timestamp())):
        featured.setdefault(submission.benchmark.slug, submission)
    return featured


def _slice_order(dimension: str, bucket: str) -> tuple:
    known = (OVERALL, *mmae.DIMENSIONS)
    return (known.index(dimension) if dimension in known else len(known), dimension, bucket)


def _figures(figures: SliceResult) -> dict:
    return {"IFR": figures.ifr, "CR": figures.cr, "EMR": figures.emr, "n": figures.n,
            "IFR_interval": _interval(figures.ifr_lo, figures.ifr_hi),
            "CR_interval": _interval(figures.cr_lo, figures.cr_hi),
            "EMR_interval": _interval(figures.emr_lo, figures.emr_hi)}


def slice_rows(run_id: int) -> list[dict]:
    """Every slice of a run (overall first, then the taxonomy's dimensions in SPEC order, buckets
    by name), with n, IFR, CR, EMR and their intervals."""
    rows = [{"dimension": f.dimension, "bucket": f.bucket, **_figures(f)}
            for f in SliceResult.objects.filter(run_id=run_id)]
    return sorted(rows, key=lambda r: _slice_order(r["dimension"], r["bucket"]))


def _labels(models: list[ModelEntry]) -> dict[int, str]:
    """Display names, with the id added where two models share a name (axes key on them)."""
    names = [m.name for m in models]
    return {m.id: m.name if names.count(m.name) == 1 else f"{m.name} (#{m.id})" for m in models}


def _ranks(keys: list[tuple]) -> list[int]:
    """Competition ranks of keys already in order: ties share the first position."""
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if ranks and keys[position - 2] == key else position)
    return ranks


def pivot(*, benchmark: Benchmark, dimension: str, metric: str) -> dict:
    """Models (in board order) x buckets of one dimension, for one metric. Reads the
    representatives' slices of that dimension and their overall figures in one query."""
    subs = {s.current_run_id: s for s in representatives(benchmark)}
    cells: dict[int, dict[str, SliceResult]] = {run: {} for run in subs}
    overall: dict[int, SliceResult] = {}
    for figures in SliceResult.objects.filter(run_id__in=list(subs)).filter(
            Q(dimension=dimension) | Q(dimension=OVERALL)):
        if figures.dimension == OVERALL:
            overall[figures.run_id] = figures
        else:
            cells[figures.run_id][figures.bucket] = figures
    buckets = sorted({b for by_bucket in cells.values() for b in by_bucket})
    order = sorted(subs, key=lambda run: mmae.rank_key(
        _figures(overall[run]) if run in overall else {}))
    labels = _labels([subs[run].model for run in order])
    ranks = _ranks([mmae.rank_key(_figures(overall[run]) if run in overall else {})
                    for run in order])
    field = metric.lower()
    rows = []
    for run, rank in zip(order, ranks, strict=True):
        submission = subs[run]
        rows.append({
            "rank": rank, "model": labels[submission.model_id],
            "model_id": submission.model_id, "submission": submission.id,
            "cells": [getattr(cells[run][b], field) if b in cells[run] else None
                      for b in buckets],
            "n": [cells[run][b].n if b in cells[run] else None for b in buckets],
        })
    return {"dimension": dimension, "metric": metric, "buckets": buckets, "rows": rows}


def board_models(benchmark: Benchmark) -> dict[int, Submission]:
    """model id -> its representative on the board, for choosing models to compare."""
    return {s.model_id: s for s in representatives(benchmark)}


def compared_models(submissions: list[Submission]) -> list[dict]:
    """The columns of a comparison, in the order asked for."""
    labels = _labels([s.model for s in submissions])
    return [{"model": labels[s.model_id], "model_id": s.model_id, "submission": s.id,
             "organisation": s.model.organisation} for s in submissions]


def compare_rows(submissions: list[Submission]) -> list[dict]:
    """The slices of several runs side by side: one row per (dimension, bucket), one cell per
    submission (None where a run has no figures for the slice), the leaders of each metric
    marked. Reads all the runs' slices in one query."""
    runs = [s.current_run_id for s in submissions]
    by_slice: dict[tuple[str, str], dict[int, SliceResult]] = {}
    for figures in SliceResult.objects.filter(run_id__in=runs):
        by_slice.setdefault((figures.dimension, figures.bucket), {})[figures.run_id] = figures
    rows = []
    for dimension, bucket in sorted(by_slice, key=lambda k: _slice_order(*k)):
        found = by_slice[(dimension, bucket)]
        cells = [_figures(found[run]) if run in found else None for run in runs]
        for metric in METRICS:
            values = [c[metric] for c in cells if c and c[metric] is not None]
            # Mark a leader only where the figures differ: all equal leads nobody.
            best = max(values) if len(set(values)) > 1 else None
            for cell in cells:
                if cell is not None:
                    cell[f"{metric}_best"] = best is not None and cell[metric] == best
        rows.append({"dimension": dimension, "bucket": bucket,
                     "n": next(c["n"] for c in cells if c is not None), "cells": cells})
    return rows


def _outcome(mine, theirs) -> str:
    return "wins" if mine > theirs else "losses" if mine < theirs else "ties"


def pairwise(submissions: list[Submission]) -> list[dict]:
    """Per-sample wins, losses and ties of each pair (A, B) of submissions over the samples both
    runs scored: on EM, and on the per-sample mean rubric score. Counts are A's view."""
    runs = [s.current_run_id for s in submissions]
    per_run: dict[int, dict[int, tuple[int, float | None]]] = {run: {} for run in runs}
    for run, item, em, scores in (ItemResult.objects.filter(run_id__in=runs)
                                  .values_list("run_id", "item_id", "em", "rubric_scores")):
        per_run[run][item] = (em, sum(scores) / len(scores) if scores else None)
    labels = _labels([s.model for s in submissions])
    pairs = []
    for a, b in combinations(submissions, 2):
        mine, theirs = per_run[a.current_run_id], per_run[b.current_run_id]
        common = mine.keys() & theirs.keys()
        em = dict.fromkeys(("wins", "losses", "ties"), 0)
        rubric = dict.fromkeys(("wins", "losses", "ties"), 0)
        for item in common:
            em[_outcome(mine[item][0], theirs[item][0])] += 1
            if mine[item][1] is not None and theirs[item][1] is not None:
                rubric[_outcome(mine[item][1], theirs[item][1])] += 1
        pairs.append({"a": labels[a.model_id], "a_id": a.model_id, "b": labels[b.model_id],
                      "b_id": b.model_id, "n": len(common), "EM": em, "rubric": rubric})
    return pairs
