"""Pages and actions of moderation: the author's visibility and representative choices, and
the staff pages (submissions to moderate, quota overrides, the audit log).

Staff pages and actions answer 404 to anyone but staff (`staff_only`), GET and POST alike.
Every action is a POST with a reason, and is audited by the service it calls.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audit.selectors import audit_events, event_rows
from config.staff import staff_only
from scoring.models import Benchmark, ScoringRun
from submissions import moderation, selectors
from submissions.models import QuotaOverride, Submission
from submissions.services import quota_left

PAGE_SIZE = 50
REASON = {"max_length": 1000, "widget": forms.Textarea(attrs={"rows": 2})}
STATES = [("", "any state"), *[(s, s) for s in (
    "uploaded", "validating", "rejected", *ScoringRun.Status.values)]]


# --- the author's choices ------------------------------------------------------------------


class VisibilityForm(forms.Form):
    public = forms.TypedChoiceField(choices=[("true", "public"), ("false", "private")],
                                    coerce=lambda v: v == "true")


class RepresentativeForm(forms.Form):
    chosen = forms.TypedChoiceField(choices=[("true", "choose"), ("false", "withdraw")],
                                    coerce=lambda v: v == "true")


def _own(request, pk) -> Submission:
    """The author's own submission; staff see others' (submission_get) but may not change
    an author's choices: 403 for them, 404 for everyone else."""
    submission = selectors.submission_get(user=request.user, pk=pk, write=True)
    if submission.owner_id != request.user.pk:
        raise PermissionDenied("only its author may change this submission's visibility")
    return submission


def _back(request, submission: Submission):
    target = request.POST.get("next", "")
    if target not in ("list", "page"):
        return redirect("submissions:detail", pk=submission.pk)
    if target == "list":
        return redirect("submissions:list")
    return redirect("leaderboard:submission", pk=submission.pk)


@login_required
@require_POST
def submission_visibility(request, pk):
    submission = _own(request, pk)
    form = VisibilityForm(request.POST)
    if not form.is_valid():
        messages.error(request, "choose public or private")
        return _back(request, submission)
    try:
        moderation.submission_set_public(actor=request.user, submission=submission,
                                         public=form.cleaned_data["public"])
    except moderation.ModerationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"submission {pk} is now "
                                  f"{'public' if form.cleaned_data['public'] else 'private'}")
    return _back(request, submission)


@login_required
@require_POST
def submission_representative(request, pk):
    submission = _own(request, pk)
    form = RepresentativeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "choose or withdraw the representative")
        return _back(request, submission)
    chosen = form.cleaned_data["chosen"]
    try:
        moderation.model_set_representative(actor=request.user, submission=submission,
                                            chosen=chosen)
    except moderation.ModerationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"submission {pk} now represents {submission.model.name} on "
                                  "the board" if chosen else
                         f"{submission.model.name}'s latest public submission represents it "
                         "on the board again")
    return _back(request, submission)


# --- staff: submissions --------------------------------------------------------------------


class QueueForm(forms.Form):
    """The moderation page's filters (GET)."""

    benchmark = forms.ChoiceField(required=False)
    state = forms.ChoiceField(required=False, choices=STATES)
    flagged = forms.BooleanField(required=False)
    hidden = forms.BooleanField(required=False)
    q = forms.CharField(required=False, max_length=200, label="Model or author")
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data):
        super().__init__(data)
        slugs = Benchmark.objects.order_by("slug").values_list("slug", flat=True).distinct()
        self.fields["benchmark"].choices = [("", "every benchmark"), *[(s, s) for s in slugs]]


class HideForm(forms.Form):
    hidden = forms.TypedChoiceField(choices=[("true", "hide"), ("false", "unhide")],
                                    coerce=lambda v: v == "true")
    reason = forms.CharField(**REASON, help_text="Kept in the audit log; public on the "
                             "benchmark's changelog if the submission is public.")


class FlagForm(forms.Form):
    flagged = forms.TypedChoiceField(choices=[("true", "flag"), ("false", "remove the flag")],
                                     coerce=lambda v: v == "true")
    reason = forms.CharField(**REASON, help_text="A flag's reason is shown publicly beside "
                             "the submission on the board.")


class DeleteForm(forms.Form):
    reason = forms.CharField(**REASON)
    confirm = forms.CharField(max_length=20, label="Type the submission's number to confirm")

    def __init__(self, data, *, submission: Submission):
        super().__init__(data)
        self.submission = submission

    def clean_confirm(self):
        if self.cleaned_data["confirm"].strip() != str(self.submission.pk):
            raise forms.ValidationError(f"type {self.submission.pk} to confirm the deletion")
        return self.cleaned_data["confirm"]


@staff_only
@require_GET
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
        "events": event_rows(audit_events(object_type="submissions.submission",
                                          object_id=str(submission.pk))[:50]),
        **forms_,
    }
    return render(request, "submissions/staff_submission.html", context, status=status)


@staff_only
@require_GET
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
        except moderation.ModerationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"submission {pk} is "
                                      f"{'hidden' if hidden else 'shown again'}")
            return redirect("submissions:staff-submission", pk=pk)
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
        except moderation.ModerationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"submission {pk} is "
                                      f"{'flagged' if flagged else 'no longer flagged'}")
            return redirect("submissions:staff-submission", pk=pk)
    return _moderation_page(request, submission, 400, flag_form=form)


@staff_only
@require_POST
def staff_delete(request, pk):
    submission = _staff_submission(pk)
    form = DeleteForm(request.POST, submission=submission)
    if form.is_valid():
        try:
            moderation.submission_delete(actor=request.user, submission=submission,
                                         reason=form.cleaned_data["reason"])
        except moderation.ModerationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"submission {pk} ({submission.model.name} on "
                                      f"{submission.benchmark.slug}) is deleted")
            return redirect("submissions:staff-submissions")
    return _moderation_page(request, submission, 400, delete_form=form)


# --- staff: quotas --------------------------------------------------------------------------


class QuotaForm(forms.Form):
    username = forms.CharField(max_length=150)
    per_day = forms.IntegerField(required=False, min_value=0, label="Submissions per 24 hours",
                                 help_text="blank: the site's limit")
    in_flight = forms.IntegerField(required=False, min_value=0, label="Scored at once",
                                   help_text="blank: the site's limit")
    reason = forms.CharField(**REASON, help_text="Kept in the audit log (not public). Both "
                             "limits blank removes the user's override.")

    def clean_username(self):
        name = self.cleaned_data["username"].strip()
        try:
            return get_user_model().objects.get(username=name)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(f"no user {name!r}") from None


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
        except moderation.ModerationError as exc:
            form.add_error(None, str(exc))
        else:
            left = quota_left(user)
            messages.success(request, f"{user.get_username()} may now submit {left['per_day']} "
                                      f"per 24 hours, {left['in_flight_limit']} at once")
            return redirect("submissions:staff-quotas")
    overrides = QuotaOverride.objects.select_related("user", "set_by").order_by(
        "user__username")
    return render(request, "submissions/staff_quotas.html",
                  {"form": form, "overrides": overrides},
                  status=400 if request.method == "POST" else 200)
