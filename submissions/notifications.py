"""Emails to authors when a submission ends: finished, failed (on our side, in validation or
scoring) or rejected.

Scoring knows nothing of submissions, so a run's end is noticed here: a periodic sweep
(tasks.notify_authors) lists the submissions whose state differs from the one their author was
last told about, and `submission_notify` claims each with a conditional UPDATE of
`notified_state` before sending, so a duplicate delivery or a second sweeper sends nothing.
Rejections and failed validations made by submissions code notify at once as well.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db.models import F, Q
from django.template.loader import render_to_string
from django.urls import reverse

from scoring import visibility
from scoring.kinds import get_kind
from scoring.models import ScoringRun, SliceResult
from submissions.models import Submission

log = logging.getLogger(__name__)


def status_page(submission: Submission) -> str:
    """The submission's status page, as an email gives it."""
    return settings.SITE_URL.rstrip("/") + reverse("leaderboard:submission-status",
                                                   args=[submission.pk])


def author_news(submission: Submission, subject: str, body: str, *, about: str) -> None:
    """Email the author news of a change already made (an embargo's release, a reveal): the
    change stands whether or not the email leaves, so a failure is logged, not raised."""
    if not submission.owner.email:
        return
    try:
        send_mail(subject, body, None, [submission.owner.email])
    except Exception:
        log.exception("emailing the author of submission %s about %s failed", submission.pk,
                      about)


def submissions_to_notify() -> list[int]:
    """Submissions that ended in a state their author has not been emailed about.

    Ended runs are found through ScoringRun's status index and the current_run foreign key.
    """
    rejected = Q(status__in=[Submission.Status.REJECTED, Submission.Status.FAILED]) \
        & ~Q(notified_state=F("status"))
    run_ended = (Q(status=Submission.Status.QUEUED,
                   current_run__status__in=[ScoringRun.Status.FINISHED,
                                            ScoringRun.Status.FAILED])
                 & ~Q(notified_state=F("current_run__status")))
    return list(Submission.objects.filter(rejected | run_ended).order_by("id")
                .values_list("id", flat=True))


def submission_notify(*, submission_id: int) -> bool:
    """Email the author about the submission's end, once per state; True if an email went out.

    The claim comes first: when sending fails the claim is given back, and the next sweep
    tries again.
    """
    submission = (Submission.objects.select_related("owner", "model", "benchmark", "current_run")
                  .get(id=submission_id))
    state = submission.state
    if state not in Submission.NOTIFIED_STATES or submission.notified_state == state:
        return False
    claimed = Submission.objects.filter(id=submission_id,
                                        notified_state=submission.notified_state)
    if not claimed.update(notified_state=state):
        return False  # another delivery has it
    if not submission.owner.email:
        log.info("submission %s %s: its author has no email address", submission_id, state)
        return False
    try:
        _send(submission, state)
    except Exception:
        Submission.objects.filter(id=submission_id, notified_state=state) \
            .update(notified_state=submission.notified_state)
        raise
    return True


def _send(submission: Submission, state: str) -> None:
    context = {
        "submission": submission, "state": state,
        "url": status_page(submission),
        # A hidden-rubric benchmark's figures only as its phase shows them to its author
        # (scoring.visibility); the e-mail names no per-item result in any case.
        "figures": _headline_figures(submission) if state == "finished" and visibility
        .disclosure(submission.benchmark, submission.owner) >= visibility.Disclosure.OVERALL
        else [],
        "errors": submission.report.get("errors", []) if state == "rejected" else [],
        "failure": submission.current_run.error
        if state == "failed" and submission.status == Submission.Status.QUEUED else "",
        "notice": submission.failure_notice() if state == "failed" else "",
    }
    subject = render_to_string("submissions/email/notify_subject.txt", context)
    body = render_to_string("submissions/email/notify_body.txt", context)
    send_mail(" ".join(subject.split()), body, None, [submission.owner.email])


def _headline_figures(submission: Submission) -> list[tuple[str, float]]:
    """The overall figures of the current run, labelled as the board labels them."""
    overall = SliceResult.objects.filter(run_id=submission.current_run_id,
                                         dimension=SliceResult.OVERALL, bucket="").first()
    if overall is None:
        return []
    kind = get_kind(submission.benchmark.kind)
    figures = overall.figures()
    return [(m.label, figures[m.key]) for m in kind.metrics if figures.get(m.key) is not None]
