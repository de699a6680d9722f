"""Finalists' reproducibility check: organizers invite the finalists of a final phase (the top
N of each track's official ranking, or the teams they name), whose members are e-mailed; a
member of an invited team uploads a reproducibility package (a .zip or .tar.gz of code,
environment files, prompts, tool-call records, intermediate artifacts, seeds and runtimes),
read by the uploads' safe archive reader (submissions.archives) within CHALLENGE_PACKAGE_*
limits and kept as sent; organizers download it and mark the team verified or disqualified,
with a reason that is public for a disqualification. Every step is audited."""

from __future__ import annotations

import uuid
from pathlib import Path

from django.conf import settings
from django.core import mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Membership, Phase, Team, Verification
from challenges.official import official_ranking, phase_boards
from config.errors import ServiceError
from scoring.kinds.files import CHUNK_BYTES, raise_ours, why
from submissions.archives import (
    ARCHIVE_ERRORS,
    ArchiveRefused,
    Limits,
    list_archive,
    open_archive,
)

DEFAULT_FINALISTS = 3  # per track: the "top three per track are invited"


def package_limits() -> Limits:
    """The archive reader's limits for a package: members and unpacked bytes from settings;
    the audio limits do not apply (nothing in it is listened to)."""
    return Limits(max_files=settings.CHALLENGE_PACKAGE_MAX_FILES,
                  max_unpacked_bytes=settings.CHALLENGE_PACKAGE_MAX_UNPACKED_BYTES,
                  max_audio_seconds=0.0, max_output_bytes=settings.CHALLENGE_PACKAGE_MAX_BYTES,
                  max_sample_rate=0, max_channels=0, max_ratio=float("inf"),
                  ratio_floor_bytes=settings.CHALLENGE_PACKAGE_MAX_UNPACKED_BYTES)


def _audit(actor, verification: Verification, *, before: dict, after: dict, reason: str = "",
           public: bool = False) -> None:
    """One record per board of the phase when public (each board's changelog says it), else
    one record."""
    slugs = [b.benchmark.slug for b in phase_boards(verification.phase)] if public else [""]
    for slug in slugs or [""]:
        audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=verification,
                     before=before, after=after, reason=reason, benchmark_slug=slug,
                     public=public)


def finalists(phase: Phase, top: int = DEFAULT_FINALISTS) -> list[Team]:
    """The teams in the top `top` ranks of any track's official ranking of the phase
    (disqualified teams are not ranked), in the order found."""
    found: dict[int, Team] = {}
    for board in phase_boards(phase):
        for row in official_ranking(board, deltas=False).ranked:
            if row.rank <= top and row.team_id not in found:
                found[row.team_id] = Team.objects.get(pk=row.team_id)
    return list(found.values())


def finalists_invite(*, phase: Phase, actor, top: int | None = None,
                     teams: list[Team] | None = None) -> list[Verification]:
    """Invite the top `top` teams of each track (DEFAULT_FINALISTS when neither is given) or
    the `teams` named, to upload a package; teams invited already keep their state. The
    verifications made."""
    if phase.kind != Phase.Kind.FINAL:
        raise ServiceError(f"{phase.name} is a development phase: finalists are invited from "
                           "a final phase")
    if teams is None:
        if top is not None and top < 1:
            raise ServiceError("invite at least one team per track")
        teams = finalists(phase, top or DEFAULT_FINALISTS)
    strangers = [t.name for t in teams if t.challenge_id != phase.challenge_id]
    if strangers:
        raise ServiceError(f"not teams of this challenge: {', '.join(strangers)}")
    if not teams:
        raise ServiceError("no team to invite: no track has a ranked team yet")
    made = []
    with transaction.atomic():
        for team in teams:
            verification, created = Verification.objects.get_or_create(phase=phase, team=team)
            if created:
                made.append(verification)
                _audit(actor, verification, before={}, after={"state": verification.state},
                       reason="invited to the reproducibility check")
        transaction.on_commit(lambda: invitations_send(made), robust=True)
    return made


