"""The board's rows: ranked on a slice, filtered and sorted, with reported and reference rows,
calibration baselines, the standing of one submission and the judge's own figures.

Boards read precomputed aggregates only (SliceResult, ReferenceFigure), never the answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge import families
from leaderboard.boards import lookups, rank_ranges, ranking  # noqa: F401 - lookups registers field__any
from leaderboard.boards.state import (
    OVERALL,
    benchmark_current,
    board_state,
    kept,
    representatives,
)
from leaderboard.models import ReferenceFigure
from scoring import visibility
from scoring.kinds import Kind, get_kind
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.attempts import attempts_by_model
from submissions.models import Submission

SORTS = ("rank", "model", "organisation", "coverage", "date", "attempts")  # and the kind's metrics
TIED = "="  # a row's decided_by when it equals the row above on the whole key


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
    no_clipping: bool = False  # only rows none of whose measured outputs clip
    # Systems of the judge's family (judge.families): "" all, "exclude" or "only" them.
    judge_family: str = ""


def metric_figures(figures: SliceResult, kind: Kind) -> dict:
    """The kind's metrics of a slice and their intervals (None where there are none)."""
    values = figures.figures()
    row = {"n": figures.n}
    for metric in kind.metric_keys:
        row[metric] = values.get(metric)
        row[f"{metric}_interval"] = figures.interval(metric)
    return row


def board_row(submission: Submission, figures: SliceResult, kind: Kind) -> dict:
    model = submission.model
    run = submission.current_run
    return {
        "model": model.name, "model_id": model.id, "organisation": model.organisation,
        "submission": submission.id, "link": model.link, "licence": model.licence,
        "open_weights": model.open_weights, "parameters": model.parameters,
        "base_family": model.base_family,
        "judge_family": families.same_family(model.base_family, run.judge_model),
        "submitted_by": model.submitted_by, "verified": model.verified,
        "anonymous": model.pseudonym,
        **metric_figures(figures, kind),
        **{m.key: figures.values.get(m.key) for m in kind.judge_figures},
        "coverage": submission.coverage, "partial": submission.partial,
        "judge": run.judge_name, "judge_config": run.judge_config.name,
        "simulated": run.simulated, "refused": run.refused_queries,
        "date": submission.created_at, "flag": submission.flag_reason,
        "after_deadline": submission.after_deadline,
        "clipping_share": submission.clipping_share,
    }


def leaderboard_rows(*, benchmark: Benchmark, query: BoardQuery = BoardQuery()) -> list[dict]:
    """Ranked rows of a board on one slice: by the kind's ranking key (MMAE: EMR, then IFR,
    then CR) or, sorted by a metric, by that metric then the ranking key; figures compared
    exactly, equal keys sharing a rank. Rank ranges are the paired bootstrap's (computed
    whenever the board changes: leaderboard.boards.ranking), None until computed. Ranks are over
    every model; filters only choose what shows."""
    kind = get_kind(benchmark.kind)
    bucket = query.bucket if query.dimension != OVERALL else ""
    metric = ranked_metric(kind, query)
    ranges = rank_ranges.stored(benchmark, query.dimension, bucket).get(metric or ranking.RANK, {})
    rows = []
    for row in _ranked(benchmark, kind, query.dimension, bucket, metric):
        found = ranges.get(str(row["submission"]))
        rows.append({**row, "rank_range": tuple(found) if found else None})
    rows = _filtered(rows, query)
    if metric is not None or query.sort == "rank":  # in rank order already
        return rows[::-1] if query.descending else rows
    return _sorted(rows, query)


def _ranked(benchmark: Benchmark, kind: Kind, dimension: str, bucket: str,
            metric: str | None) -> list[dict]:
    """The representatives' rows on one slice, with their ranks, in rank order: the last
    slice ranked kept for the board state (a filtered page and its CSV rank it in turn)."""
    return kept(board_state(benchmark), "ranked",
                lambda: _rank(benchmark, kind, dimension, bucket, metric),
                parts=(dimension, bucket, metric))


def _rank(benchmark: Benchmark, kind: Kind, dimension: str, bucket: str,
          metric: str | None) -> list[dict]:
    subs = {s.current_run_id: s for s in representatives(benchmark)}
    rows = [board_row(subs[f.run_id], f, kind) for f in SliceResult.objects.filter(
        run_id__any=list(subs), dimension=dimension, bucket=bucket)]
    attempts = attempts_by_model(benchmark.slug, [r["model_id"] for r in rows])
    for row in rows:
        row["attempts"] = attempts.get(row["model_id"], 0)
    rank_key = key_function(kind, metric)
    keys = [rank_key(r) for r in rows]
    order = ranking.board_order(keys, [r["model"] for r in rows],
                                [r["submission"] for r in rows])
    names = key_metrics(kind, metric)
    places = ranking.deciders([keys[i] for i, _ in order])
    rows = [{**rows[i], "rank": rank} for i, rank in order]
    for position, (row, place) in enumerate(zip(rows, places, strict=True)):
        row["decided_by"] = names[place] if place is not None else TIED if position else None
    return rows


