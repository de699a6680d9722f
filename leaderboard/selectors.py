"""Reads that serve the leaderboard's pages and read API.

Boards read precomputed aggregates only (SliceResult, ReferenceFigure), never the answers.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from itertools import combinations

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Count, Max, Q, Sum
from django.http import Http404

from leaderboard import lookups, ranking  # noqa: F401 - lookups registers field__any
from leaderboard.models import ReferenceFigure
from scoring.kinds import Kind, get_kind
from scoring.models import Benchmark, ItemResult, JudgeConfig, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission

OVERALL = SliceResult.OVERALL
# Log-ins whose provider vouches for the account ("verified" beside its name on the board).
VERIFYING_PROVIDERS = ("github", "huggingface")
SORTS = ("rank", "model", "organisation", "coverage", "date")  # and the kind's metrics


def benchmark_list() -> list[Benchmark]:
    """The newest version of each benchmark, for the home page."""
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    return list(latest.values())


def benchmark_current(slug: str) -> Benchmark | None:
    return Benchmark.objects.filter(slug=slug).order_by("-version").first()


def _published(benchmark: Benchmark):
    """Public submissions whose run is finished under the benchmark's current judge config
    (runs under older configs stay viewable on each submission's page), unless staff have
    hidden them."""
    return Submission.objects.published().filter(
        benchmark=benchmark, current_run__judge_config_id=benchmark.judge_config_id)


@dataclass(frozen=True)
class ShownModel:
    id: int
    name: str
    organisation: str
    link: str
    licence: str
    open_weights: bool
    parameters: str
    submitted_by: str = ""  # the owner's username
    verified: bool = False  # the owner logged in through GitHub or Hugging Face


@dataclass(frozen=True)
class ShownJudgeConfig:
    name: str


@dataclass(frozen=True)
class ShownRun:
    id: int
    judge_model: str
    simulated: bool
    judge_config: ShownJudgeConfig
    refused_queries: int = 0  # queries the judge refused (each a wrong vote)

    judge_name = ScoringRun.judge_name


@dataclass(frozen=True)
class Shown:
    """A model's representative submission on a board, with what the board shows of its model
    and run: read as plain values, since a board holds thousands (model instances would cost
    more than the queries)."""

    id: int
    model_id: int
    current_run_id: int
    coverage: float | None
    created_at: object
    flag_reason: str
    representative: bool
    model: ShownModel
    current_run: ShownRun

    partial = Submission.partial


# How long a process keeps what it read of one board state: a new state reads afresh at once;
# the age bounds what a change made without board_changed (the admin) leaves stale.
KEPT_SECONDS = 300


class PerState:
    """One value per benchmark, kept by this process for one board state (every view of a
    board needs it, several times on a cold request, on every request on a warm one)."""

    def __init__(self):
        self.kept: dict[int, tuple] = {}

    def get(self, benchmark_id: int, state):
        found = self.kept.get(benchmark_id)
        if found is not None and found[0] == state \
                and time.monotonic() - found[1] < KEPT_SECONDS:
            return found[2]
        return None

    def put(self, benchmark_id: int, state, value):
        self.kept[benchmark_id] = (state, time.monotonic(), value)
        return value


_representatives = PerState()
_snapshots = PerState()


def representatives(benchmark: Benchmark) -> list[Shown]:
    """Each model's representative submission: the one its author chose, else its latest
    public, finished one (under the benchmark's current judge config)."""
    state = (benchmark.board_version, benchmark.judge_config_id)
    found = _representatives.get(benchmark.id, state)
    if found is None:
        found = _representatives.put(benchmark.id, state, _read_representatives(benchmark))
    return found


def _read_representatives(benchmark: Benchmark) -> list[Shown]:
    # Queries of one table each, joined here: their plans stay good on a database without
    # planner statistics (a join of thousands of rows there became a nested loop of seconds).
    config = JudgeConfig.objects.filter(id=benchmark.judge_config_id).first()
    if config is None:
        return []
    runs = {pk: ShownRun(pk, judge_model, simulated, ShownJudgeConfig(config.name), refused)
            for pk, judge_model, simulated, refused in ScoringRun.objects.filter(
                benchmark=benchmark, status=ScoringRun.Status.FINISHED,
                judge_config=config).values_list("id", "judge_model", "simulated",
                                                 "refused_queries")}
    candidates = sorted(
        (s for s in Submission.objects.filter(benchmark=benchmark, public=True, hidden=False,
                                              current_run__isnull=False)
         .values_list("id", "model_id", "current_run_id", "coverage", "created_at",
                      "flag_reason", "representative") if s[2] in runs),
        key=lambda s: (s[1], not s[6], -s[4].timestamp(), -s[0]))
    chosen: dict[int, tuple] = {}
    for submission in candidates:
        chosen.setdefault(submission[1], submission)
    found = list(ModelEntry.objects.filter(id__any=list(chosen)).values_list(
        "id", "name", "organisation", "link", "licence", "open_weights", "parameters",
        "owner_id"))
    owners = {m[-1] for m in found}
    names = dict(get_user_model().objects.filter(id__any=list(owners))
                 .values_list("id", "username"))
    verified = set(SocialAccount.objects.filter(user_id__any=list(owners),
                                                provider__in=VERIFYING_PROVIDERS)
                   .values_list("user_id", flat=True))
    models = {m[0]: ShownModel(*m[:-1], submitted_by=names[m[-1]], verified=m[-1] in verified)
              for m in found}
    return [Shown(*s, model=models[s[1]], current_run=runs[s[2]]) for s in chosen.values()]


def board_stamp(benchmark: Benchmark) -> str:
    """The board's state, read from its benchmark's row (scoring.boards.board_changed raises
    the version whenever what the board shows may change): no query of its own."""
    return f"{benchmark.id}:{benchmark.board_version}"


def boards_state() -> tuple[str, object]:
    """The state of every board at once (for pages that gather figures across boards, such as
    a model's), and when the last of them changed: one query over the benchmarks."""
    found = Benchmark.objects.aggregate(versions=Sum("board_version"), n=Count("id"),
                                        changed=Max("board_changed_at"))
    return f"all:{found['n']}:{found['versions']}", found["changed"]


def cache_key(prefix: str, *parts) -> str:
    """A cache key safe for every backend, from a board's stamp and a query."""
    return f"{prefix}:" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def board_snapshot(benchmark: Benchmark, stamp: str) -> dict:
    """What every view of a board needs (bucket and licence choices, the top two models, the
    calibration baselines), computed once per board state."""
    snapshot = _snapshots.get(benchmark.id, stamp)
    if snapshot is not None:
        return snapshot
    key = cache_key("board-snapshot", stamp)
    snapshot = cache.get(key)
    if snapshot is None:
        top = leaderboard_rows(benchmark=benchmark)[:2]
        snapshot = {"buckets": bucket_choices(benchmark), "licences": licences(benchmark),
                    "compare_models": ",".join(str(r["model_id"]) for r in top),
                    "diagnostics": diagnostic_rows(benchmark)}
        cache.set(key, snapshot, 300)
    return _snapshots.put(benchmark.id, stamp, snapshot)


def bucket_choices(benchmark: Benchmark) -> dict[str, list[str]]:
    """dimension -> buckets that the board's runs or reported results have figures for."""
    runs = [s.current_run_id for s in representatives(benchmark)]
    kind = get_kind(benchmark.kind)
    choices: dict[str, list[str]] = {d: [] for d in kind.dimension_keys}
    found = set(SliceResult.objects.filter(run_id__any=runs).exclude(dimension=OVERALL)
                .values_list("dimension", "bucket").distinct())
    # Reported results have slices of their own, shown even before anything is scored.
    found |= set(ReferenceFigure.objects.filter(result__benchmark_slug=benchmark.slug)
                 .exclude(dimension=OVERALL).values_list("dimension", "bucket").distinct())
    for dimension, bucket in sorted(found, key=lambda f: (f[0], kind.bucket_key(*f))):
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
    references: bool = True  # reported and diagnostic rows shown inline
    judge: bool = False  # the judge's figures (vote agreement, position bias) as columns


def metric_figures(figures: SliceResult, kind: Kind) -> dict:
    """The kind's metrics of a slice and their intervals (None where there are none)."""
    values = figures.figures()
    row = {"n": figures.n}
    for metric in kind.metric_keys:
        row[metric] = values.get(metric)
        row[f"{metric}_interval"] = figures.interval(metric)
    return row


def _row(submission: Submission, figures: SliceResult, kind: Kind) -> dict:
    model = submission.model
    run = submission.current_run
    return {
        "model": model.name, "model_id": model.id, "organisation": model.organisation,
        "submission": submission.id, "link": model.link, "licence": model.licence,
        "open_weights": model.open_weights, "parameters": model.parameters,
        "submitted_by": model.submitted_by, "verified": model.verified,
        **metric_figures(figures, kind),
        **{m.key: figures.values.get(m.key) for m in kind.judge_figures},
        "coverage": submission.coverage, "partial": submission.partial,
        "judge": run.judge_name, "judge_config": run.judge_config.name,
        "simulated": run.simulated, "refused": run.refused_queries,
        "date": submission.created_at, "flag": submission.flag_reason,
    }


def leaderboard_rows(*, benchmark: Benchmark, query: BoardQuery = BoardQuery()) -> list[dict]:
    """Ranked rows of a board on one slice: by the kind's ranking key (MMAE: EMR, then IFR,
    then CR) or, sorted by a metric, by that metric then the ranking key; figures compared
    exactly, equal keys sharing a rank. Rank ranges are the paired bootstrap's (computed
    whenever the board changes: leaderboard.ranking), None until computed. Ranks are over
    every model; filters only choose what shows."""
    kind = get_kind(benchmark.kind)
    bucket = query.bucket if query.dimension != OVERALL else ""
    metric = _ranked_metric(kind, query)
    ranges = ranking.stored(benchmark, query.dimension, bucket).get(metric or ranking.RANK, {})
    rows = []
    for row in _ranked(benchmark, kind, query.dimension, bucket, metric):
        found = ranges.get(str(row["submission"]))
        rows.append({**row, "rank_range": tuple(found) if found else None})
    rows = _filtered(rows, query)
    if metric is not None or query.sort == "rank":  # in rank order already
        return rows[::-1] if query.descending else rows
    return _sorted(rows, query)


# The last slice ranked by this process, for its board state: a cold board page ranks the
# same slice twice (its snapshot and its body), and a board holds thousands of rows.
_last_ranked: tuple = (None, 0.0, [])


def _ranked(benchmark: Benchmark, kind: Kind, dimension: str, bucket: str,
            metric: str | None) -> list[dict]:
    """The representatives' rows on one slice, with their ranks, in rank order."""
    global _last_ranked
    key = (benchmark.id, benchmark.board_version, benchmark.judge_config_id, dimension, bucket,
           metric)
    last_key, made, last_rows = _last_ranked
    if last_key == key and time.monotonic() - made < KEPT_SECONDS:
        return last_rows
    subs = {s.current_run_id: s for s in representatives(benchmark)}
    rows = [_row(subs[f.run_id], f, kind) for f in SliceResult.objects.filter(
        run_id__any=list(subs), dimension=dimension, bucket=bucket)]
    rank_key = _rank_key(kind, metric)
    keys = [rank_key(r) for r in rows]
    for row, rank in zip(rows, ranking.competition_ranks(keys), strict=True):
        row["rank"] = rank
    order = sorted(range(len(rows)), key=lambda i: (keys[i], rows[i]["model"].lower()))
    rows = [rows[i] for i in order]
    _last_ranked = (key, time.monotonic(), rows)
    return rows


def _ranked_metric(kind: Kind, query: BoardQuery) -> str | None:
    """The metric a sort re-ranks on (None: the ranking itself)."""
    if query.sort in kind.metric_keys and not kind.metric(query.sort).count:
        return query.sort
    return None


def _rank_key(kind: Kind, metric: str | None):
    if metric is None:
        return kind.rank_key
    return lambda figures: kind.sort_key(metric, figures)


def _filtered(rows: list[dict], query: BoardQuery) -> list[dict]:
    needle = query.search.strip().lower()
    return [
        r for r in rows
        if (not needle or needle in r["model"].lower() or needle in r["organisation"].lower())
        and (query.open_weights is None or r["open_weights"] == query.open_weights)
        and (not query.licence or r["licence"].lower() == query.licence.lower())
    ]


def _sorted(rows: list[dict], query: BoardQuery) -> list[dict]:
    """Rows sorted by a column that does not rank them (names, dates, coverage, counts)."""
    if query.sort not in ("model", "organisation", "date"):  # a count, or coverage
        present = [r for r in rows if r.get(query.sort) is not None]
        absent = [r for r in rows if r.get(query.sort) is None]
        # Figures read best-first by default: high to low unless asked otherwise.
        return sorted(present, key=lambda r: r[query.sort], reverse=not query.descending) \
            + absent
    key = {"model": lambda r: r["model"].lower(),
           "organisation": lambda r: r["organisation"].lower(),
           "date": lambda r: r["date"]}[query.sort]
    return sorted(rows, key=key, reverse=query.descending)


def reported_rows(*, slug: str, kind: Kind, dimension: str = OVERALL,
                  bucket: str = "") -> list[dict]:
    """Published results for the same slice, in the kind's order, never ranked."""
    figures = (ReferenceFigure.objects
               .filter(result__benchmark_slug=slug, dimension=dimension,
                       bucket=bucket if dimension != OVERALL else "")
               .select_related("result"))
    rows = []
    for f in figures:
        values = f.figures()
        rows.append({"model": f.result.model, "note": f.result.note, "scope": f.result.scope,
                     "n_samples": f.result.n_samples, "source": f.result.source,
                     **{m: values.get(m) for m in kind.metric_keys},
                     "cells": [values.get(m) for m in kind.metric_keys]})
    return sorted(rows, key=lambda r: kind.rank_key(_placed(kind, r)))


def _placed(kind: Kind, figures: dict) -> dict:
    """A reference row's figures as a ranking key reads them: a ranking metric it lacks
    (published tables give the official, answered-only figure) takes the published one."""
    return {**figures, **{metric: figures.get(published)
                          for metric, published in kind.published.items()
                          if figures.get(metric) is None}}


def reference_rows(*, benchmark: Benchmark, kind: Kind, dimension: str = OVERALL,
                   bucket: str = "") -> list[dict]:
    """The rows a board shows inline without a rank: published results (reported) and the
    calibration baselines scored here (diagnostic), for the slice."""
    rows = []
    for r in reported_rows(slug=benchmark.slug, kind=kind, dimension=dimension, bucket=bucket):
        rows.append({**r, "reference": "reported", "date": None, "judge": "",
                     "judge_config": "", "simulated": False,
                     **{f"{m}_interval": None for m in kind.metric_keys}})
    bucket = bucket if dimension != OVERALL else ""
    for run, figures in _baseline_slices(benchmark, dimension, bucket):
        rows.append({"model": run.label, "reference": "diagnostic", "note": "",
                     "scope": f"scored here by {run.judge_name}", "source": "",
                     "n_samples": figures.n, **metric_figures(figures, kind),
                     "date": None, "judge": run.judge_name,
                     "judge_config": run.judge_config.name, "simulated": run.simulated})
    for row in rows:
        row.update(rank=None, rank_range=None, coverage=None, organisation="",
                   open_weights=None, licence="")
    return rows


def board_table(*, benchmark: Benchmark, query: BoardQuery = BoardQuery()) -> list[dict]:
    """What a board page lists on one slice: the ranked rows, and (unless the visitor hides
    them) reported and diagnostic rows where their figures place them, unranked. A reference
    row sorts after ranked rows it ties with; filters on licence or weights leave them out."""
    rows = leaderboard_rows(benchmark=benchmark, query=query)
    if not query.references or query.open_weights is not None or query.licence:
        return rows
    kind = get_kind(benchmark.kind)
    needle = query.search.strip().lower()
    references = [r for r in reference_rows(benchmark=benchmark, kind=kind,
                                            dimension=query.dimension, bucket=query.bucket)
                  if not needle or needle in r["model"].lower()]
    metric = _ranked_metric(kind, query)
    if metric is None and query.sort != "rank":
        return _sorted(rows + references, query)
    key = _rank_key(kind, metric)
    merged = sorted([(key(r), 0, i, r) for i, r in enumerate(rows)]
                    + [(key(_placed(kind, r)), 1, i, r) for i, r in enumerate(references)],
                    key=lambda entry: entry[:3])
    merged = [r for *_, r in merged]
    return merged[::-1] if query.descending else merged


def _baseline_slices(benchmark: Benchmark, dimension: str, bucket: str):
    """(run, its slice) of the latest finished run of each calibration baseline under the
    benchmark's current judge config."""
    latest = _latest_baselines(benchmark)
    found = {s.run_id: s for s in SliceResult.objects.filter(
        run__in=latest.values(), dimension=dimension, bucket=bucket)}
    return [(run, found[run.id]) for run in latest.values() if run.id in found]


def _latest_baselines(benchmark: Benchmark) -> dict[str, ScoringRun]:
    latest: dict[str, ScoringRun] = {}
    for run in (ScoringRun.objects.filter(
            benchmark=benchmark, purpose=ScoringRun.Purpose.BASELINE,
            status=ScoringRun.Status.FINISHED, judge_config_id=benchmark.judge_config_id)
            .select_related("judge_config").defer("outputs", "missing", "digests")
            .order_by("label", "-id")):
        latest.setdefault(run.label, run)
    return latest


def licences(benchmark: Benchmark) -> list[str]:
    return sorted({s.model.licence for s in representatives(benchmark) if s.model.licence})


# --- model pages, pivots and comparisons ----------------------------------------------------


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
                                                         not (s.public and not s.hidden),
                                                         not s.representative,
                                                         -s.created_at.timestamp())):
        featured.setdefault(submission.benchmark.slug, submission)
    return featured


