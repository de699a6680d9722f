"""Pages and actions of moderation: the author's visibility and representative choices, and
the staff pages (submissions to moderate, quota overrides, the audit log).

Staff pages and actions answer 404 to anyone but staff (`staff_only`), GET and POST alike.
Every action is a POST with a reason, and is audited by the service it calls.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from audit.selectors import audit_events, event_rows
from config.errors import ServiceError
from config.staff import staff_only
from submissions import moderation, selectors
from submissions.forms import (
    DeleteForm,
    FlagForm,
    HideForm,
    QueueForm,
    QuotaForm,
    RepresentativeForm,
    RetryForm,
    VisibilityForm,
)
from submissions.models import QuotaOverride, Submission
from submissions.services import quota_left

PAGE_SIZE = 50


# --- the author's choices ------------------------------------------------------------------


def _back(request, submission: Submission):
    target = request.POST.get("next", "")
    if target not in ("list", "page"):
        return redirect("leaderboard:submission-status", pk=submission.pk)
    if target == "list":
        return redirect("submissions:list")
    return redirect("leaderboard:submission", pk=submission.pk)


def _author_choice(request, submission: Submission, **choice) -> bool:
    """Apply the author's choice (moderation.submission_author_choices, which also refuses
    anyone but the author); False with the reason shown if it is refused."""
    try:
        moderation.submission_author_choices(actor=request.user, submission=submission,
                                             **choice)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return False
    return True


@login_required
@require_POST
def submission_visibility(request, pk):
    submission = selectors.submission_get(user=request.user, pk=pk, write=True)
    form = VisibilityForm(request.POST)
    if not form.is_valid():
        messages.error(request, "choose public or private")
    elif _author_choice(request, submission, public=form.cleaned_data["public"]):
        messages.success(request, f"submission {pk} is now "
                                  f"{'public' if form.cleaned_data['public'] else 'private'}")
    return _back(request, submission)


@login_required
@require_POST
def submission_representative(request, pk):
    submission = selectors.submission_get(user=request.user, pk=pk, write=True)
    form = RepresentativeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "choose or withdraw the representative")
    elif _author_choice(request, submission, representative=form.cleaned_data["chosen"]):
        name = submission.model.name
        messages.success(request, f"submission {pk} now represents {name} on the board"
                         if form.cleaned_data["chosen"] else
                         f"{name}'s latest public submission represents it on the board again")
    return _back(request, submission)


# --- staff: submissions --------------------------------------------------------------------


@staff_only
@require_safe
def staff_submissions(request):
    form = QueueForm(request.GET)
    if not form.is_valid():
        return render(request, "submissions/staff_submissions.html",
                      {"form": form, "page": None}, status=400)
    data = form.cleaned_data
    queue = selectors.moderation_queue(
        benchmark_slug=data["benchmark"], state=data["state"], flagged=data["flagged"],
        hidden=data["hidden"], search=data["q"])
    page = Paginator(queue, PAGE_SIZE).get_page(data["page"] or 1)
    return render(request, "submissions/staff_submissions.html", {"form": form, "page": page})


def _staff_submission(pk) -> Submission:
    try:
        return (Submission.objects.select_related("model", "benchmark", "current_run", "owner")
                .get(pk=pk))
    except Submission.DoesNotExist:
        raise Http404(f"no submission {pk}") from None


def _moderation_page(request, submission: Submission, status: int = 200, **forms_):
    context = {
        "submission": submission,
        "hide_form": HideForm(None, initial={"hidden": "false" if submission.hidden
                                             else "true"}),
        "flag_form": FlagForm(None, initial={"reason": submission.flag_reason}),
        "delete_form": DeleteForm(None, submission=submission),
        "retry_form": RetryForm(None),
        "events": event_rows(audit_events(object_type="submissions.submission",
                                          object_id=str(submission.pk))[:50]),
        **forms_,
    }
    return render(request, "submissions/staff_submission.html", context, status=status)


@staff_only
@require_safe
def staff_submission(request, pk):
    return _moderation_page(request, _staff_submission(pk))


@staff_only
@require_POST
def staff_hide(request, pk):
    submission = _staff_submission(pk)
    form = HideForm(request.POST)
    if form.is_valid():
        hidden = form.cleaned_data["hidden"]
        try:
            moderation.submission_hide(actor=request.user, submission=submission,
                                       hidden=hidden, reason=form.cleaned_data["reason"])
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"submission {pk} is "
                                      f"{'hidden' if hidden else 'shown again'}")
            return redirect("staff:submission", pk=pk)
    return _moderation_page(request, submission, 400, hide_form=form)


@staff_only
@require_POST
def staff_flag(request, pk):
    submission = _staff_submission(pk)
    form = FlagForm(request.POST)
    if form.is_valid():
        flagged = form.cleaned_data["flagged"]
        try:
            moderation.submission_flag(actor=request.user, submission=submission,
                                       flagged=flagged, reason=form.cleaned_data["reason"])
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"submission {pk} is "
                                      f"{'flagged' if flagged else 'no longer flagged'}")
            return redirect("staff:submission", pk=pk)
    return _moderation_page(request, submission, 400, flag_form=form)


@staff_only
@require_POST
def staff_retry(request, pk):
    submission = _staff_submission(pk)
    form = RetryForm(request.POST)
    if form.is_valid():
        try:
            moderation.submission_retry_failed(actor=request.user, submission=submission,
                                               reason=form.cleaned_data["reason"])
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"submission {pk} is being tried again")
            if request.POST.get("next") == "list":
                return redirect("staff:submissions")
            return redirect("staff:submission", pk=pk)
    return _moderation_page(request, submission, 400, retry_form=form)


@staff_only
@require_POST
def staff_delete(request, pk):
    submission = _staff_submission(pk)
    form = DeleteForm(request.POST, submission=submission)
    if form.is_valid():
        try:
            moderation.submission_delete(actor=request.user, submission=submission,
                                         reason=form.cleaned_data["reason"])
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"submission {pk} ({submission.model.name} on "
                                      f"{submission.benchmark.slug}) is deleted")
            return redirect("staff:submissions")
    return _moderation_page(request, submission, 400, delete_form=form)


# --- staff: quotas --------------------------------------------------------------------------


@staff_only
@require_http_methods(["GET", "POST"])
def staff_quotas(request):
    form = QuotaForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        user = data["username"]
        try:
            moderation.quota_override(actor=request.user, user=user, per_day=data["per_day"],
                                      in_flight=data["in_flight"], reason=data["reason"])
        except ServiceError as exc:
            form.add_error(None, exc)
        else:
            left = quota_left(user)
            messages.success(request, f"{user.get_username()} may now submit {left['per_day']} "
                                      f"per 24 hours, {left['in_flight_limit']} at once")
            return redirect("staff:quotas")
    overrides = QuotaOverride.objects.select_related("user", "set_by").order_by(
        "user__username")
    return render(request, "submissions/staff_quotas.html",
                  {"form": form, "overrides": overrides},
                  status=400 if request.method == "POST" else 200)
