"""What organizers (and staff) change in a challenge: its organizers (granted by staff), phases,
tracks and the benchmark each track is ranked on in a phase. Every change is audited
(AuditEvent.Action.CHALLENGE) in the transaction that makes it, and is public (each board's
changelog) where the public should know: phase times and what a phase shows, track rules, a
board attached. A change to what a board shows (a phase's `shown`, a board attached or
detached) is a board change (scoring.boards.board_changed), which every page kept per board
state follows."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import (
    Challenge,
    ChallengeBenchmark,
    Entry,
    Organizer,
    Phase,
    PhaseBoard,
    Track,
)
from config.errors import ServiceError
from scoring.boards import board_changed
from scoring.models import Benchmark

PHASE_FIELDS = ("slug", "name", "kind", "opens_at", "closes_at", "per_day", "total",
                "late_uploads", "shown", "released_dimensions")
PUBLIC_PHASE_FIELDS = {"name", "kind", "opens_at", "closes_at", "shown", "late_uploads",
                       "released_dimensions"}
TRACK_FIELDS = ("slug", "name", "rules", "attestations", "where", "position")
PUBLIC_TRACK_FIELDS = {"name", "rules", "attestations", "where"}


def _shown(value):
    """A field's value as the audit log keeps it (JSON; an instant in UTC)."""
    return value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value


def _record(actor, obj, *, before: dict, after: dict, reason: str, slugs: list[str],
            public: bool) -> None:
    """One record, or one per board (each board's changelog) when public."""
    for slug in (slugs if public and slugs else [""]):
        audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=obj, before=before,
                     after=after, reason=reason, benchmark_slug=slug, public=public)


def _slugs(boards) -> list[str]:
    return [b.benchmark.slug for b in boards.select_related("benchmark")]


# --- the challenge ---------------------------------------------------------------------------

CHALLENGE_FIELDS = ("title", "description", "time_zone")


def challenge_save(*, challenge: Challenge, actor, fields: dict) -> Challenge:
    """Change the challenge's title, description or time zone (public: its page shows them)."""
    with transaction.atomic():
        challenge = Challenge.objects.select_for_update().get(pk=challenge.pk)
        changed = [k for k in CHALLENGE_FIELDS if getattr(challenge, k) != fields[k]]
        if not changed:
            return challenge
        before = {k: getattr(challenge, k) for k in changed}
        for k in changed:
            setattr(challenge, k, fields[k])
        challenge.save(update_fields=changed)
        _record(actor, challenge, before=before, after={k: fields[k] for k in changed},
                reason="challenge changed",
                slugs=_slugs(PhaseBoard.objects.filter(phase__challenge=challenge)),
                public=True)
    return challenge


# --- organizers (staff only: the views check) ------------------------------------------------

def organizer_grant(*, challenge: Challenge, actor, who: str) -> Organizer:
    """Make the user named `who` (user name or confirmed e-mail) an organizer of `challenge`."""
    who = (who or "").strip()
    users = get_user_model().objects.filter(
        Q(username__iexact=who) | Q(emailaddress__email__iexact=who,
                                    emailaddress__verified=True)).distinct() if who else []
    found = list(users[:2]) if who else []
    if len(found) != 1:
        raise ServiceError({"who": [f"no single user is named {who!r}" if who else
                                    "name a user (user name or e-mail)"]})
    user = found[0]
    try:
        with transaction.atomic():
            organizer = Organizer.objects.create(challenge=challenge, user=user,
                                                 granted_by=actor)
            audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=organizer,
                         after={"organizer": user.username, "challenge": challenge.slug},
                         reason="organizer role granted")
    except IntegrityError:
        raise ServiceError({"who": [f"{user.username} organizes {challenge} already"]},
                           code="conflict") from None
    return organizer


def organizer_remove(*, organizer: Organizer, actor) -> None:
    with transaction.atomic():
        audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=organizer,
                     before={"organizer": organizer.user.username,
                             "challenge": organizer.challenge.slug},
                     reason="organizer role removed")
        organizer.delete()


# --- phases ----------------------------------------------------------------------------------

