"""Moderation: staff hide, flag, delete or retry (after a failure on our side) submissions and
override quotas; authors choose a
submission's visibility and which submission represents their model on a board.

Every change writes its audit record (audit.services) in the transaction that makes it. Staff
moderation of a public submission is public, on its benchmark's changelog; an author's own
choices and quota overrides are not.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from config.celery import BrokerUnavailable, broker_check
from config.errors import ServiceError
from scoring import media
from scoring.boards import board_changed
from scoring.models import ScoringRun
from submissions.attempts import attempt_keep
from submissions.claims import name_claim
from submissions.models import ModelEntry, QuotaOverride, Submission
from submissions.services import submission_folder, submission_retry

Action = AuditEvent.Action


def _require_staff(actor) -> None:
    if not (actor is not None and actor.is_authenticated and actor.is_staff):
        raise PermissionDenied("only staff may moderate submissions")


def _require_owner(actor, submission: Submission) -> None:
    if actor is None or actor.pk != submission.owner_id:
        raise PermissionDenied(f"only the author of submission {submission.pk} may change its "
                               "visibility; staff hide or flag it instead")


def _reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ServiceError(f"give a reason for {what}: it is kept in the audit log")
    return reason


def _locked(submission: Submission) -> Submission:
    """The submission's row, locked for the transaction and read afresh."""
    try:
        return (Submission.objects.select_for_update(of=("self",))
                .select_related("model", "benchmark", "current_run", "owner")
                .get(pk=submission.pk))
    except Submission.DoesNotExist:
        raise ServiceError(f"no submission {submission.pk}") from None


# The largest a quota's column (a PositiveIntegerField: integer on PostgreSQL) holds.
QUOTA_MAX = 2**31 - 1


def _lock_model(submission: Submission) -> None:
    """Lock the submission's model row: choices of its representative, made at once from
    several submissions of the model, then run one after another (the unique constraint
    submission_one_representative would otherwise refuse all but one). Taken before any
    submission's row, so two choices never hold each other's rows."""
    list(ModelEntry.objects.select_for_update().filter(pk=submission.model_id).values("pk"))


def submission_state(submission: Submission) -> dict:
    """What an audit record keeps of a submission."""
    return {"id": submission.pk, "model": submission.model.name,
            "owner": submission.owner.get_username(), "benchmark": submission.benchmark.slug,
            "version": submission.benchmark.version, "status": submission.state,
            "public": submission.public, "hidden": submission.hidden,
            "flag_reason": submission.flag_reason, "representative": submission.representative,
            "coverage": submission.coverage, "created_at": submission.created_at.isoformat()}


def _record(*, actor, action, submission: Submission, before: dict, after: dict, reason: str,
            public: bool) -> AuditEvent:
    board_changed(slug=submission.benchmark.slug)
    return audit_record(actor=actor, action=action, obj=submission, before=before,
                        after=after, reason=reason, benchmark_slug=submission.benchmark.slug,
                        public=public)


def submission_hide(*, actor, submission: Submission, reason: str,
                    hidden: bool = True) -> Submission:
    """Take a submission off the board and every public page (or put it back)."""
    _require_staff(actor)
    reason = _reason(reason, "hiding a submission" if hidden else "unhiding a submission")
    with transaction.atomic():
        row = _locked(submission)
        if row.hidden == hidden:
            raise ServiceError(f"submission {row.pk} is already "
                                  f"{'hidden' if hidden else 'not hidden'}")
        row.hidden = hidden
        row.save(update_fields=["hidden"])
        _record(actor=actor, action=Action.HIDE, submission=row, before={"hidden": not hidden},
                after={"hidden": hidden}, reason=reason, public=row.public)
    return row