def _slice_order(dimension: str, bucket: str, kind: Kind) -> tuple:
    known = (OVERALL, *kind.dimension_keys)
    return (known.index(dimension) if dimension in known else len(known), dimension,
            kind.bucket_key(dimension, bucket))


def slice_rows(run_id: int, kind: Kind) -> list[dict]:
    """Every slice of a run (overall first, then the kind's dimensions in order, buckets in
    the kind's order), with n, the kind's metrics and their intervals."""
    rows = [{"dimension": f.dimension, "dimension_label": kind.dimension_label(f.dimension),
             "bucket": f.bucket, **metric_figures(f, kind)}
            for f in SliceResult.objects.filter(run_id=run_id)]
    return sorted(rows, key=lambda r: _slice_order(r["dimension"], r["bucket"], kind))


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
    labels = _labels([subs[run].model for run in order])
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


def board_models(benchmark: Benchmark) -> dict[int, Submission]:
    """model id -> its representative on the board, for choosing models to compare."""
    return {s.model_id: s for s in representatives(benchmark)}


def compared_models(submissions: list[Submission]) -> list[dict]:
    """The columns of a comparison, in the order asked for."""
    labels = _labels([s.model for s in submissions])
    return [{"model": labels[s.model_id], "model_id": s.model_id, "submission": s.id,
             "organisation": s.model.organisation} for s in submissions]


