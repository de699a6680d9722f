import copy
import functools
import gzip
from pathlib import Path

import plotly
from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from judge import families
from leaderboard.boards import board_pages, model_pages, rank_ranges, selectors
from leaderboard.boards import state as board_state
from leaderboard.pages import charts, responses
from leaderboard.pages import compare as comparison
from leaderboard.pages.forms import (
    BoardForm,
    CompareForm,
    ModelPageForm,
    PivotForm,
    dimension_choices,
    normalised,
)
from scoring import visibility
from scoring.cost import card_rows
from scoring.kinds import get_kind
from scoring.kinds.base import Section
from scoring.runs import cost_card, measured_cost
from submissions import anonymity
from submissions import selectors as submission_selectors

BOARD_PAGE_ROWS = model_pages.BOARD_PAGE_ROWS


PIVOT_PAGE_ROWS = 50


# plotly.js adds its stylesheet as <style> elements (and a heatmap's colour bar sets style
# attributes), with no way to give them a nonce: the pages that draw charts allow inline
# styles. Scripts stay 'self' only, and images, fonts and requests may not leave the site,
# so an injected style could neither run code nor send anything out.
draws_charts = csp_update({"style-src": [UNSAFE_INLINE]})


def columns(kind) -> list[tuple[str, str, str]]:
    """The board's sortable columns (key, label, one-line definition): the metrics beside the
    model in the kind's order (the ranking's first, so that a phone's first screen shows rank,
    model and the figures that rank them), then its details."""
    return [("rank", "Rank", "Competition rank by the board's ranking rule; in brackets the "
             "rank range of the paired bootstrap (2.5th to 97.5th percentile)"),
            ("model", "Model", ""),
            *[(m.key, m.label, m.definition) for m in kind.metrics],
            ("organisation", "Organisation", ""),
            ("coverage", "Coverage", "Share of the items with an output; the others score 0"),
            ("date", "Date", "When the submission was uploaded"),
            ("attempts", "Author's tries", ATTEMPTS)]


# Why the column is there: README, "Attempts disclosed".
ATTEMPTS = ("Attempts of the model's author: submissions they made to this benchmark and "
            "had scored, under any of their models' names, public and private, deleted ones "
            "included: the variants tried, not only the one shown (the model page says how "
            "many were this model's)")


def reach(level: visibility.Disclosure) -> dict[str, bool]:
    """What a board's pages may link to for a viewer who may learn `level` of it
    (scoring.visibility.disclosure), so that no link they are given answers 404: figures (the
    read API, its CSV, snapshots) from OVERALL, slices (the slice selector, the pivot) from
    SLICES, per-item pages (the explorer, compare, the items dataset, the judge card) at
    FULL. Every board but a hidden-rubric one reaches everything; a page that links by it is
    kept per viewer's level there (scoring.visibility.cache_part)."""
    return {"figures": level >= visibility.Disclosure.OVERALL,
            "slices": level >= visibility.Disclosure.SLICES,
            "items": level >= visibility.Disclosure.FULL}


def home(request):
    benchmarks = board_state.benchmark_list()
    real = [b for b in benchmarks if not b.synthetic]
    if real or benchmarks:  # the first imported (on a fresh machine, the MMAE demo)
        return redirect("leaderboard:board",
                        slug=min(real or benchmarks, key=lambda b: b.id).slug)
    return render(request, "leaderboard/home.html", {"benchmarks": benchmarks})


@draws_charts
def board(request, slug):
    """A board on one slice. The part below the filters is rendered once per board state
    (board_state.BoardState) and query, then served from the cache; anonymous visitors get
    the whole page from it (leaderboard.pages.responses)."""
    benchmark = board_state.benchmark_or_404(slug)
    now = board_state.board_state(benchmark)
    snapshot = board_pages.board_snapshot(benchmark)
    kind = get_kind(benchmark.kind)
    form = BoardForm(request.GET, buckets=snapshot["buckets"], kind=kind)
    context = {"benchmark": benchmark, "form": form,
               "buckets": snapshot["buckets"], "licences": snapshot["licences"],
               "clipping": snapshot.get("clipping", False),  # (a snapshot kept before)
               "snapshot": snapshot, "plotly_js": plotly_js_url(), "kind": kind}
    if not form.is_valid():
        return render(request, "leaderboard/board.html", {
            **context, "benchmarks": board_state.benchmark_list(),
            "reach": reach(visibility.disclosure(benchmark, request.user)),
            "compare_models": board_pages.top_two(benchmark)}, status=400)
    normal = normalised(form, dimension=board_state.OVERALL, sort="rank", page=1)
    return responses.shared(
        request, state=now.key, changed_at=benchmark.board_changed_at,
        parts=("board", normal.urlencode()), boards=now.versions, benchmark=benchmark,
        render=functools.partial(_board_page, as_asked(request, normal), form, context,
                                 state=now))