def submission_flag(*, actor, submission: Submission, reason: str,
                    flagged: bool = True) -> Submission:
    """Flag a submission with a public reason, shown beside it on the board (or remove the
    flag: then `reason` says why, in the audit log)."""
    _require_staff(actor)
    reason = _reason(reason, "a flag (it is shown publicly)" if flagged
                     else "removing a flag")
    with transaction.atomic():
        row = _locked(submission)
        if not flagged and not row.flag_reason:
            raise ServiceError(f"submission {row.pk} is not flagged")
        if flagged and row.flag_reason == reason:
            raise ServiceError(f"submission {row.pk} is already flagged for this reason")
        before = {"flag_reason": row.flag_reason}
        row.flag_reason = reason if flagged else ""
        row.save(update_fields=["flag_reason"])
        _record(actor=actor, action=Action.FLAG, submission=row, before=before,
                after={"flag_reason": row.flag_reason}, reason=reason, public=row.public)
    return row


def _still_handled(submission: Submission) -> str:
    """Why a submission cannot be deleted yet ("" if it can): a worker is validating it or
    scoring one of its runs (its first or a rescore), and would find its rows gone."""
    if submission.status in (Submission.Status.UPLOADED, Submission.Status.VALIDATING):
        return f"submission {submission.pk} is {submission.status}: wait for its validation " \
            "to end before deleting it"
    active = list(submission.runs.filter(status__in=ScoringRun.ACTIVE)
                  .values_list("pk", flat=True))
    if active:
        return f"submission {submission.pk} has a scoring run in progress (run " \
            f"{', '.join(map(str, active))}): cancel it and wait for it to stop before " \
            "deleting the submission"
    return ""


def submission_delete(*, actor, submission: Submission, reason: str) -> dict:
    """Delete a submission, the runs scored for it alone (answers and results with them) and
    its files. Returns the state it had, as its audit record keeps it."""
    _require_staff(actor)
    reason = _reason(reason, "deleting a submission")
    with transaction.atomic():
        row = _locked(submission)
        why = _still_handled(row)
        if why:
            raise ServiceError(why)
        before = submission_state(row)
        # A run shared with another submission (none today) stays with it.
        runs = [run.pk for run in row.runs.all() if run.submissions.count() == 1]
        before["runs"] = runs
        _record(actor=actor, action=Action.DELETION, submission=row, before=before,
                after={}, reason=reason, public=row.public)
        folder = submission_folder(row)
        attempt_keep(row)  # its author's attempt count must not fall with it
        row.delete()
        ScoringRun.objects.filter(pk__in=runs).delete()
        # An anonymous entry's pseudonym goes with it (its number is never given again).
        ModelEntry.objects.filter(pk=row.model_id, pseudonym=True, submissions=None).delete()
        transaction.on_commit(lambda: media.folder_delete(folder))
    return before


def submission_retry_failed(*, actor, submission: Submission, reason: str) -> Submission:
    """Staff retry a submission that failed on our side: its validation again (its files were
    kept), or its failed run resumed (services.submission_retry)."""
    _require_staff(actor)
    reason = _reason(reason, "retrying a submission")
    try:
        broker_check()
    except BrokerUnavailable as exc:
        raise ServiceError(str(exc), code="conflict") from None
    with transaction.atomic():
        row = _locked(submission)
        if not row.failed_on_our_side:
            raise ServiceError(f"submission {row.pk} is {row.state}: only one that failed on "
                               "our side can be retried", code="conflict")
        before = {"status": row.state, "error": row.error or row.current_run.error}
        submission_retry(submission_id=row.pk)
        row = _locked(row)
        _record(actor=actor, action=Action.RESCORE, submission=row, before=before,
                after={"status": row.state}, reason=reason, public=False)
    return row


def submission_set_public(*, actor, submission: Submission, public: bool,
                          reason: str = "") -> Submission:
    """The author shows a submission on the public board or takes it back to private."""
    _require_owner(actor, submission)
    with transaction.atomic():
        row = _locked(submission)
        if row.public == public:
            raise ServiceError(f"submission {row.pk} is already "
                                  f"{'public' if public else 'private'}")
        if public:  # its name is then reserved: refused if another author's public one
            name_claim(user=row.owner, benchmark=row.benchmark, name=row.model.name)
        row.public = public
        row.save(update_fields=["public"])
        _record(actor=actor, action=Action.VISIBILITY, submission=row,
                before={"public": not public}, after={"public": public},
                reason=(reason or "").strip(), public=False)
    return row


