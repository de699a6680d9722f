"""A team's uploads to a phase's board (its entries) and the submission that counts.

An upload to a phase board is an ordinary submission to the board's benchmark
(submissions.services.submission_create, validated and scored as any other), made in the same
transaction as its Entry: refused, nothing of either is kept.

- Who: a member of a team entered in the board's track; from the phase's opening instant.
- The clock: `received_at` is the instant the upload's body had fully arrived (the view's
  first instant: the web server reads a request whole before Django sees it), given by the
  view, never read again: a validation retried later keeps it. The entry is late when it is
  after the phase's closing instant; a late upload is refused unless the phase takes them
  (`late_uploads`), then it is scored, listed on the open board, marked "after the deadline",
  and never counts on the official one.
- The limits (`Phase.per_day` in a rolling 24 hours, `Phase.total` in the phase) are the
  team's, counted over its entries on every board of the phase, all its tracks together: a
  board of one track holds items of another's (the Agent track's items include the Single
  Model track's), so one count per phase keeps a team from probing a hidden set twice as
  often by entering two tracks. Late entries count; rejected uploads and failures on our side
  do not (as for the site's own quota, submissions.quota), which applies besides.
- What counts: the entry the team chose (on time only), else its latest on-time entry
  (challenges.selectors.counting_entries)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Challenge, Entry, Membership, Phase, PhaseBoard, Team, TrackEntry
from challenges.selectors import counting_entries
from config.errors import ServiceError
from scoring import media
from submissions.models import Submission
from submissions.services import submission_create, submission_folder

WINDOW = timedelta(days=1)


def zone(challenge: Challenge):
    """The organizers' time zone (UTC for a name the system does not know)."""
    try:
        return ZoneInfo(challenge.time_zone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def instant_text(moment: datetime, challenge: Challenge) -> str:
    """An instant in UTC and in the organizers' time zone, as refusals and e-mails say it."""
    utc = moment.astimezone(ZoneInfo("UTC"))
    text = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    if zone(challenge).key != "UTC":
        local = moment.astimezone(zone(challenge))
        text += f" ({local:%Y-%m-%d %H:%M:%S %Z}, {zone(challenge).key})"
    return text


def plain_upload_refusal(benchmark) -> str | None:
    """Why an upload to a phase board's benchmark through the site's own upload page or API
    is refused (submissions.services.give_door_rule): it goes through its challenge's, which
    counts the team's limits and makes its entry."""
    board = PhaseBoard.objects.filter(benchmark_id=benchmark.pk) \
        .select_related("phase", "phase__challenge", "track").first()
    if board is None:
        return None
    return (f"{benchmark.slug} is the {board.track.name} board of {board.phase.name} in "
            f"{board.phase.challenge.title}: upload on your team's page, "
            f"/c/{board.phase.challenge.slug}/{board.phase.slug}/{board.track.slug}/submit/, "
            "or through its API")


def board_find(challenge: Challenge, phase_slug: str, track_slug: str) -> PhaseBoard | None:
    return PhaseBoard.objects.filter(phase__challenge=challenge, phase__slug=phase_slug,
                                     track__slug=track_slug) \
        .select_related("phase", "phase__challenge", "track", "benchmark").first()


@dataclass(frozen=True)
class Limits:
    """What a team may still upload in a phase at `now`."""

    per_day: int
    used_today: int
    total: int
    used_total: int
    next_at: datetime | None  # when today's are spent: when the next is possible (else None)

    @property
    def today_left(self) -> int:
        return max(0, self.per_day - self.used_today)

    @property
    def total_left(self) -> int:
        return max(0, self.total - self.used_total)

    @property
    def spent(self) -> bool:
        return self.today_left == 0 or self.total_left == 0


def _counted(team: Team, phase: Phase):
    counted = Submission.objects.filter(challenge_entry__team=team,
                                        challenge_entry__board__phase=phase) \
        .counting_for_quota()
    return Entry.objects.filter(submission__in=counted)


def limits_left(team: Team, phase: Phase, now: datetime | None = None) -> Limits:
    """The team's uploads used and left in `phase` at `now`: in the 24 hours before it
    (`per_day`) and in the whole phase (`total`); when the day's are spent, the instant the
    next is possible (to the next whole second), when the oldest upload needed leaves the
    window. No next instant once the phase's total is spent."""
    now = now or timezone.now()
    counted = _counted(team, phase)
    used_total = counted.count()
    today = sorted(counted.filter(received_at__gt=now - WINDOW)
                   .values_list("received_at", flat=True))
    next_at = None
    if phase.per_day > 0 and len(today) >= phase.per_day and used_total < phase.total:
        moment = today[len(today) - phase.per_day] + WINDOW
        next_at = moment.replace(microsecond=0) + timedelta(seconds=1) if moment.microsecond \
            else moment
    return Limits(per_day=phase.per_day, used_today=len(today), total=phase.total,
                  used_total=used_total, next_at=next_at)


def limit_problems(limits: Limits, phase: Phase) -> list[str]:
    """Why the team's next upload to `phase` is refused under its limits; none if it is not."""
    challenge = phase.challenge
    if limits.total_left == 0:
        return [f"your team's uploads for {phase.name} are spent: {limits.total} in the phase "
                "(rejected uploads and failures on our side do not count)"]
    if limits.today_left == 0:
        when = f"; the next upload is possible at {instant_text(limits.next_at, challenge)}" \
            if limits.next_at else ""
        return [f"your team's daily limit for {phase.name} is reached: {limits.per_day} "
                f"upload(s) in 24 hours{when}"]
    return []


def phase_state(phase: Phase, now: datetime) -> str:
    """"upcoming", "open" or "closed" at `now`."""
    if now < phase.opens_at:
        return "upcoming"
    return "open" if now <= phase.closes_at else "closed"


def upload_problems(*, user, board: PhaseBoard, at: datetime) -> tuple[Team | None, list[str]]:
    """The uploader's team, and why an upload by `user` to `board` at `at` is refused beside
    the limits (which need the team's lock): no team, track not entered, the phase not open
    yet, or closed and taking no late upload."""
    phase, challenge = board.phase, board.phase.challenge
    membership = Membership.objects.filter(challenge=challenge, user=user,
                                           accepted_at__isnull=False) \
        .select_related("team").first()
    if membership is None:
        return None, [f"you are in no team of {challenge.title}: make one or accept an "
                      "invitation first"]
    team = membership.team
    problems = []
    if not TrackEntry.objects.filter(team=team, track=board.track).exists():
        problems.append(f"your team has not entered the track {board.track.name}: enter it "
                        "(ticking its attestations) on your team's page first")
    if at < phase.opens_at:
        problems.append(f"{phase.name} opens at {instant_text(phase.opens_at, challenge)}")
    elif at > phase.closes_at and not phase.late_uploads:
        problems.append(f"{phase.name} closed at {instant_text(phase.closes_at, challenge)} "
                        "and takes no upload after its deadline")
    return team, problems


def entry_create(*, user, board: PhaseBoard, received_at: datetime, model_name: str,
                 metadata: dict, public: bool, predictions, archive) -> Entry:
    """Store an upload to a phase board as a submission of its benchmark and the team's
    entry, in one transaction; refuse it whole (ServiceError) when the uploader may not, the
    phase does not take it at `received_at`, or the team's limits are spent (code "quota",
    naming when the next upload is possible)."""
    phase = board.phase
    team, problems = upload_problems(user=user, board=board, at=received_at)
    if problems:
        raise ServiceError(problems, code="conflict")
    metadata = {**metadata, "organisation": team.name}
    submission = None
    try:
        with transaction.atomic():
            # One upload at a time per team, so that teammates' parallel uploads cannot pass
            # the limits together.
            Team.objects.select_for_update().get(pk=team.pk)
            problems = limit_problems(limits_left(team, phase, received_at), phase)
            if problems:
                raise ServiceError(problems, code="quota")
            submission = submission_create(
                user=user, benchmark=board.benchmark, model_name=model_name,
                metadata=metadata, public=public, predictions=predictions, archive=archive,
                door_checked=True)
            return Entry.objects.create(submission=submission, team=team, board=board,
                                        received_at=received_at,
                                        late=received_at > phase.closes_at)
    except BaseException:
        if submission is not None:  # stored by submission_create, rolled back here
            media.folder_delete(submission_folder(submission))
        raise


def entries_of(team: Team, phase: Phase | None = None) -> list[Entry]:
    """The team's entries (of one phase), newest first, with whether each counts."""
    entries = Entry.objects.filter(team=team).select_related(
        "submission", "submission__model", "submission__current_run", "submission__owner",
        "board", "board__phase", "board__track")
    if phase is not None:
        entries = entries.filter(board__phase=phase)
    entries = list(entries.order_by("-received_at", "-id"))
    counting = {}
    for board_id in {e.board_id for e in entries}:
        found = counting_entries(PhaseBoard(id=board_id)).get(team.pk)
        if found is not None:
            counting[board_id] = found.pk
    for entry in entries:
        entry.counts = counting.get(entry.board_id) == entry.pk
    return entries


def entry_choose(*, user, entry: Entry) -> Entry:
    """A member picks `entry` as the team's submission that counts on its board's official
    ranking (instead of the latest on-time one). Only an on-time entry, and only until the
    phase closes."""
    entry = Entry.objects.select_related("team", "board", "board__phase",
                                         "board__benchmark").get(pk=entry.pk)
    if not Membership.objects.filter(team=entry.team, user=user,
                                     accepted_at__isnull=False).exists():
        raise ServiceError(f"you are not a member of the team {entry.team.name!r}",
                           code="conflict")
    if entry.late:
        raise ServiceError("an upload after the deadline never counts on the official "
                           "ranking; choose one received in time", code="conflict")
    phase = entry.board.phase
    if timezone.now() > phase.closes_at or phase.frozen_at is not None:
        raise ServiceError(f"{phase.name} closed at "
                           f"{instant_text(phase.closes_at, phase.challenge)}: the submission "
                           "that counts can no longer change", code="conflict")
    with transaction.atomic():
        # One choice at a time per team and board (the database holds one chosen entry).
        Team.objects.select_for_update().get(pk=entry.team_id)
        before = Entry.objects.filter(team=entry.team, board=entry.board, chosen=True) \
            .values_list("submission_id", flat=True).first()
        Entry.objects.filter(team=entry.team, board=entry.board, chosen=True) \
            .exclude(pk=entry.pk).update(chosen=False)
        Entry.objects.filter(pk=entry.pk).update(chosen=True)
        audit_record(actor=user, action=AuditEvent.Action.CHALLENGE, obj=entry,
                     benchmark_slug=entry.board.benchmark.slug,
                     before={"chosen_submission": before},
                     after={"chosen_submission": entry.submission_id}, public=True,
                     reason=f"{entry.team.name!r} chose submission {entry.submission_id} "
                            f"to count on {entry.board}")
    entry.refresh_from_db()
    return entry