def phase_save(*, challenge: Challenge, actor, fields: dict, phase: Phase | None = None,
               reason: str = "") -> Phase:
    """Create a phase of `challenge` or change `phase`, from `fields` (PHASE_FIELDS). A change
    of what it shows is a board change of each of its boards."""
    fields = {"released_dimensions": [] if phase is None else phase.released_dimensions,
              **fields}
    if fields["closes_at"] <= fields["opens_at"]:
        raise ServiceError({"closes_at": ["the phase must close after it opens"]})
    clash = Phase.objects.filter(challenge=challenge, slug=fields["slug"])
    if phase is not None:
        clash = clash.exclude(pk=phase.pk)
    if clash.exists():
        raise ServiceError({"slug": [f"another phase is named {fields['slug']!r}"]})
    with transaction.atomic():
        if phase is None:
            phase = Phase.objects.create(challenge=challenge,
                                         **{k: fields[k] for k in PHASE_FIELDS})
            _record(actor, phase, before={}, after={k: _shown(fields[k]) for k in PHASE_FIELDS},
                    reason=reason or "phase created", slugs=[], public=True)
            return phase
        phase = Phase.objects.select_for_update().get(pk=phase.pk)
        changed = [k for k in PHASE_FIELDS if getattr(phase, k) != fields[k]]
        if not changed:
            return phase
        if phase.revealed_at is not None and set(changed) - {"name"}:
            raise ServiceError(f"{phase.name} was revealed: only its name may change",
                               code="conflict")
        before = {k: _shown(getattr(phase, k)) for k in changed}
        for k in changed:
            setattr(phase, k, fields[k])
        phase.save(update_fields=changed)
        boards = PhaseBoard.objects.filter(phase=phase)
        _record(actor, phase, before=before, after={k: _shown(fields[k]) for k in changed},
                reason=reason or "phase changed", slugs=_slugs(boards),
                public=bool(PUBLIC_PHASE_FIELDS & set(changed)))
        if "shown" in changed:
            board_changed(*boards.values_list("benchmark_id", flat=True))
    return phase


# --- tracks ----------------------------------------------------------------------------------

def track_save(*, challenge: Challenge, actor, fields: dict, track: Track | None = None,
               reason: str = "") -> Track:
    """Create a track of `challenge` or change `track`, from `fields` (TRACK_FIELDS)."""
    clash = Track.objects.filter(challenge=challenge, slug=fields["slug"])
    if track is not None:
        clash = clash.exclude(pk=track.pk)
    if clash.exists():
        raise ServiceError({"slug": [f"another track is named {fields['slug']!r}"]})
    with transaction.atomic():
        if track is None:
            track = Track.objects.create(challenge=challenge,
                                         **{k: fields[k] for k in TRACK_FIELDS})
            _record(actor, track, before={}, after={k: fields[k] for k in TRACK_FIELDS},
                    reason=reason or "track created", slugs=[], public=True)
            return track
        track = Track.objects.select_for_update().get(pk=track.pk)
        changed = [k for k in TRACK_FIELDS if getattr(track, k) != fields[k]]
        if not changed:
            return track
        before = {k: getattr(track, k) for k in changed}
        for k in changed:
            setattr(track, k, fields[k])
        track.save(update_fields=changed)
        _record(actor, track, before=before, after={k: fields[k] for k in changed},
                reason=reason or "track changed", slugs=_slugs(PhaseBoard.objects.filter(
                    track=track)), public=bool(PUBLIC_TRACK_FIELDS & set(changed)))
    return track


# --- boards ----------------------------------------------------------------------------------

def _newest(slug: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=(slug or "").strip()).order_by("-version").first()
    if benchmark is None:
        raise ServiceError({"benchmark": [f"no benchmark is named {slug!r}"]})
    return benchmark


def benchmark_give(*, challenge: Challenge, slug: str, actor) -> ChallengeBenchmark:
    """Give the newest version of benchmark `slug` to `challenge`: its organizers may attach
    it as a board, no other challenge's may (staff's part, or the organizer pages' import of a
    new slug). Audited; a version given to another challenge is refused."""
    return _give(challenge, _newest(slug), actor)


