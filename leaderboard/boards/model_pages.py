"""Reads of the model pages and the pivot: which models a user may see (the one access-checked
lookup of a model), a model's submissions and their slices, and a board pivoted on a dimension."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Q
from django.http import Http404

from leaderboard.boards import lookups, ranking  # noqa: F401 - lookups registers field__any
from leaderboard.boards.board_pages import standing
from leaderboard.boards.selectors import metric_figures
from leaderboard.boards.state import (
    OVERALL,
    benchmark_current,
    representatives,
)
from scoring import visibility
from scoring.kinds import Kind, get_kind
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.attempts import attempt_dates, model_attempts
from submissions.models import ModelEntry, Submission


def visible_models(user):
    """Models the user may know of: those with a submission the user may see, and their own
    (a model with only private submissions must not leak)."""
    seen = Q(id__in=Submission.objects.visible_to(user).values("model_id"))
    return ModelEntry.objects.filter(seen | Q(owner=user) if user.is_authenticated else seen)


def model_for(user, model_id) -> ModelEntry:
    """The one access-checked lookup of a model for its page: anyone else than those
    visible_models allows gets 404, as if there were no such model."""
    try:
        return visible_models(user).get(pk=model_id)
    except (ModelEntry.DoesNotExist, ValueError, TypeError):
        raise Http404("no such model") from None


def model_submissions(user, model: ModelEntry) -> list[Submission]:
    """The model's scored submissions the user may see, newest first."""
    return list(Submission.objects.visible_to(user)
                .filter(model=model, current_run__status=ScoringRun.Status.FINISHED)
                .select_related("benchmark", "current_run").order_by("-created_at", "-id"))


def disclosed(user, submissions: list[Submission]) -> list[Submission]:
    """The submissions whose figures `user` may learn: on a hidden-rubric benchmark, none
    below OVERALL (scoring.visibility)."""
    return [s for s in submissions
            if visibility.disclosure(s.benchmark, user) >= visibility.Disclosure.OVERALL]


def submission_rows(submissions: list[Submission]) -> list[dict]:
    """A model page's list of submissions with their overall figures (one query); each row
    has its kind's metrics and `labelled` cells (label, value, interval, is a count) for mixed
    tables."""
    overall = {f.run_id: f for f in SliceResult.objects.filter(
        run_id__in=[s.current_run_id for s in submissions], dimension=OVERALL)}
    rows = []
    for s in submissions:
        figures = overall.get(s.current_run_id)
        kind = get_kind(s.benchmark.kind)
        values = metric_figures(figures, kind) if figures else {"n": None, **{
            k: None for m in kind.metric_keys for k in (m, f"{m}_interval")}}
        rows.append({
            "submission": s.id, "benchmark": s.benchmark.title, "slug": s.benchmark.slug,
            "version": s.benchmark.version, "public": s.public, "date": s.created_at,
            "hidden": s.hidden, "flag": s.flag_reason,
            "coverage": s.coverage, "partial": s.partial, "judge": s.current_run.judge_name,
            "simulated": s.current_run.simulated, "kind": kind.name, **values,
            "labelled": [(m.label, *m.cell(values[m.key], values[f"{m.key}_interval"])[:2])
                         for m in kind.metrics],
        })
    return rows


def featured_submissions(submissions: list[Submission]) -> dict[str, Submission]:
    """benchmark slug -> the submission whose slices a model page shows: on the newest
    version, the board's representative (the chosen public one, else the latest), else the
    latest other one the viewer may see."""
    featured: dict[str, Submission] = {}
    for submission in sorted(submissions, key=lambda s: (-s.benchmark.version,
                                                         not (s.public and not s.hidden
                                                              and s.publish_at is None),
                                                         not s.representative,
                                                         -s.created_at.timestamp())):
        featured.setdefault(submission.benchmark.slug, submission)
    return featured


BOARD_PAGE_ROWS = 100  # the rows of a board page (leaderboard.pages.views pages by it)


