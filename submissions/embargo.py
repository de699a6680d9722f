"""Embargoed submissions: scored now, public on a date the author chose.

While `publish_at` is set a submission is shown nowhere (Submission.SHOWN: the board, its
pages, files, exports and caches all read that rule). A periodic task (tasks.release_embargoes)
releases each one whose date has come: it clears `publish_at` and tells the board it changed,
in one transaction, so that every page and cache sees the entry appear at once; then it emails
the author. A name another author made public meanwhile keeps it private (the author is told
why), as publishing it by hand would have been refused."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from scoring.boards import board_changed
from submissions.claims import claim_or_keep_private
from submissions.models import Submission
from submissions.notifications import author_news, status_page


def embargoes_due() -> list[int]:
    return list(Submission.objects.filter(publish_at__lte=timezone.now()).order_by("publish_at")
                .values_list("id", flat=True))


def embargo_release(submission_id: int) -> bool:
    """Release one embargo whose date has come; True when it did (False: released already,
    or its date moved). The author is emailed after the change commits."""
    with transaction.atomic():
        row = (Submission.objects.select_for_update(of=("self",))
               .select_related("model", "benchmark", "owner").filter(pk=submission_id).first())
        if row is None or row.publish_at is None or row.publish_at > timezone.now():
            return False
        refused = claim_or_keep_private(row, row.model.name)
        before = {"publish_at": row.publish_at.isoformat(), "public": True}
        row.publish_at = None
        row.save(update_fields=["publish_at", "public"])
        board_changed(slug=row.benchmark.slug)
        audit_record(actor=None, action=AuditEvent.Action.VISIBILITY, obj=row, before=before,
                     after={"publish_at": None, "public": row.public},
                     reason=("embargo over: kept private, " + refused) if refused
                     else "embargo over: published", benchmark_slug=row.benchmark.slug)
        transaction.on_commit(lambda: _tell(row, refused))
    return True


def _tell(submission: Submission, refused: str) -> None:
    page = status_page(submission)
    if refused:
        subject = f"Submission {submission.pk}: its embargo is over, but it stays private"
        body = (f"The embargo of your submission {submission.pk} ({submission.model.name} on "
                f"{submission.benchmark.title}) is over, but it could not be published: "
                f"{refused}.\n\nRename the model and publish it from its page: {page}\n")
    else:
        subject = f"Submission {submission.pk} is now public"
        body = (f"Your submission {submission.pk} ({submission.model.name} on "
                f"{submission.benchmark.title}) left its embargo and is now on the public "
                f"board.\n\n{page}\n")
    author_news(submission, subject, body, about="its embargo")