def ranked_metric(kind: Kind, query: BoardQuery) -> str | None:
    """The metric a sort re-ranks on (None: the ranking itself)."""
    if query.sort in kind.metric_keys and not kind.metric(query.sort).count:
        return query.sort
    return None


def key_function(kind: Kind, metric: str | None):
    if metric is None:
        return kind.rank_key
    return lambda figures: kind.sort_key(metric, figures)


def key_metrics(kind: Kind, metric: str | None) -> tuple[str, ...]:
    """The metric of each position of the ranking key (key_function)."""
    return kind.ranking if metric is None else (metric, *kind.ranking)


def ranked_by(kind: Kind, query: BoardQuery) -> str:
    """The board's ranking rule in words, as a sort by a figure changes it."""
    metric = ranked_metric(kind, query)
    if metric is None:
        return kind.ranking_text
    return f"Ranked by {kind.label(metric)}, then by the board's rule " \
           f"({', '.join(kind.label(m) for m in kind.ranking)})"


def separation(kind: Kind, rows: list[dict], query: BoardQuery) -> str:
    """Which figures of the ranking key separated the ranked rows, in words ("EMR separates 3
    rows; where EMR ties, IFR separates 6 rows"): each row's `decided_by` is the figure that
    placed it below the row ranked above it."""
    names = list(dict.fromkeys(key_metrics(kind, ranked_metric(kind, query))))
    counts = {m: sum(1 for r in rows if r.get("decided_by") == m) for m in names}
    last = max((i for i, m in enumerate(names) if counts[m]), default=-1)
    parts = []
    for i, metric in enumerate(names[:last + 1]):
        tied = " and ".join(kind.label(m) for m in names[:i])
        n = counts[metric]
        parts.append((f"where {tied} tie{'' if i > 1 else 's'}, " if tied else "")
                     + f"{kind.label(metric)} separates {_rows(n) if n else 'no row'}")
    shared = sum(1 for r in rows if r.get("decided_by") == TIED)
    if shared:
        parts.append(f"{_rows(shared)} equal{'s' if shared == 1 else ''} the row above on "
                     "every figure and share" + ("s" if shared == 1 else "") + " its rank")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "." if text else ""


def separable(kind: Kind, query: BoardQuery, found: dict | None) -> str:
    """What the slice's paired bootstrap can tell apart in the figure the board ranks by, in
    words (rank_ranges.stored_separable; "" before the worker stored it, or with under two
    resampled rows). Ranked by the kind's key, a figure the same on every row in every resample
    (a difference of 0: MMAE's EMR at 0 for all) decides nothing: the next one of the key is
    said, after naming it."""
    held = (found or {}).get("metrics", {})
    sorted_by = ranked_metric(kind, query)
    keys = [sorted_by] if sorted_by else list(kind.ranking)
    tied = []
    for key in keys:
        figure = held.get(key)
        if not figure:
            return ""
        if figure["difference"] > 0 or key == keys[-1]:
            break
        tied.append(kind.metric(key).label)
    metric = kind.metric(key)
    unit = " points" if kind.scale == 100 else ""
    items = found["items"]
    before = (f"{' and '.join(tied)} {'is' if len(tied) == 1 else 'are'} the same for every "
              f"row in every resample here; ") if tied else ""
    text = (f"{before}{metric.label} differences under {metric.format(figure['difference'])}"
            f"{unit} are not separable here: the median half-width of the 95% interval of a "
            f"paired difference between neighbouring rows ({figure['pairs']} pair"
            f"{'s' if figure['pairs'] != 1 else ''}, {items} {kind.item_noun}"
            f"{'s' if items != 1 else ''} resampled).")
    return text[:1].upper() + text[1:]