def model_set_representative(*, actor, submission: Submission, chosen: bool = True,
                             reason: str = "") -> Submission:
    """The author chooses the submission that represents its model on the benchmark's board
    (or withdraws the choice: the model's latest public submission represents it again)."""
    _require_owner(actor, submission)
    with transaction.atomic():
        _lock_model(submission)
        row = _locked(submission)
        if chosen:
            problems = [why for broken, why in (
                (not row.public, "it is private"), (row.hidden, "staff have hidden it"),
                (row.publish_at is not None, "it is embargoed"),
                (row.state != ScoringRun.Status.FINISHED, f"it is {row.state}, not finished"),
            ) if broken]
            if problems:
                raise ServiceError(f"submission {row.pk} cannot represent "
                                      f"{row.model.name} on the board: {'; '.join(problems)}")
        elif not row.representative:
            raise ServiceError(f"submission {row.pk} is not the chosen representative")
        siblings = Submission.objects.filter(model=row.model, benchmark=row.benchmark,
                                             representative=True)
        previous = siblings.values_list("pk", flat=True).first()
        if chosen and previous == row.pk:
            raise ServiceError(f"submission {row.pk} already represents {row.model.name}")
        siblings.update(representative=False)
        if chosen:
            Submission.objects.filter(pk=row.pk).update(representative=True)
        row.representative = chosen
        board_changed(slug=row.benchmark.slug)
        audit_record(actor=actor, action=Action.VISIBILITY, obj=row.model,
                     before={"representative": previous},
                     after={"representative": row.pk if chosen else None},
                     reason=(reason or "").strip(), benchmark_slug=row.benchmark.slug)
    return row


def submission_author_choices(*, actor, submission: Submission, public: bool | None = None,
                              representative: bool | None = None) -> Submission:
    """The author's choices, for the page's buttons and the API alike: public or private,
    and whether it represents its model on the board. Both given are applied together or
    not at all; a choice already in force changes nothing. Raises ServiceError."""
    _require_owner(actor, submission)
    if public is None and representative is None:
        raise ServiceError("give public, representative or both")
    with transaction.atomic():
        if representative is not None:
            _lock_model(submission)
        if public is not None and public != submission.public:
            submission = submission_set_public(actor=actor, submission=submission,
                                               public=public)
        if representative is not None and representative != submission.representative:
            submission = model_set_representative(actor=actor, submission=submission,
                                                  chosen=representative)
    return submission


def quota_override(*, actor, user, per_day: int | None, in_flight: int | None,
                   reason: str) -> QuotaOverride | None:
    """Give a user their own upload limits (None keeps the site's); both None removes the
    override. Returns the override in force afterwards."""
    _require_staff(actor)
    reason = _reason(reason, "a quota override")
    for name, value in (("per_day", per_day), ("in_flight", in_flight)):
        if value is not None and value < 0:
            raise ServiceError(f"{name} must be 0 or more, not {value}")
        if value is not None and value > QUOTA_MAX:
            raise ServiceError(f"{name} must be at most {QUOTA_MAX}, not {value}")
    with transaction.atomic():
        current = QuotaOverride.objects.select_for_update().filter(user=user).first()
        before = current.as_dict() if current else {}
        if per_day is None and in_flight is None:
            if current is None:
                raise ServiceError(f"{user.get_username()} has no quota override to remove")
            current.delete()
            current = None
        else:
            current, _ = QuotaOverride.objects.update_or_create(
                user=user, defaults={"per_day": per_day, "in_flight": in_flight,
                                     "reason": reason, "set_by": actor})
            if before == current.as_dict():
                raise ServiceError(f"{user.get_username()}'s quota is already "
                                      f"{before}")
        audit_record(actor=actor, action=Action.QUOTA, obj=user, before=before,
                     after=current.as_dict() if current else {}, reason=reason)
    return current