def _board_page(request, form, context: dict, *, state) -> HttpResponse:
    """The board's page for `request` (asking exactly the normalised query, so that the page
    is shared) around its body, rendered once per board state, query and what the viewer may
    learn of a hidden-rubric board (scoring.visibility: a slice below SLICES is a 404; below
    OVERALL the body names the models in alphabetical order, no figure, no rank)."""
    benchmark, query = context["benchmark"], form.query()
    level = visibility.require(
        benchmark, request.user, visibility.Disclosure.SLICES
        if query.dimension != board_state.OVERALL else visibility.Disclosure.NOTHING)
    context = {**context, "reach": reach(level)}
    if level < visibility.Disclosure.OVERALL:
        return render(request, "leaderboard/board.html", {
            **context, "benchmarks": board_state.benchmark_list(), "query": query,
            "body": mark_safe(render_to_string(  # noqa: S308 - our own rendered template
                "leaderboard/_board_hidden.html",
                {"models": sorted({(s.model.name, s.after_deadline)
                                   for s in board_state.representatives(benchmark)},
                                  key=lambda m: (m[0].casefold(), m)),
                 "note": visibility.NOT_YET})),
            "compare_models": "", "diagnostics": []})
    rule = visibility.cache_part(benchmark, request.user)
    body = board_state.kept(state, "board-body", shared=True,
                            parts=(request.GET.urlencode(), *([rule] if rule else [])),
                            make=lambda: render_to_string(
                                "leaderboard/_board_body.html",
                                {**_board_body(benchmark, query, form.cleaned_data["page"] or 1,
                                               form.cleaned_data["chart"]),
                                 "ranging": not state.ranged}, request=request))
    return render(request, "leaderboard/board.html", {
        **context, "benchmarks": board_state.benchmark_list(), "query": query,
        "body": mark_safe(body),  # noqa: S308 - our own rendered template
        "compare_models": board_pages.top_two(benchmark),
        "diagnostics": context["snapshot"]["diagnostics"]})


def as_asked(request, query: QueryDict):
    """The request as though it had asked exactly `query`, to render a cached body with."""
    normal = copy.copy(request)
    normal.GET = query
    return normal


def page_of(rows: list, number: int, size: int) -> tuple[list, dict]:
    """One page of rows and what the page links need (board_pages.paging)."""
    return rows[(number - 1) * size: number * size], board_pages.paging(number, size, len(rows))


def _board_body(benchmark, query, page: int, chart: str) -> dict:
    kind = get_kind(benchmark.kind)
    rows, paging = board_pages.board_page(benchmark, query, number=page, size=BOARD_PAGE_ROWS)
    _with_cells(rows, kind)
    judge_columns = kind.judge_figures if query.judge else ()
    for row in rows:
        row["judge_cells"] = [m.format(row.get(m.key)) for m in judge_columns]
        decided = row.get("decided_by")
        row["decided_cell"] = kind.metric_keys.index(decided) \
            if decided in kind.metric_keys else None
    ranked = [r for r in rows if r["rank"] is not None]
    y = chart or charts.separating_metric(kind, ranked)
    x = charts.other_axis(kind, ranked, y)
    where = f" on {kind.dimension_label(query.dimension)} = {query.bucket}" \
        if query.dimension != board_state.OVERALL else ""
    return {
        "query": query,
        "rows": rows,
        "paging": paging,
        "columns": columns(kind),
        "judge_columns": judge_columns,
        "colspan": len(columns(kind)) + 1 + len(judge_columns),
        "kind": kind,
        "ranged": any(r["rank_range"] for r in ranked),
        "benchmark_slug": benchmark.slug,
        # Each row links to its figures corrected by the listening panel (panel.corrected).
        "people": kind.has_panel and not benchmark.rubrics_hidden,
        "slice_label": kind.dimension_label(query.dimension),
        "slice_n": next((r["n"] for r in ranked), None),
        "ranked_by": selectors.ranked_by(kind, query),
        # Of the page's rows: the whole board's would need every row read.
        "separation": ("On this page: " if paging["pages"] > 1 else "")
        + selectors.separation(kind, ranked, query),
        "separable": selectors.separable(kind, query, rank_ranges.stored_separable(
            benchmark, query.dimension, query.bucket)),
        "simulated": any(r.get("simulated") for r in rows),
        "references": sum(1 for r in rows if r["rank"] is None),
        "has_intervals": any(f[1] for row in rows for f in row["figures"]),
        # The chart plots the very rows the table ranks.
        "scatter": charts.to_html(charts.metric_scatter(ranked, x=x, y=y, kind=kind),
                                  div_id="chart-board") if ranked else None,
        "scatter_title": f"{kind.label(y)} against {kind.label(x)}{where}",
        "chart_metric": y,
    }


PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@functools.cache
def _plotly_js() -> tuple[bytes, bytes]:
    """The bundle shipped inside the installed plotly package, plain and gzipped (once)."""
    plain = PLOTLY_JS.read_bytes()
    return plain, gzip.compress(plain, compresslevel=6, mtime=0)


def plotly_js_url() -> str:
    return reverse("leaderboard:plotly-js", args=[plotly.__version__])


@require_safe
def plotly_js(request, version):
    """plotly.js for every chart, under a URL that names the installed plotly's version, so
    browsers may keep it for a year; an old version's URL redirects to the current one."""
    if version != plotly.__version__:
        return redirect(plotly_js_url())
    plain, packed = _plotly_js()
    gzipped = responses.accepts_gzip(request)
    response = HttpResponse(packed if gzipped else plain,
                            content_type="text/javascript; charset=utf-8")
    if gzipped:
        response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response


def _with_cells(rows: list[dict], kind) -> list[dict]:
    """Each row's figure cells in the kind's order: (formatted value, interval, is a
    count)."""
    for row in rows:
        row["figures"] = [m.cell(row[m.key], row[f"{m.key}_interval"]) for m in kind.metrics]
    return rows


def form_errors(form) -> list[str]:
    return [f"{field}: {message}" if field != "__all__" else message
            for field, messages in form.errors.items() for message in messages]


@require_safe
@draws_charts
def model(request, model_id):
    """A model's page: its submissions and a board's figures per slice. Anonymous visitors
    share it per state of every board (a model's figures come from several)."""
    state, changed_at, versions = board_state.boards_state()
    # The host, for the badge snippet's absolute addresses.
    parts = ("model", model_id, request.scheme, responses.canonical_host(request),
             *(f"{name}={request.GET.get(name, '')}" for name in ModelPageForm.base_fields))
    return responses.shared(request, state=state, changed_at=changed_at, parts=parts,
                            render=lambda: _model_page(request, model_id), boards=versions)


