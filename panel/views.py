"""The panel's pages: the listening page (`/b/<slug>/panel/`, whose script talks to the
panel API), a task's audio (`/panel/audio/<token>/`), the judge card (`/b/<slug>/judge/`) and
the staff page of raters."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from config.errors import ServiceError
from config.staff import staff_only
from leaderboard.boards import judge_checks
from leaderboard.boards.state import benchmark_or_404
from leaderboard.pages.explorer import audio_type
from panel import agreement, corrected, judge_card, services
from panel.models import PanelRemoval
from scoring import visibility
from scoring.kinds import get_kind


@require_safe
def panel(request, slug):
    """The listening page: its script asks for a task, shows its texts, plays its audio and
    unlocks the choices once each audio was heard long enough (static/js/panel.js)."""
    benchmark = benchmark_or_404(slug)
    kind = get_kind(benchmark.kind)
    problem = None
    if not request.user.is_authenticated:
        problem = "sign in to rate"
    elif not kind.has_panel:
        problem = "this benchmark has no listening panel: its kind puts no question to people"
    elif benchmark.rubrics_hidden:  # its tasks would name its rubrics (scoring.visibility)
        problem = f"this benchmark has no listening panel: its rubrics are {visibility.NOT_YET}"
    else:
        problem = services.rater_problem(request.user)
    return render(request, "panel/panel.html", {
        "benchmark": benchmark, "kind": kind, "problem": problem,
        "min_listen": settings.PANEL_MIN_LISTEN_SECONDS})


@require_GET
def task_audio(request, token):
    """One audio of the signed-in rater's open task, whole (no ranges: each sending is the
    server's evidence of listening, services.panel_audio), never kept by any cache."""
    if not request.user.is_authenticated:
        raise Http404("no such audio")
    path = services.panel_audio(rater=request.user, token=token)
    response = FileResponse(open(path, "rb"), content_type=audio_type(path))
    response["Cache-Control"] = "private, no-store"
    return response


def _share(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _kappa(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _shown(block: dict) -> dict:
    """One set of human figures as the card shows them: formatted, intervals beside."""
    def bounds(name, fmt):
        lo, hi = block[f"{name}_lo"], block[f"{name}_hi"]
        return None if lo is None else f"{fmt(lo)} to {fmt(hi)}"

    return {"rubrics": block["rubrics"], "answers": block["answers"], "raters": block["raters"],
            "agreement": _share(block["agreement"]),
            "agreement_interval": bounds("agreement", _share),
            "kappa": _kappa(block["kappa"]), "kappa_interval": bounds("kappa", _kappa),
            "human_human": _share(block["human_human"])}


def _config_shown(kind, config: dict) -> dict:
    human = config["human"]
    by = [] if human is None else [
        {"dimension": judge_card.dimension_label(kind, d),
         "rows": [{"bucket": b, **_shown(figures)} for b, figures in buckets.items()]}
        for d, buckets in human["by"].items() if buckets]
    test = config["replace_test"]
    if test is not None and test["winning_rate"] is not None:
        test = {**test, "winning_pct": f"{100 * test['winning_rate']:.0f}",
                "advantage_pct": f"{100 * test['advantage_probability']:.0f}"}
    calibrated = [{"category": category, "judge": _share(f["judge"]),
                   "corrected": _share(f["corrected"]),
                   "interval": None if f["corrected_lo"] is None else
                   f"{_share(f['corrected_lo'])} to {_share(f['corrected_hi'])}",
                   "rubrics": f["rubrics"], "labelled": f["labelled"]}
                  for category, f in (config.get("calibrated") or {}).items()]
    return {**config, "shown": None if human is None else _shown(human), "by": by,
            "replace_test": test, "calibrated_rows": calibrated,
            "unanimity": "–" if config["vote_unanimity"] is None
            else f"{config['vote_unanimity']:.1f}%",
            "bias": "–" if config["position_bias"] is None
            else f"{config['position_bias']:+.2f}"}


@require_safe
def judge(request, slug):
    """The judge card: for each judge config, how it agrees with the listening panel."""
    benchmark = benchmark_or_404(slug)
    visibility.require(benchmark, request.user)  # its rubrics and verdicts: FULL only
    kind = get_kind(benchmark.kind)
    body = judge_card.judge_card(benchmark)
    panel_figures = body["panel"]
    return render(request, "panel/judge.html", {
        "benchmark": benchmark, "kind": kind, "panel": panel_figures,
        "self_consistency": _share(panel_figures["self_consistency"]),
        "configs": [_config_shown(kind, c) for c in body["configs"]],
        "min_raters": agreement.MIN_RATERS, "min_rubrics": agreement.MIN_RUBRICS,
        "checks": judge_checks.checks_shown(body["battery"], body["rank_agreement"]),
        "corrected_models": corrected.rated_models(benchmark) if kind.has_panel else []})


@require_safe
def corrected_row(request, slug, model_id):
    """A board row's figures beside the same corrected by the panel's answers on that system
    (panel.corrected), linked from each row of a board with a panel."""
    benchmark = benchmark_or_404(slug)
    visibility.require(benchmark, request.user)  # as the judge card: FULL only
    found = corrected.corrected_figures(benchmark, model_id)
    if found is None:
        raise Http404("no such row")
    kind = get_kind(benchmark.kind)
    rows = [{**figure, "axis": axis, **_formatted(kind, axis, figure)}
            for axis, figure in found["figures"].items()]
    response = render(request, "panel/corrected.html", {
        "benchmark": benchmark, "kind": kind, "found": found, "rows": rows})
    response["Cache-Control"] = "no-cache"  # answers change no board state: read afresh
    return response


def _formatted(kind, axis: str, figure: dict) -> dict:
    metric = kind.metric(axis)
    interval = figure["interval"]
    return {"judge_shown": metric.format(figure["judge"]),
            "corrected_shown": metric.format(figure["corrected"]),
            "interval_shown": f"[{metric.format(interval[0])}, {metric.format(interval[1])}]"
            if interval else ""}


@staff_only
@require_safe
def staff_raters(request):
    return _staff_raters_page(request, errors=[])


def _staff_raters_page(request, *, errors: list[str], status: int = 200):
    """Every rater: answers, repeats and self-consistency, with a removal form."""
    removed = set(PanelRemoval.objects.values_list("rater_id", flat=True))
    rows = [{**row, "self_consistency": _share(row["self_consistency"]),
             "repeats": len(row["pairs"]), "removed": row["rater"] in removed}
            for row in judge_card.rater_rows()]
    return render(request, "panel/staff_raters.html", {
        "rows": rows, "errors": errors,
        "removals": PanelRemoval.objects.select_related("rater", "removed_by")
        .order_by("-removed_at")}, status=status)


@staff_only
@require_POST
def staff_rater_remove(request, user_id):
    """Remove a rater and their answers (audited); refused without a reason."""
    rater = get_object_or_404(get_user_model(), pk=user_id)
    try:
        services.panel_rater_remove(actor=request.user, rater=rater,
                                    reason=request.POST.get("reason", ""))
    except ServiceError as error:
        return _staff_raters_page(request, errors=error.problems, status=error.status)
    return redirect("staff:panel-raters")
