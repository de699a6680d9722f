"""Anonymous entries: a submission shown as "Anonymous submission N" until a date its author
chose (double-blind review), then under its model's name, with a private review link.

Until its reveal an anonymous submission belongs to a pseudonym: a model of its own
(ModelEntry.pseudonym) named "Anonymous submission N", holding nothing of the real model but
its base family (so the judge's-family mark stays honest), whose owner no page names. Every
page, file, export, badge, snapshot and cache reads a submission's model, so none of them can
name the real one before the date: there is no second rule to keep. The real model waits in
`Submission.reveal_as`, with the details sent for it.

A periodic task (submissions.tasks.release_embargoes) reveals each entry whose date has come:
in one transaction the submission moves to its model, the pseudonym goes, and the board is
told it changed; then the author is emailed. A name another author made public meanwhile
keeps the entry private under its name (the author is told why), as an upload of it would
have been refused. Attempts count either way, apart until the reveal
(submissions.attempts): the anonymous row counts its own, the author's named rows leave it
out, and from the reveal on the author's count holds it."""

from __future__ import annotations

import secrets
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.db import transaction
from django.http import Http404
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from scoring.boards import board_changed
from submissions.claims import claim_or_keep_private
from submissions.models import AnonymousNumber, ModelEntry, Submission
from submissions.names import name_skeletons
from submissions.notifications import author_news, status_page

PREFIX = "Anonymous submission"
# The furthest an anonymous entry's reveal may reach, as an embargo's: a year.
ANONYMOUS_MAX_DAYS = 366


@lru_cache(maxsize=1)
def _reserved() -> tuple[str, ...]:
    """The pseudonyms' prefix as every name check compares it (made on first use: its
    skeletons read Unicode's confusables, which no process should load just to start)."""
    return tuple(name_skeletons(PREFIX))


def pseudonym_name(number: int) -> str:
    return f"{PREFIX} {number}"


def reserved_name_problem(name: str) -> str | None:
    """Why an author's model name cannot be taken: one that reads as a pseudonym would pass
    for an anonymous entry."""
    if any(mine.startswith(reserved) for mine in name_skeletons(name) for reserved in _reserved()):
        return (f"names beginning with '{PREFIX}' are kept for anonymous entries; choose "
                "anonymous_until to show this one anonymously")
    return None


def anonymous_problem(anonymous_until, publish_at=None) -> str | None:
    """Why a chosen reveal moment cannot be an anonymous entry's, or None."""
    if anonymous_until is None:
        return None
    now = timezone.now()
    if anonymous_until <= now:
        return ("the reveal date (anonymous_until) must be in the future (UTC); leave it "
                "empty to show the entry under its name")
    if anonymous_until > now + timedelta(days=ANONYMOUS_MAX_DAYS):
        return f"the reveal date (anonymous_until) is at most {ANONYMOUS_MAX_DAYS} days ahead"
    if publish_at is not None and anonymous_until <= publish_at:
        return ("the reveal date (anonymous_until) must come after the publication date "
                "(publish_at): an entry revealed before it is published is never anonymous")
    return None


def anonymous_entry(submission: Submission, until) -> None:
    """Make `submission`, of its real model, an anonymous entry until `until`: it moves to a
    new pseudonym and its model waits in `reveal_as` (called inside the upload's transaction,
    before the submission is saved; the model's details wait for the reveal too)."""
    real = submission.model
    submission.model, submission.anonymous_number = _pseudonym_take(user=submission.owner,
                                                                    real=real)
    submission.reveal_as, submission.anonymous_until = real, until
    submission.review_token = secrets.token_urlsafe(32)
    submission.public = True


def _pseudonym_take(*, user, real: ModelEntry) -> tuple[ModelEntry, int]:
    """A new pseudonym for one anonymous entry of `real` and its number (site-wide, never
    given twice: AnonymousNumber)."""
    number = AnonymousNumber.objects.create().pk
    pseudonym = ModelEntry.objects.create(owner=user, name=pseudonym_name(number),
                                          base_family=real.base_family, pseudonym=True)
    return pseudonym, number


def review_link(submission: Submission) -> str:
    if not submission.review_token:
        return ""
    return settings.SITE_URL.rstrip("/") + reverse("submissions:review",
                                                   args=[submission.review_token])


def review_target(token: str) -> str:
    """Where a review link leads: the entry's pseudonym's page while it is anonymous, its
    model's page after; 404 while the entry is on no public page (private, hidden, embargoed,
    deleted), as for any address of it."""
    found = (Submission.objects.shown().filter(review_token=token).exclude(review_token="")
             .values_list("model_id", flat=True).first()) if token else None
    if found is None:
        raise Http404("no such review link")
    return reverse("leaderboard:model", args=[found])


def reveals_due() -> list[int]:
    return list(Submission.objects.filter(anonymous_until__lte=timezone.now())
                .order_by("anonymous_until").values_list("id", flat=True))


def reveal(submission_id: int) -> bool:
    """Reveal one anonymous entry whose date has come; True when it did (False: revealed
    already, or its date moved). The author is emailed after the change commits."""
    with transaction.atomic():
        row = (Submission.objects.select_for_update(of=("self",))
               .select_related("model", "reveal_as", "benchmark", "owner")
               .filter(pk=submission_id).first())
        if row is None or row.anonymous_until is None or row.anonymous_until > timezone.now():
            return False
        pseudonym, real = row.model, row.reveal_as
        refused = claim_or_keep_private(row, real.name)
        before = {"anonymous_until": row.anonymous_until.isoformat(), "model": pseudonym.name}
        row.model, row.reveal_as, row.anonymous_until = real, None, None
        row.representative = False  # it chose among the pseudonym's submissions, not real's
        details, row.model_details = row.model_details, {}
        row.save(update_fields=["model", "reveal_as", "anonymous_until", "representative",
                                "model_details", "public"])
        if row.public and details and row.status == Submission.Status.QUEUED:
            # As services._apply_model_details: only an upload that passed validation.
            ModelEntry.objects.filter(pk=real.pk).update(**details)
        if not Submission.objects.filter(model=pseudonym).exists():
            pseudonym.delete()
        # The model's boards (its details may change) and every version of this one, at once.
        board_changed(*Submission.objects.filter(model=real).values_list(
            "benchmark_id", flat=True).distinct(), slug=row.benchmark.slug)
        audit_record(actor=None, action=AuditEvent.Action.VISIBILITY, obj=row, before=before,
                     after={"anonymous_until": None, "model": real.name, "public": row.public},
                     reason=("anonymity over: kept private, " + refused) if refused
                     else "anonymity over: shown under its name",
                     benchmark_slug=row.benchmark.slug)
        transaction.on_commit(lambda: _tell(row, pseudonym.name, refused))
    return True


def _tell(submission: Submission, pseudonym: str, refused: str) -> None:
    page = status_page(submission)
    name = submission.model.name
    if refused:
        subject = f"Submission {submission.pk}: its anonymity is over, but it stays private"
        body = (f"Your submission {submission.pk} ({pseudonym} on "
                f"{submission.benchmark.title}) is no longer anonymous, but it could not be "
                f"shown as {name}: {refused}.\n\nRename the model and publish it from its "
                f"page: {page}\n")
    else:
        subject = f"Submission {submission.pk} is now shown as {name}"
        body = (f"Your submission {submission.pk} on {submission.benchmark.title}, shown as "
                f"{pseudonym} until now, is now on the board under its name, {name}. Its "
                f"review link leads to the model's page from now on.\n\n{page}\n")
    author_news(submission, subject, body, about="its reveal")