def compare_rows(submissions: list[Submission], kind: Kind) -> list[dict]:
    """The slices of several runs side by side: one row per (dimension, bucket), one cell per
    submission (None where a run has no figures for the slice), the leaders of each metric
    marked. Reads all the runs' slices in one query."""
    runs = [s.current_run_id for s in submissions]
    by_slice: dict[tuple[str, str], dict[int, SliceResult]] = {}
    for figures in SliceResult.objects.filter(run_id__in=runs):
        by_slice.setdefault((figures.dimension, figures.bucket), {})[figures.run_id] = figures
    rows = []
    for dimension, bucket in sorted(by_slice, key=lambda k: _slice_order(*k, kind)):
        found = by_slice[(dimension, bucket)]
        cells = [metric_figures(found[run], kind) if run in found else None for run in runs]
        for metric in kind.metric_keys:
            values = [c[metric] for c in cells if c and c[metric] is not None]
            # Mark a leader only where the figures differ: all equal leads nobody. Counts
            # (failures) lead nobody either.
            best = max(values) if len(set(values)) > 1 and metric not in kind.counts \
                else None
            for cell in cells:
                if cell is not None:
                    cell[f"{metric}_best"] = best is not None and cell[metric] == best
        for cell in cells:
            if cell is not None:  # display order, for templates
                cell["cells"] = [(m.format(cell[m.key]), cell[f"{m.key}_best"])
                                 for m in kind.metrics]
        rows.append({"dimension": dimension, "dimension_label": kind.dimension_label(dimension),
                     "bucket": bucket, "n": next(c["n"] for c in cells if c is not None),
                     "cells": cells})
    return rows


