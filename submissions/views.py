import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.verification import verified_email_for_uploads
from config.celery import BrokerUnavailable
from config.errors import STORAGE_FULL, STORAGE_FULL_RETRY_SECONDS, ServiceError, storage_full
from config.throttle import limit_posts
from scoring import visibility
from submissions import anonymity, selectors
from submissions.api import file_response
from submissions.forms import SubmissionForm
from submissions.quota import quota_shown
from submissions.services import (
    METADATA_FIELDS,
    model_family_set,
    submission_cancel,
    submission_create,
)

log = logging.getLogger(__name__)


@login_required
def submission_list(request):
    submissions = list(selectors.submissions_of(request.user))
    # No figure of a hidden-rubric benchmark below OVERALL, its author's own included
    # (scoring.visibility).
    headlines = selectors.headline_figures([
        s for s in submissions
        if visibility.disclosure(s.benchmark, request.user) >= visibility.Disclosure.OVERALL])
    for submission in submissions:
        submission.headline = headlines.get(submission.id)
    return render(request, "submissions/list.html", {
        "submissions": submissions,
        "quota": quota_shown(request.user),
    })


@verified_email_for_uploads
@limit_posts(group="upload", rate_setting="THROTTLE_UPLOAD", keys=("user",),
             what="upload attempts")
def upload(request):
    try:
        return _upload(request)
    except OSError as exc:
        if not storage_full(exc):
            raise
        log.error("storage full", exc_info=exc)  # our failure: the author is told so
        response = render(request, "submissions/upload.html", {
            "form": SubmissionForm(), "quota": quota_shown(request.user),
            "storage_full": STORAGE_FULL}, status=503)
        response["Retry-After"] = str(STORAGE_FULL_RETRY_SECONDS)
        return response


def _upload(request):
    form = SubmissionForm(request.POST or None, request.FILES or None)
    status = 400 if request.method == "POST" else 200
    retry_after = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            submission = submission_create(
                user=request.user, benchmark=data["benchmark"], model_name=data["model_name"],
                metadata={k: data[k] for k in METADATA_FIELDS}, public=data["public"],
                predictions=data["predictions"], archive=data["audio"],
                options={"align": data["align"]}, publish_at=data.get("publish_at"),
                anonymous_until=data.get("anonymous_until"),
            )
        except ServiceError as exc:
            form.add_error(None, exc)  # by field where the service names one
            if exc.code == "quota":
                status, retry_after = 429, exc.retry_after
        except BrokerUnavailable as exc:
            form.add_error(None, str(exc))
            status, retry_after = 503, exc.retry_after
        else:
            return redirect("leaderboard:submission-status", pk=submission.pk)
    response = render(request, "submissions/upload.html",
                      {"form": form, "quota": quota_shown(request.user)}, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def submission_file(request, pk, name):
    """A results file of the submission's current run, or for its author and staff of one of
    its runs (?run=ID); anyone may download a public, published submission's."""
    submission = selectors.submission_get(user=request.user, pk=pk)
    return file_response(submission, name, run_id=request.GET.get("run"),
                         all_runs=selectors.manages(request.user, submission),
                         user=request.user)


@require_http_methods(["GET", "POST"])
@login_required
def model_family_view(request, model_id):
    """The owner declares the system's base model family (anyone else: 404); the form is on
    the model page, where a GET leads."""
    if request.method == "GET":
        return redirect("leaderboard:model", model_id=model_id)
    try:
        model_family_set(user=request.user, model_id=model_id,
                         family=request.POST.get("base_family", ""))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Base model family saved.")
    return redirect("leaderboard:model", model_id=model_id)


@require_POST
def submission_cancel_view(request, pk):
    try:
        submission_cancel(submission=selectors.submission_get(user=request.user, pk=pk,
                                                              write=True))
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect("leaderboard:submission-status", pk=pk)


@never_cache
def review_link(request, token):
    """An anonymous entry's private review link: to the entry's page, under its pseudonym
    until its reveal and its model's name after (submissions.anonymity); 404 while the entry
    is on no public page."""
    response = redirect(anonymity.review_target(token))
    response["X-Robots-Tag"] = "noindex"
    return response
