"""Staff pages for rescoring and for a benchmark's current judge config.

Every view answers 404 to anyone but staff: these pages are not advertised to others.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from config.errors import ServiceError
from config.staff import staff_only
from scoring.judge_configs import benchmark_set_judge_config, judge_config_current
from scoring.kinds import get_kind
from scoring.models import Benchmark, ScoringRun
from submissions.forms import CurrentConfigForm, RescoreForm
from submissions.rescoring import (
    board_count,
    board_runs_reconcile,
    rescore_request,
)


def _slugs() -> list[str]:
    return list(Benchmark.objects.order_by("slug").values_list("slug", flat=True).distinct())


def _benchmark(request) -> Benchmark | None:
    slug = request.GET.get("benchmark") or request.POST.get("benchmark")
    if not slug:
        return None
    benchmark = Benchmark.objects.filter(slug=slug).order_by("-version").first()
    if benchmark is None:
        raise Http404(f"no benchmark {slug!r}")
    judge_config_current(benchmark)
    return benchmark


@staff_only
@require_http_methods(["GET", "POST"])
def rescore(request):
    """Pick a benchmark, a config and submissions; a dry run says what it will cost; a typed
    confirmation starts it."""
    benchmark = _benchmark(request)
    context = {"benchmarks": _slugs(), "benchmark": benchmark,
               "kind": get_kind(benchmark.kind) if benchmark else None}
    if benchmark is None:
        return render(request, "submissions/staff_rescore.html", context)
    form = RescoreForm(request.POST if request.method == "POST" else None, benchmark=benchmark)
    context.update(form=form, config_form=CurrentConfigForm(None, benchmark=benchmark),
                   recent=ScoringRun.objects.filter(benchmark=benchmark)
                   .exclude(purpose=ScoringRun.Purpose.SUBMISSION)
                   .select_related("judge_config").order_by("-id")[:20])
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            status = _rescore_post(request, form, benchmark, context)
        except ServiceError as exc:
            form.add_error(None, exc)
            status = 400
        if status == 302:
            return redirect(f"{reverse('staff:rescore')}?benchmark={benchmark.slug}")
    elif request.method == "POST":
        status = 400
    return render(request, "submissions/staff_rescore.html", context, status=status)


def _rescore_post(request, form: RescoreForm, benchmark: Benchmark, context: dict) -> int:
    data = form.cleaned_data
    dry_run = request.POST.get("action") != "rescore"
    if not dry_run and (data.get("confirm") or "").strip() != benchmark.slug:
        context["plan"], _ = rescore_request(actor=request.user, benchmark=benchmark,
                                             where=form.where(), judge_config=data["config"],
                                             dry_run=True)
        raise ServiceError(f"type the benchmark's slug ({benchmark.slug}) to confirm")
    plan, made = rescore_request(actor=request.user, benchmark=benchmark, where=form.where(),
                                 judge_config=data["config"], reason=data.get("reason") or "",
                                 dry_run=dry_run, expected=data.get("expected"))
    context["plan"] = plan
    if dry_run:
        return 200
    messages.success(request, f"{len(made)} rescoring run(s) queued under "
                              f"{data['config'].name}: {plan.queries} judge queries "
                              f"({plan.cached} answers from the cache)")
    return 302


@staff_only
@require_http_methods(["POST"])
def current_config(request):
    benchmark = _benchmark(request)
    if benchmark is None:
        raise Http404("no benchmark given")
    form = CurrentConfigForm(request.POST, benchmark=benchmark)
    if form.is_valid():
        try:
            benchmark = benchmark_set_judge_config(
                actor=request.user, benchmark=benchmark, config=form.cleaned_data["config"],
                reason=form.cleaned_data["reason"])
            board_runs_reconcile(benchmark=benchmark)
            shown = board_count(benchmark)
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"{benchmark.slug} is now judged by "
                                      f"{form.cleaned_data['config'].name}; the board shows "
                                      f"{shown} submission(s) scored under it")
            return redirect(f"{reverse('staff:rescore')}?benchmark={benchmark.slug}")
    return render(request, "submissions/staff_rescore.html", {
        "benchmarks": _slugs(),
        "benchmark": benchmark, "kind": get_kind(benchmark.kind),
        "form": RescoreForm(None, benchmark=benchmark),
        "config_form": form}, status=400)