def _outcome(mine, theirs) -> str:
    return "wins" if mine > theirs else "losses" if mine < theirs else "ties"


def pairwise(submissions: list[Submission]) -> list[dict]:
    """Per-sample wins, losses and ties of each pair (A, B) of submissions over the samples both
    runs scored: on EM, and on the per-sample mean rubric score. Counts are A's view."""
    runs = [s.current_run_id for s in submissions]
    per_run: dict[int, dict[int, tuple[int, float | None]]] = {run: {} for run in runs}
    for run, item, passed, score in (ItemResult.objects.filter(run_id__in=runs)
                                     .values_list("run_id", "item_id", "passed", "score")):
        per_run[run][item] = (passed, score)
    labels = _labels([s.model for s in submissions])
    pairs = []
    for a, b in combinations(submissions, 2):
        mine, theirs = per_run[a.current_run_id], per_run[b.current_run_id]
        common = mine.keys() & theirs.keys()
        em = dict.fromkeys(("wins", "losses", "ties"), 0)
        rubric = dict.fromkeys(("wins", "losses", "ties"), 0)
        for item in common:
            if mine[item][0] is not None and theirs[item][0] is not None:
                em[_outcome(mine[item][0], theirs[item][0])] += 1
            if mine[item][1] is not None and theirs[item][1] is not None:
                rubric[_outcome(mine[item][1], theirs[item][1])] += 1
        pairs.append({"a": labels[a.model_id], "a_id": a.model_id, "b": labels[b.model_id],
                      "b_id": b.model_id, "n": len(common), "EM": em, "rubric": rubric})
    return pairs