def _model_page(request, model_id):
    entry = model_pages.model_for(request.user, model_id)
    submissions = model_pages.disclosed(
        request.user, model_pages.model_submissions(request.user, entry))
    user = request.user
    if user.is_authenticated and (user.is_staff or entry.owner_id == user.pk
                                  or any(s.owner_id == user.pk for s in submissions)):
        responses.personal(request)  # their private submissions, or staff's view of all
    featured = model_pages.featured_submissions(submissions)
    kinds = {slug: get_kind(s.benchmark.kind) for slug, s in featured.items()}
    form = ModelPageForm(request.GET, kinds=kinds)
    levels = {s.benchmark_id: visibility.disclosure(s.benchmark, user) for s in submissions}
    context = {"entry": entry, "form": form, "errors": [],
               "site_url": f"{request.scheme}://{responses.canonical_host(request)}",
               "standings": model_pages.board_standings(featured),
               # Each row links to its explorer only for a viewer it answers (FULL).
               "submissions": [{**row, "reach": reach(levels[s.benchmark_id])} for row, s in zip(
                   model_pages.submission_rows(submissions), submissions, strict=True)],
               "attempts": model_pages.attempt_rows(entry, featured),
               "family": families.LABELS.get(entry.base_family, ""),
               "judge_family": any(families.same_family(entry.base_family,
                                                        s.current_run.judge_model)
                                   for s in featured.values()),
               "family_choices": families.CHOICES if user.is_authenticated
               and entry.owner_id == user.pk else (),
               "benchmarks": [(slug, s.benchmark.title) for slug, s in featured.items()],
               "dimensions": dimension_choices(next(iter(kinds.values())))
               if kinds else []}
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, "leaderboard/model.html", context, status=400)
    data = form.cleaned_data
    shown = featured.get(data["benchmark"])
    if shown is None:
        return render(request, "leaderboard/model.html", context)
    kind = kinds[data["benchmark"]]
    slices = _with_cells(model_pages.slice_rows(shown.current_run_id, kind), kind)
    shown_reach = reach(levels[shown.benchmark_id])
    if not shown_reach["slices"]:
        slices = [r for r in slices if r["dimension"] == board_state.OVERALL]
    for row in slices:  # each cell with its label, which a phone shows above it
        row["labelled"] = list(zip((m.label for m in kind.metrics), row["figures"],
                                   strict=True))
    chosen = [r for r in slices if r["dimension"] == data["dimension"]]
    build = charts.slice_radar if data["chart"] == "radar" else charts.slice_bars
    plotted = tuple(m.key for m in kind.metrics if not m.count)
    labels = [kind.label(m) for m in plotted]
    has_intervals = any(r[f"{m}_interval"] for r in chosen for m in plotted)
    context.update(
        shown=shown, shown_reach=shown_reach, slices=slices, dimension=data["dimension"],
        chart_kind=data["chart"],
        benchmark_slug=data["benchmark"], plotly_js=plotly_js_url(), kind=kind,
        dimensions=dimension_choices(kind), metric_labels=[m.label for m in kind.metrics],
        chart_title=f"{', '.join(labels[:-1])} and {labels[-1]} per bucket of "
                    f"{kind.dimension_label(data['dimension'])}" if len(labels) > 1
                    else f"{labels[0]} per bucket of {kind.dimension_label(data['dimension'])}",
        chart_note="The figures of the table below"
        + ("; whiskers are bootstrap 95% intervals over samples." if data["chart"] == "bars"
           and has_intervals else "." if data["chart"] == "bars"
           else "; intervals are in the table." if has_intervals else "."),
        chart=charts.to_html(build(chosen, plotted, kind), div_id="chart-slices")
        if chosen else None)
    return render(request, "leaderboard/model.html", context)


@require_safe
@draws_charts
def pivot(request, slug):
    benchmark = board_state.benchmark_or_404(slug)
    kind = get_kind(benchmark.kind)
    form = PivotForm(request.GET, kind=kind)
    context = {"benchmark": benchmark, "form": form, "errors": [],
               "metrics": kind.metric_keys, "kind": kind}
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, "leaderboard/pivot.html", context, status=400)
    data = form.cleaned_data
    normal = normalised(form, page=1)
    now = board_state.board_state(benchmark)
    asking = as_asked(request, normal)

    def respond():
        # The pivot is every row's slices: a hidden-rubric board's viewer below SLICES gets
        # a 404 (scoring.visibility).
        visibility.require(benchmark, request.user, visibility.Disclosure.SLICES)
        rule = visibility.cache_part(benchmark, request.user)
        page = board_state.kept(now, "pivot", shared=True,
                                parts=(normal.urlencode(), *([rule] if rule else [])),
                                make=lambda: _pivot_page(benchmark, data, asking))
        context.update(table=page["table"], chart=page["chart"], plotly_js=plotly_js_url(),
                       body=mark_safe(page["body"]))  # noqa: S308 - our own rendered template
        return render(asking, "leaderboard/pivot.html", context)

    return responses.shared(request, state=now.key, changed_at=benchmark.board_changed_at,
                            parts=("pivot", normal.urlencode()), render=respond, costly=True,
                            boards=now.versions, benchmark=benchmark)