def _give(challenge: Challenge, benchmark: Benchmark, actor) -> ChallengeBenchmark:
    try:
        with transaction.atomic():
            given = ChallengeBenchmark.objects.create(challenge=challenge, benchmark=benchmark,
                                                      granted_by=actor)
            audit_record(actor=actor, action=AuditEvent.Action.CHALLENGE, obj=given,
                         after={"benchmark": benchmark.slug, "version": benchmark.version,
                                "challenge": challenge.slug},
                         reason=f"{benchmark} given to {challenge.slug}",
                         benchmark_slug=benchmark.slug)
    except IntegrityError:
        owner = ChallengeBenchmark.objects.get(benchmark=benchmark).challenge
        raise ServiceError({"benchmark": [f"{benchmark} is {owner.slug}'s already"]},
                           code="conflict") from None
    return given


def _given(challenge: Challenge, benchmark: Benchmark, actor) -> None:
    """Refuse a benchmark version that is not this challenge's (one an organizer of another
    challenge, or of none, could otherwise take: its hidden rubrics would be theirs to see and
    reveal, its uploads theirs to close); staff attaching one that is no challenge's give it to
    this one."""
    owner = ChallengeBenchmark.objects.filter(benchmark=benchmark) \
        .values_list("challenge_id", flat=True).first()
    if owner == challenge.pk:
        return
    if owner is None and actor is not None and actor.is_staff:
        _give(challenge, benchmark, actor)
        return
    raise ServiceError({"benchmark": [
        f"{benchmark} is not one of {challenge.slug}'s benchmarks: staff give a benchmark "
        f"to the challenge (manage.py challenge_benchmark {challenge.slug} {benchmark.slug}), "
        "or import it on a phase's page"]}, code="conflict")


def board_attach(*, phase: Phase, track: Track, benchmark_slug: str, actor) -> PhaseBoard:
    """Rank `track` in `phase` on the newest version of benchmark `benchmark_slug`, if that
    version was given to the challenge (ChallengeBenchmark): a board change (the benchmark's
    disclosure now follows the phase)."""
    if track.challenge_id != phase.challenge_id:
        raise ServiceError({"track": ["not a track of this challenge"]})
    if phase.revealed_at is not None:
        raise ServiceError(f"{phase.name} was revealed: its boards stay as they were",
                           code="conflict")
    benchmark = _newest(benchmark_slug)
    _given(phase.challenge, benchmark, actor)
    if PhaseBoard.objects.filter(benchmark=benchmark).exists():
        raise ServiceError({"benchmark": [f"{benchmark.slug} is the board of a phase already"]},
                           code="conflict")
    if PhaseBoard.objects.filter(phase=phase, track=track).exists():
        raise ServiceError({"track": [f"{track.name} has a board in {phase.name} already"]},
                           code="conflict")
    with transaction.atomic():
        board = PhaseBoard.objects.create(phase=phase, track=track, benchmark=benchmark)
        _record(actor, board, before={},
                after={"phase": phase.slug, "track": track.slug, "benchmark": benchmark.slug,
                       "rubrics_hidden": benchmark.rubrics_hidden},
                reason=f"{benchmark.slug} ranks {track.name} in {phase.name}",
                slugs=[benchmark.slug], public=True)
        board_changed(benchmark.id)
    return board


def board_detach(*, board: PhaseBoard, actor) -> None:
    """Undo an attachment, while no team has an entry on the board."""
    if board.phase.revealed_at is not None:
        raise ServiceError(f"{board.phase.name} was revealed: its boards stay as they were",
                           code="conflict")
    if Entry.objects.filter(board=board).exists():
        raise ServiceError("teams have entries on this board: it stays", code="conflict")
    with transaction.atomic():
        _record(actor, board, before={"phase": board.phase.slug, "track": board.track.slug,
                                      "benchmark": board.benchmark.slug},
                after={}, reason="board detached", slugs=[board.benchmark.slug], public=True)
        benchmark_id = board.benchmark_id
        board.delete()
        board_changed(benchmark_id)