def _rows(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


def _filtered(rows: list[dict], query: BoardQuery) -> list[dict]:
    needle = query.search.strip().lower()
    return [
        r for r in rows
        if (not needle or needle in r["model"].lower() or needle in r["organisation"].lower())
        and (query.open_weights is None or r["open_weights"] == query.open_weights)
        and (not query.licence or r["licence"].lower() == query.licence.lower())
        and (not query.no_clipping or not r.get("clipping_share"))
        and (not query.judge_family
             or bool(r.get("judge_family")) == (query.judge_family == "only"))
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
    return sorted(rows, key=lambda r: kind.rank_key(placed_figures(kind, r)))


def placed_figures(kind: Kind, figures: dict) -> dict:
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
    rows += baseline_rows(benchmark=benchmark, kind=kind, dimension=dimension, bucket=bucket)
    for row in rows:
        row.update(rank=None, rank_range=None, coverage=None, organisation="",
                   open_weights=None, licence="", attempts=None, base_family="",
                   judge_family=False)
    return rows


def baseline_rows(*, benchmark: Benchmark, kind: Kind, dimension: str = OVERALL,
                  bucket: str = "") -> list[dict]:
    """The calibration baselines (Identity, Noise and the battery) scored here under the
    board's judge config, on the slice: shown on the board, marked diagnostic, never
    ranked."""
    bucket = bucket if dimension != OVERALL else ""
    return [{"model": run.label, "reference": "diagnostic", "note": "",
             "scope": f"scored here by {run.judge_name}", "source": "",
             "n_samples": figures.n, **metric_figures(figures, kind),
             "date": None, "judge": run.judge_name,
             "judge_config": run.judge_config.name, "simulated": run.simulated}
            for run, figures in _baseline_slices(benchmark, dimension, bucket)]


def board_table(*, benchmark: Benchmark, query: BoardQuery = BoardQuery()) -> list[dict]:
    """What a board page lists on one slice: the ranked rows, and (unless the visitor hides
    them) reported and diagnostic rows where their figures place them, unranked. A reference
    row sorts after ranked rows it ties with; filters on licence or weights leave them out."""
    rows = leaderboard_rows(benchmark=benchmark, query=query)
    if not query.references or query.open_weights is not None or query.licence \
            or query.no_clipping or query.judge_family:
        return rows
    kind = get_kind(benchmark.kind)
    needle = query.search.strip().lower()
    references = [r for r in reference_rows(benchmark=benchmark, kind=kind,
                                            dimension=query.dimension, bucket=query.bucket)
                  if not needle or needle in r["model"].lower()]
    metric = ranked_metric(kind, query)
    if metric is None and query.sort != "rank":
        return _sorted(rows + references, query)
    key = key_function(kind, metric)
    # Merged in rank order, then reversed whole: a reversed board is the board backwards,
    # ties included (as the read API reverses it).
    rows = rows[::-1] if query.descending else rows
    merged = sorted([(key(r), 0, i, r) for i, r in enumerate(rows)]
                    + [(key(placed_figures(kind, r)), 1, i, r) for i, r in enumerate(references)],
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


def diagnostic_rows(benchmark: Benchmark) -> list[dict]:
    """The calibration baselines (Identity, Noise and the battery) scored under the
    benchmark's current judge config, latest finished run of each, beside the paper's row of
    the same name."""
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
                "rank": None, "rank_range": None, "of": None, "why_not": ""}
    current = benchmark_current(submission.benchmark.slug)
    if not submission.public:
        standing["why_not"] = "private: only you and staff see it"
    elif submission.publish_at is not None:
        standing["why_not"] = (f"embargoed: public from {submission.publish_at:%Y-%m-%d %H:%M} "
                               "UTC, shown nowhere before")
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
            standing.update(rank=mine["rank"], rank_range=mine["rank_range"], of=len(rows))
    return standing


def board_simulated(benchmark: Benchmark) -> bool:
    """Whether any run the board shows was scored by the judge simulator."""
    return any(s.current_run.simulated for s in representatives(benchmark))


def judge_figures_by_config(benchmark: Benchmark) -> list[dict]:
    """Each judge config that scored the benchmark, with its judge figures over its public
    runs (published and baselines: scoring.visibility), each run's overall figure weighted
    by the answers it covers. A private run counts nowhere: its figure would follow from the
    totals, and the count would tell when it finished."""
    kind = get_kind(benchmark.kind)
    if not kind.judge_figures:
        return []
    totals: dict[int, dict] = {}
    for config_id, name, simulated, values in (SliceResult.objects.filter(
            run__benchmark__slug=benchmark.slug, run__in=visibility.public_runs(),
            dimension=OVERALL).values_list("run__judge_config_id", "run__judge_config__name",
                                           "run__simulated", "values")):
        entry = totals.setdefault(config_id, {"config": name, "config_id": config_id,
                                              "runs": 0, "simulated": False, "judged": 0,
                                              "sums": {}})
        entry["runs"] += 1
        entry["simulated"] |= simulated
        judged = values.get("judged") or 0
        entry["judged"] += judged
        for m in kind.judge_figures:
            if values.get(m.key) is not None:
                entry["sums"][m.key] = entry["sums"].get(m.key, 0.0) + values[m.key] * judged
    for entry in totals.values():
        entry["values"] = {m.key: entry["sums"][m.key] / entry["judged"]
                           if entry["judged"] and m.key in entry["sums"] else None
                           for m in kind.judge_figures}
        entry["figures"] = [(m.label, m.format(entry["values"][m.key]), m.definition)
                            for m in kind.judge_figures]
    return list(totals.values())