def _pivot_page(benchmark, data, request) -> dict:
    """A page of the pivot (models in board order), its heatmap of the same rows, and its
    body rendered for `request`."""
    kind = get_kind(benchmark.kind)
    table, paging = board_pages.pivot_page(
        benchmark, dimension=data["dimension"], number=data["page"], size=PIVOT_PAGE_ROWS,
        metric=data["metric"] or board_pages.pivot_metric(benchmark, data["dimension"]))
    data = {**data, "metric": table["metric"]}
    table["unit"] = "count" if kind.metric(data["metric"]).count else \
        "%" if kind.scale == 100 else f"0-{kind.scale:g}"
    table["label"] = kind.label(data["metric"])
    table["dimension_label"] = kind.dimension_label(data["dimension"])
    table["ranking"] = kind.ranking_text
    table["dimension_label"] = kind.dimension_label(data["dimension"])
    chart = charts.to_html(charts.pivot_heatmap(table, kind), div_id="chart-pivot") \
        if table["rows"] and table["buckets"] else None
    metric = kind.metric(data["metric"])
    for row in table["rows"]:  # formatted once here, not in every render of a cached page
        row["shown"] = [None if v is None else metric.format(v) for v in row["cells"]]
    page = {"table": table, "paging": paging, "chart": chart}
    page["body"] = render_to_string("leaderboard/_pivot_body.html", page, request=request)
    return page


@require_safe
def compare(request, slug):
    """Models side by side. With none chosen, a picker (search and choose); with two or more,
    whether each is really apart from the first (paired differences with their intervals and
    a verdict, per metric and slice), per-item wins and losses, and every slice's figures."""
    benchmark = board_state.benchmark_or_404(slug)
    # Keyed and rendered as the canonical query: every spelling of one comparison is one
    # cached page, and one bootstrap.
    chosen = CompareForm.canonical(request.GET)
    needle = comparison.picker_needle(request.GET.get("q", ""))[:100]
    asked = QueryDict(mutable=True)
    asked.update({"models": chosen, "q": needle})
    now = board_state.board_state(benchmark)
    return responses.shared(
        request, state=now.key, changed_at=benchmark.board_changed_at,
        parts=("compare", chosen, needle), costly=True, boards=now.versions, benchmark=benchmark,
        render=lambda: _compare_page(as_asked(request, asked), benchmark, needle))


def _compare_page(request, benchmark, needle: str):
    # Paired differences and per-item wins come from each row's per-item results: a
    # hidden-rubric board's viewer below FULL gets a 404 (scoring.visibility).
    visibility.require(benchmark, request.user)
    chosen = comparison.asked_ids(request.GET.getlist("models"))
    board_models = comparison.board_models(benchmark, chosen)
    form = CompareForm(request.GET, board=board_models, user=request.user)
    kind = get_kind(benchmark.kind)
    context = {"benchmark": benchmark, "form": form, "errors": [], "kind": kind,
               "search": needle,
               "picker": comparison.picker_choices(benchmark, chosen, board_models, needle)}
    if not form.data["models"].strip():  # nothing chosen yet: the picker
        return render(request, "leaderboard/compare.html", context)
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, "leaderboard/compare.html", context, status=400)
    submissions = form.submissions()
    models = comparison.compared_models(submissions)
    context.update(models=models,
                   rows=comparison.compare_rows(submissions, kind),
                   metric_labels=[m.label for m in kind.metrics],
                   pairs=comparison.pairwise(submissions),
                   differences=[{"a": models[0], "b": other,
                                 "rows": _paired(benchmark, submissions[0], submission)}
                                for other, submission in zip(models[1:], submissions[1:],
                                                             strict=True)])
    verdicts = sum(1 for pair in context["differences"] for row in pair["rows"]
                   for cell in row["cells"]
                   if cell.get("verdict") not in (None, rank_ranges.TOO_FEW))
    context.update(verdicts=verdicts, by_chance=round(verdicts * rank_ranges.CHANCE_SHARE),
                   min_items=rank_ranges.MIN_VERDICT_ITEMS)
    return render(request, "leaderboard/compare.html", context)


def _paired(benchmark, a, b) -> list[dict]:
    """Two runs' paired differences, bootstrapped once per pair of runs: what it resamples (a
    finished run's per-item vector, written with its move to finished and never after, and
    the benchmark's items, fixed by its sha256) does not change with the board, so a new
    submission on the board does not make it again, and a rescore (a new current run) does.
    A signed-in visitor's compare page is rendered for them, but its bootstrap (most of the
    page's work) is the same for everyone allowed to compare the two, and only those who
    passed the form's access checks ask for it. An empty answer (a run without its vector)
    is not kept."""
    return board_state.shared_kept(
        f"paired:{benchmark.id}:{benchmark.sha256}", (a.current_run_id, b.current_run_id),
        lambda: rank_ranges.paired_differences(benchmark, a, b), keep=bool)


