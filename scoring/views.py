"""The fleet page for staff: judge endpoints' health and load, the scoring queue, taking an
endpoint out or putting it back, and judge configs' endpoints.

Every view answers 404 to anyone but staff, anonymous visitors included.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from config.errors import ServiceError
from config.staff import staff_only
from scoring.baselines import baselines_create
from scoring.fleet import endpoint_put_back, endpoint_take_out, fleet_probe
from scoring.forms import (
    BaselinesForm,
    EndpointSwitchForm,
    JudgeConfigCreateForm,
    JudgeConfigUpdateForm,
)
from scoring.judge_configs import judge_config_create, judge_config_update
from scoring.models import Benchmark, JudgeConfig
from scoring.selectors import cached_answers, fleet_configs, fleet_queue


def _stats_context() -> dict:
    return {"configs": fleet_configs(), "queue": fleet_queue(), "cached": cached_answers(),
            "window_minutes": settings.FLEET_STATS_MINUTES,
            "probe_seconds": settings.FLEET_PROBE_SECONDS}


def _page(request, *, update_form=None, update_config_id=None, create_form=None, status=200):
    config_forms = [
        (config, update_form if config.id == update_config_id else JudgeConfigUpdateForm(
            prefix=f"config-{config.id}",
            initial={"base_urls": config.base_urls, "max_attempts": config.max_attempts,
                     "max_audio_seconds": config.max_audio_seconds,
                     "max_audios": config.max_audios}))
        for config in JudgeConfig.objects.order_by("name")]
    context = {**_stats_context(), "config_forms": config_forms,
               "create_form": create_form or JudgeConfigCreateForm(prefix="new"),
               "open_config": update_config_id, "open_create": create_form is not None}
    return render(request, "scoring/fleet.html", context, status=status)


@staff_only
@require_safe
def fleet(request):
    return _page(request)


@staff_only
@require_safe
def fleet_stats(request):
    """The part of the page that refreshes itself."""
    return render(request, "scoring/_fleet_stats.html", _stats_context())


@staff_only
@require_POST
def endpoint_switch(request):
    form = EndpointSwitchForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(e for errors in form.errors.values() for e in errors)
        messages.error(request, f"Nothing changed: {problems}.")
        return redirect("staff:fleet")
    data = form.cleaned_data
    switch = endpoint_take_out if data["action"] == "take_out" else endpoint_put_back
    try:
        endpoint = switch(actor=request.user, base_url=data["base_url"], reason=data["reason"])
    except ServiceError as exc:
        messages.error(request, f"Nothing changed: {exc}.")
    else:
        messages.success(request, f"{endpoint.base_url} is "
                                  f"{'back in' if endpoint.enabled else 'out of'} service.")
    return redirect("staff:fleet")


@staff_only
@require_POST
def probe_now(request):
    probed = fleet_probe()
    down = [e.base_url for e in probed if not e.healthy]
    messages.success(request, f"Probed {len(probed)} endpoint(s)"
                              + (f"; down: {', '.join(down)}." if down else "; all healthy."))
    return redirect("staff:fleet")


@staff_only
@require_POST
def judge_config_edit(request, config_id: int):
    config = get_object_or_404(JudgeConfig, id=config_id)
    form = JudgeConfigUpdateForm(request.POST, prefix=f"config-{config.id}")
    if form.is_valid():
        try:
            judge_config_update(actor=request.user, config=config,
                                base_urls=form.cleaned_data["base_urls"],
                                max_attempts=form.cleaned_data["max_attempts"],
                                max_audio_seconds=form.cleaned_data["max_audio_seconds"],
                                max_audios=form.cleaned_data["max_audios"],
                                reason=form.cleaned_data["reason"])
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Judge config {config.name} changed.")
            return redirect("staff:fleet")
    return _page(request, update_form=form, update_config_id=config.id, status=400)


@staff_only
@require_POST
def judge_config_new(request):
    form = JudgeConfigCreateForm(request.POST, prefix="new")
    if form.is_valid():
        try:
            config = judge_config_create(actor=request.user, **form.service_arguments())
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Judge config {config.name} created.")
            return redirect("staff:fleet")
    return _page(request, create_form=form, status=400)


@staff_only
@require_POST
def baselines(request):
    """One action of the rescore page: the calibration baselines (scoring.baselines), scored
    under the benchmark's current config."""
    form = BaselinesForm(request.POST)
    benchmark = form.is_valid() and Benchmark.objects.filter(
        slug=form.cleaned_data["benchmark"]).order_by("-version").first()
    if not benchmark:
        raise Http404("no such benchmark")
    try:
        made = baselines_create(actor=request.user, benchmark=benchmark,
                                reason=form.cleaned_data["reason"].strip())
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"calibration baselines queued: "
                                  f"{', '.join(f'{r.label} (run {r.id})' for r in made)}")
    return redirect(f"{reverse('staff:rescore')}?benchmark={benchmark.slug}")