def invitations_send(verifications: list[Verification]) -> int:
    """E-mail each accepted member of the invited teams (one message each) what to upload and
    where. The number sent."""
    messages = []
    for verification in verifications:
        phase = verification.phase
        url = settings.SITE_URL + reverse("challenges:finalist-package",
                                          args=[phase.challenge.slug])
        for membership in Membership.objects.filter(
                team_id=verification.team_id, accepted_at__isnull=False,
                user__is_active=True).select_related("user"):
            if not membership.user.email:
                continue
            context = {"phase": phase, "challenge": phase.challenge,
                       "team": verification.team, "user": membership.user, "url": url,
                       "max_bytes": settings.CHALLENGE_PACKAGE_MAX_BYTES,
                       "max_files": settings.CHALLENGE_PACKAGE_MAX_FILES}
            subject = render_to_string("challenges/public/email/invited_subject.txt", context)
            body = render_to_string("challenges/public/email/invited_body.txt", context)
            messages.append(mail.EmailMessage(" ".join(subject.split()), body, None,
                                              [membership.user.email]))
    if not messages:
        return 0
    with mail.get_connection() as connection:
        return connection.send_messages(messages) or 0


def member_verifications(phase_or_challenge, user) -> list[Verification]:
    """The verifications of the teams `user` is an accepted member of, in the challenge (or
    phase) given."""
    if user is None or not user.is_authenticated:
        return []
    challenge_id = getattr(phase_or_challenge, "challenge_id", None) or phase_or_challenge.pk
    teams = Membership.objects.filter(challenge_id=challenge_id, user=user,
                                      accepted_at__isnull=False).values("team_id")
    found = Verification.objects.filter(team_id__in=teams, phase__challenge_id=challenge_id)
    if isinstance(phase_or_challenge, Phase):
        found = found.filter(phase=phase_or_challenge)
    return list(found.select_related("phase", "team").order_by("phase__closes_at", "id"))


def package_folder(verification: Verification) -> Path:
    return (Path(settings.MEDIA_ROOT) / "challenges" / str(verification.phase.challenge_id)
            / "verification" / str(verification.pk))


def package_path(verification: Verification) -> Path | None:
    """The package on disk, or None when there is none (or its file is gone)."""
    if not verification.package:
        return None
    path = Path(settings.MEDIA_ROOT) / verification.package
    return path if path.is_file() else None


def package_read(path: Path, name: str) -> list[list]:
    """The package's files [[path, bytes], ...] after reading each whole, or ServiceError with
    every reason to refuse it, each naming the member: kinds, names that would leave its
    folder, links, encrypted members, counts and sizes within the limits, and members that
    unpack to more than their headers declare. Nothing is written."""
    limits = package_limits()
    problems: list[str] = []
    try:
        with open_archive(path) as reader:
            if reader is None:
                raise ServiceError(f"{name}: not a .zip or .tar.gz archive")
            listing = list_archive(reader, path, limits, problems)
            if listing is None:
                raise ServiceError([p.replace(path.name, name, 1) for p in problems])
            files = []
            for member, entry in listing.files.items():
                if _unpacked(reader, entry) > entry.size:
                    raise ServiceError(f"{name}: member {entry.name!r} unpacks to more than "
                                       f"the {entry.size} bytes its header declares")
                files.append([member, entry.size])
    except ArchiveRefused as exc:
        raise ServiceError(f"{name}: {exc}") from None
    except ARCHIVE_ERRORS as exc:
        raise_ours(exc)
        raise ServiceError(f"{name}: damaged archive: {why(exc)}") from None
    if not files:
        raise ServiceError(f"{name}: the archive holds no file")
    return files