# Said of every kind: how the platform turns figures into intervals, ranks and ranges.
COMMON_SECTIONS = [
    Section("Intervals", (
        "Each figure comes with a 95% bootstrap interval: the items are resampled with "
        "replacement 1,000 times (seeded, so the interval never changes for the same "
        "answers), the figure is computed on each resample, and the interval runs from the "
        "2.5th to the 97.5th percentile.",
    )),
    Section("Ranks and rank ranges", (
        "Ranks follow the ranking rule above. Figures are compared exactly (rounded to 1e-9, so "
        "that a difference in the last bits of a floating-point sum never decides a rank); rows "
        "equal on the whole ranking key share a rank, and the next figure of the key decides "
        "otherwise.",
        "A rank range comes from a paired bootstrap: each of 1,000 replicates draws one "
        "resample of the benchmark's items, the same for every model, and ranks every model "
        "by its full ranking key on it. A row's range runs from the 2.5th to the 97.5th "
        "percentile of its rank over the replicates. Two models whose ranges do not overlap "
        "are apart; overlapping ranges mean the benchmark does not separate them. Ranges are "
        "computed again whenever the board changes; sorting by another figure ranks (and "
        "ranges) by that figure.",
        "Reported rows (published tables) and diagnostic rows (calibration baselines scored "
        "here) stand where their figures place them but get no rank.",
    )),
    Section("Comparing two models", (
        "The compare page gives, for every metric and slice, the paired difference A - B "
        "over the items both models answered, with a paired bootstrap 95% interval (the same "
        "resample of items for both). When the interval lies above 0, A is ahead; below 0, B "
        "is ahead; across 0, the two are not separable on that figure.",
    )),
]


@require_safe
def scoring(request, slug):
    """How scoring works on this board: the kind's metrics and rules, the judge config that
    scores it, and how intervals, ranks and rank ranges are made."""
    benchmark = board_state.benchmark_or_404(slug)
    kind = get_kind(benchmark.kind)
    level = visibility.disclosure(benchmark, request.user)
    return render(request, "leaderboard/scoring.html", {
        "benchmark": benchmark, "kind": kind, "config": benchmark.judge_config,
        "sections": kind.how_scoring_works(), "common": COMMON_SECTIONS,
        "simulated": selectors.board_simulated(benchmark), "reach": reach(level),
        # The judge's figures are the rows' own, weighted: none below OVERALL on a
        # hidden-rubric board (scoring.visibility).
        "judge_configs": selectors.judge_figures_by_config(benchmark)
        if level >= visibility.Disclosure.OVERALL else [],
        # How many queries a submission makes tells how many rubrics there are: not before
        # a hidden-rubric board's reveal.
        "cost": measured_cost(benchmark) if level is visibility.Disclosure.FULL else None})


def _detail_context(request, pk):
    submission = submission_selectors.submission_get(user=request.user, pk=pk, write=True)
    kind = get_kind(submission.benchmark.kind)
    progress = submission_selectors.run_progress(submission.current_run,
                                                 owner_id=submission.owner_id)
    # On a hidden-rubric benchmark its author learns what the phase shows everyone
    # (scoring.visibility): no results file (per-item) below FULL, no figure below OVERALL.
    level = visibility.disclosure(submission.benchmark, request.user)
    run = submission.current_run
    card = cost_card(run) if run is not None else None
    return {"submission": submission, "progress": progress, "kind": kind,
            "cost": card_rows(card) if card else None,
            "files": kind.files if level is visibility.Disclosure.FULL else (),
            "per_item": level is visibility.Disclosure.FULL,
            "hidden_note": "" if level is visibility.Disclosure.FULL else visibility.NOT_YET,
            "standing": selectors.submission_standing(submission)
            if level >= visibility.Disclosure.OVERALL else None}


def submission_status(request, pk):
    """A submission's status page, for its author and staff: its progress, its files, its runs
    and where it stands on its board."""
    context = _detail_context(request, pk)
    runs = submission_selectors.submission_runs(context["submission"])
    if context["standing"] is None:  # no figure of a hidden-rubric board's row
        runs = [{**r, "figures": []} for r in runs]
    context["runs"] = runs
    context["review_link"] = anonymity.review_link(context["submission"])
    return render(request, "submissions/detail.html", context)


def submission_progress(request, pk):
    """The live part of the status page, polled by htmx while the submission is active."""
    return render(request, "submissions/_progress.html", _detail_context(request, pk))