def diagnostic_rows(benchmark: Benchmark) -> list[dict]:
    """The calibration baselines (Identity, Noise) scored under the benchmark's current judge
    config, latest finished run of each, beside the paper's row of the same name."""
    latest = _latest_baselines(benchmark)
    if not latest:
        return []
    ours = {s.run_id: s.figures() for s in SliceResult.objects.filter(
        run__in=latest.values(), dimension=OVERALL)}
    paper = {f.result.model: f.figures() for f in ReferenceFigure.objects.filter(
        result__benchmark_slug=benchmark.slug, result__model__in=list(latest),
        dimension=OVERALL, bucket="").select_related("result")}
    metrics = get_kind(benchmark.kind).metric_keys
    rows = []
    for label, run in latest.items():
        mine, theirs = ours.get(run.id, {}), paper.get(label, {})
        rows.append({
            "model": label, "run": run.id, "judge": run.judge_config.name,
            "simulated": run.simulated, "finished": run.status_times.get("finished"),
            "figures": [(m, mine.get(m), theirs.get(m),
                         None if mine.get(m) is None or theirs.get(m) is None
                         else mine[m] - theirs[m]) for m in metrics],
        })
    return rows


def submission_standing(submission: Submission) -> dict | None:
    """Where a finished submission stands, for its author's status page: its overall figures
    (formatted as every page shows them) and its rank on its board, or why it is not there."""
    run = submission.current_run
    if run is None or run.status != ScoringRun.Status.FINISHED:
        return None
    kind = get_kind(submission.benchmark.kind)
    overall = SliceResult.objects.filter(run=run, dimension=OVERALL).first()
    values = overall.figures() if overall else {}
    standing = {"figures": [(m.label, m.format(values.get(m.key)), m.definition)
                            for m in kind.metrics],
                "rank": None, "of": None, "why_not": ""}
    current = benchmark_current(submission.benchmark.slug)
    if not submission.public:
        standing["why_not"] = "private: only you and staff see it"
    elif submission.hidden:
        standing["why_not"] = "hidden by staff"
    elif current is None or current.id != submission.benchmark_id:
        standing["why_not"] = "scored on an older version of the benchmark"
    elif run.judge_config_id != current.judge_config_id:
        standing["why_not"] = "scored under another judge config than the board's"
    else:
        rows = leaderboard_rows(benchmark=current)
        mine = next((r for r in rows if r["submission"] == submission.id), None)
        if mine is None:
            standing["why_not"] = "another submission of the model represents it on the board"
        else:
            standing.update(rank=mine["rank"], of=len(rows))
    return standing