def _unpacked(reader, entry) -> int:
    """The bytes a member really unpacks to, read through (at most one chunk past what its
    header declares)."""
    total = 0
    with reader.open(entry) as source:
        while chunk := source.read(CHUNK_BYTES):
            total += len(chunk)
            if total > entry.size:
                break
    return total


def package_upload(*, verification: Verification, user, upload) -> Verification:
    """Keep `upload` (an UploadedFile) as the team's package once read and found within the
    limits; a package sent before is replaced. Refused to anyone but an accepted member of
    the team, and once the organizers decided."""
    if not Membership.objects.filter(team_id=verification.team_id, user=user,
                                     accepted_at__isnull=False).exists():
        raise ServiceError("only a member of the team may upload its package", code="conflict")
    if verification.state in (Verification.State.VERIFIED, Verification.State.DISQUALIFIED):
        raise ServiceError(f"the organizers have decided ({verification.state}): the package "
                           "can no longer be changed", code="conflict")
    name = Path(upload.name or "package").name[:200]
    limit = settings.CHALLENGE_PACKAGE_MAX_BYTES
    if upload.size > limit:
        raise ServiceError(f"{name}: {upload.size} bytes, above the limit of {limit}")
    folder = package_folder(verification)
    folder.mkdir(parents=True, exist_ok=True)
    incoming = folder / f"incoming-{uuid.uuid4().hex}"
    try:
        with open(incoming, "xb") as sink:
            for chunk in upload.chunks():
                sink.write(chunk)
        files = package_read(incoming, name)
        with open(incoming, "rb") as head:
            suffix = ".zip" if head.read(2) == b"PK" else ".tar.gz"
        kept = folder / f"package-{timezone.now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}{suffix}"
        incoming.rename(kept)
    finally:
        incoming.unlink(missing_ok=True)
    with transaction.atomic():
        verification = Verification.objects.select_for_update().get(pk=verification.pk)
        if verification.state in (Verification.State.VERIFIED,
                                  Verification.State.DISQUALIFIED):
            kept.unlink(missing_ok=True)
            raise ServiceError("the organizers decided while the package was read",
                               code="conflict")
        old = package_path(verification)
        before = {"state": verification.state, "package_files": len(verification.package_files)}
        verification.state = Verification.State.SUBMITTED
        verification.package = str(kept.relative_to(settings.MEDIA_ROOT))
        verification.package_files = files
        verification.uploaded_at = timezone.now()
        verification.save(update_fields=["state", "package", "package_files", "uploaded_at"])
        _audit(user, verification, before=before,
               after={"state": verification.state, "package_files": len(files),
                      "package_bytes": kept.stat().st_size},
               reason=f"reproducibility package {name} uploaded")
        if old is not None and old != kept:
            transaction.on_commit(lambda: old.unlink(missing_ok=True))
    return verification


def verification_decide(*, verification: Verification, actor, state: str,
                        reason: str) -> Verification:
    """Mark the team verified or disqualified. A disqualification needs a reason, which is
    public (in the results and each board's changelog); the team leaves the ranking."""
    reason = (reason or "").strip()
    if state not in (Verification.State.VERIFIED, Verification.State.DISQUALIFIED):
        raise ServiceError("decide verified or disqualified")
    if state == Verification.State.DISQUALIFIED and not reason:
        raise ServiceError({"reason": ["a disqualification needs a reason (it is public)"]})
    with transaction.atomic():
        verification = Verification.objects.select_for_update() \
            .select_related("phase", "team").get(pk=verification.pk)
        before = {"state": verification.state, "reason": verification.reason}
        verification.state = state
        verification.reason = reason
        verification.decided_by = actor if actor is not None and actor.is_authenticated \
            else None
        verification.decided_at = timezone.now()
        verification.save(update_fields=["state", "reason", "decided_by", "decided_at"])
        _audit(actor, verification, before=before, after={"state": state, "reason": reason},
               reason=reason or state,
               public=state == Verification.State.DISQUALIFIED)
    return verification