def board_standings(featured: dict[str, Submission]) -> list[dict]:
    """Where the model stands on each board it is on: its rank, its rank range (None until
    the board has them), how many rows are ranked, and the board page that holds its row.
    A featured submission that is not the board's row of the model (private, hidden, on an
    older version) stands nowhere."""
    standings = []
    for slug, submission in featured.items():
        current = benchmark_current(slug)
        if current is None or current.id != submission.benchmark_id:
            continue
        found = standing(current, submission.id)
        if found is None:
            continue
        standings.append({"slug": slug, "title": current.title, "rank": found["rank"],
                          "range": found["range"], "of": found["of"],
                          "page": found["position"] // BOARD_PAGE_ROWS + 1})
    return standings


ATTEMPT_DAYS_LISTED = 31  # past this many distinct days, attempts are counted per month


def dated_attempts(dates: list[datetime]) -> list[tuple[str, int]]:
    """Upload dates as (day, attempts that day), oldest first; an author with attempts on
    more than ATTEMPT_DAYS_LISTED days gets them per month instead (a list of 10,000 dates
    made the page 140 KB)."""
    days = Counter(f"{d:%Y-%m-%d}" for d in dates)
    if len(days) <= ATTEMPT_DAYS_LISTED:
        return sorted(days.items())
    months = Counter(f"{d:%Y-%m}" for d in dates)
    return sorted(months.items())


def attempt_rows(entry: ModelEntry, featured: dict[str, Submission]) -> list[dict]:
    """For each benchmark the page shows, when the model's author uploaded each of their
    scored attempts on it (public and private, deleted ones included: README, "Attempts
    disclosed"), oldest first."""
    rows = []
    for slug, submission in featured.items():
        if entry.pseudonym:  # its own attempts, undated: the author's would name them
            own = model_attempts(entry.id, slug)
            rows.append({"slug": slug, "title": submission.benchmark.title, "count": own,
                         "dates": [], "own": own})
            continue
        dates = attempt_dates(entry.owner_id, slug)
        rows.append({"slug": slug, "title": submission.benchmark.title, "count": len(dates),
                     "dates": dated_attempts(dates),
                     "own": model_attempts(entry.id, slug)})
    return rows


def slice_order(dimension: str, bucket: str, kind: Kind) -> tuple:
    known = (OVERALL, *kind.dimension_keys)
    return (known.index(dimension) if dimension in known else len(known), dimension,
            kind.bucket_key(dimension, bucket))


def slice_rows(run_id: int, kind: Kind) -> list[dict]:
    """Every slice of a run (overall first, then the kind's dimensions in order, buckets in
    the kind's order), with n, the kind's metrics and their intervals."""
    rows = [{"dimension": f.dimension, "dimension_label": kind.dimension_label(f.dimension),
             "bucket": f.bucket, **metric_figures(f, kind)}
            for f in SliceResult.objects.filter(run_id=run_id)]
    return sorted(rows, key=lambda r: slice_order(r["dimension"], r["bucket"], kind))


def model_labels(models: list[ModelEntry]) -> dict[int, str]:
    """Display names, with the id added where two models share a name (axes key on them)."""
    names = Counter(m.name for m in models)  # counted once: list.count per model was quadratic
    return {m.id: m.name if names[m.name] == 1 else f"{m.name} (#{m.id})" for m in models}


def _ranks(keys: list[tuple]) -> list[int]:
    """Competition ranks of keys already in order: ties share the first position."""
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if ranks and keys[position - 2] == key else position)
    return ranks


def pivot(*, benchmark: Benchmark, dimension: str, metric: str) -> dict:
    """Models (in board order) x buckets of one dimension, for one metric. Reads the
    representatives' slices of that dimension and their overall figures in one query."""
    kind = get_kind(benchmark.kind)
    subs = {s.current_run_id: s for s in representatives(benchmark)}
    cells: dict[int, dict[str, SliceResult]] = {run: {} for run in subs}
    overall: dict[int, SliceResult] = {}
    for figures in SliceResult.objects.filter(run_id__in=list(subs)).filter(
            Q(dimension=dimension) | Q(dimension=OVERALL)):
        if figures.dimension == OVERALL:
            overall[figures.run_id] = figures
        else:
            cells[figures.run_id][figures.bucket] = figures
    buckets = sorted({b for by_bucket in cells.values() for b in by_bucket},
                     key=lambda b: kind.bucket_key(dimension, b))
    def key(run):
        return kind.rank_key(overall[run].figures() if run in overall else {})

    order = sorted(subs, key=key)
    labels = model_labels([subs[run].model for run in order])
    ranks = _ranks([key(run) for run in order])
    rows = []
    for run, rank in zip(order, ranks, strict=True):
        submission = subs[run]
        rows.append({
            "rank": rank, "model": labels[submission.model_id],
            "model_id": submission.model_id, "submission": submission.id,
            "cells": [cells[run][b].figures().get(metric) if b in cells[run] else None
                      for b in buckets],
            "n": [cells[run][b].n if b in cells[run] else None for b in buckets],
        })
    return {"dimension": dimension, "metric": metric, "buckets": buckets, "rows": rows}