def board_simulated(benchmark: Benchmark) -> bool:
    """Whether any run the board shows was scored by the judge simulator."""
    return any(s.current_run.simulated for s in representatives(benchmark))


def judge_figures_by_config(benchmark: Benchmark) -> list[dict]:
    """Each judge config that scored the benchmark, with its judge figures over all its
    finished runs (each run's overall figure weighted by the answers it covers)."""
    kind = get_kind(benchmark.kind)
    if not kind.judge_figures:
        return []
    totals: dict[int, dict] = {}
    for config_id, name, simulated, values in (SliceResult.objects.filter(
            run__benchmark__slug=benchmark.slug, run__status=ScoringRun.Status.FINISHED,
            dimension=OVERALL).values_list("run__judge_config_id", "run__judge_config__name",
                                           "run__simulated", "values")):
        entry = totals.setdefault(config_id, {"config": name, "runs": 0, "simulated": False,
                                              "judged": 0, "sums": {}})
        entry["runs"] += 1
        entry["simulated"] |= simulated
        judged = values.get("judged") or 0
        entry["judged"] += judged
        for m in kind.judge_figures:
            if values.get(m.key) is not None:
                entry["sums"][m.key] = entry["sums"].get(m.key, 0.0) + values[m.key] * judged
    return [{**entry, "figures": [(m.label, m.format(entry["sums"][m.key] / entry["judged"]
                                                     if entry["judged"] and m.key in
                                                     entry["sums"] else None), m.definition)
                                  for m in kind.judge_figures]}
            for entry in totals.values()]
