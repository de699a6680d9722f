"""A challenge built directly for the organizer, official-ranking, verification and reveal
tests: a development and a final phase, each with a board per track (benchmarks of no items,
tests.factories), teams of confirmed users, and entries whose submissions are scored with given
overall figures (no judge)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from challenges.models import (
    Challenge,
    Entry,
    Membership,
    Organizer,
    Phase,
    PhaseBoard,
    Team,
    Track,
    TrackEntry,
)
from tests.conftest import cast_member
from tests.factories import board_benchmark, scored_submission


@dataclass
class Built:
    challenge: Challenge
    development: Phase
    final: Phase
    tracks: dict[str, Track]
    boards: dict[tuple[str, str], PhaseBoard]  # (phase kind, track slug) -> board
    teams: dict[str, Team] = field(default_factory=dict)
    members: dict[str, object] = field(default_factory=dict)  # team name -> its first member
    organizer: object = None

    def board(self, kind: str, track: str) -> PhaseBoard:
        return self.boards[(kind, track)]


def build_challenge(*, organizer=None, tracks=("single", "agent"), shown=Phase.Shown.NOTHING,
                    final_closed=True, slug="icassp") -> Built:
    """A challenge `slug` in US Pacific time: a development phase closed a week ago and a
    final phase (hidden rubrics, `shown`) closed an hour ago (or open for a day), a board per
    track in each; `organizer` made its organizer."""
    now = timezone.now()
    challenge = Challenge.objects.create(slug=slug, title="Audio Editing Challenge",
                                         description="Edit audio as instructed.",
                                         time_zone="America/Los_Angeles")
    development = Phase.objects.create(
        challenge=challenge, slug="dev", name="Development", kind=Phase.Kind.DEVELOPMENT,
        opens_at=now - timedelta(days=30), closes_at=now - timedelta(days=7),
        shown=Phase.Shown.SLICES)
    final = Phase.objects.create(
        challenge=challenge, slug="final", name="Final", kind=Phase.Kind.FINAL,
        opens_at=now - timedelta(days=6),
        closes_at=now - timedelta(hours=1) if final_closed else now + timedelta(days=1),
        shown=shown)
    made = {}
    boards = {}
    for position, name in enumerate(tracks):
        made[name] = Track.objects.create(challenge=challenge, slug=name, name=name.title(),
                                          rules=f"Rules of the {name} track.",
                                          attestations=["open-source components only"],
                                          position=position)
        for phase, hidden in ((development, False), (final, True)):
            benchmark = board_benchmark(slug=f"{slug}-{phase.slug}-{name}",
                                        rubrics_hidden=hidden)
            boards[(phase.kind, name)] = PhaseBoard.objects.create(
                phase=phase, track=made[name], benchmark=benchmark)
    if organizer is not None:
        Organizer.objects.create(challenge=challenge, user=organizer)
    return Built(challenge, development, final, made, boards, organizer=organizer)


def add_team(built: Built, name: str, member=None, *, tracks=None) -> Team:
    """Team `name` with `member` (a new confirmed user when None), accepted, entered in
    `tracks` (all by default)."""
    team = Team.objects.create(challenge=built.challenge, name=name)
    if member is None:
        handle = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40]
        member = cast_member(get_user_model(), f"{handle}-member", f"{handle}@example.com")
    Membership.objects.create(team=team, challenge=built.challenge, user=member,
                              accepted_at=timezone.now())
    for track in tracks or built.tracks:
        TrackEntry.objects.create(team=team, track=built.tracks[track], attested=[])
    built.teams[name] = team
    built.members[name] = member
    return team


def enter(built: Built, team: str, kind: str, track: str, figures: tuple | None, *,
          late=False, chosen=False, minutes_before_close=30, status="finished") -> Entry:
    """An entry of `team` on the (`kind`, `track`) board whose submission is scored with
    overall `figures` (IFR, CR, EMR), or is still being scored (`figures` None)."""
    board = built.board(kind, track)
    member = built.members[team]
    submission = scored_submission(
        board.benchmark, member, f"{team} system {Entry.objects.count()}",
        {("overall", ""): figures} if figures is not None else {},
        status=status if figures is not None else "scoring", changed=True)
    close = board.phase.closes_at
    return Entry.objects.create(
        submission=submission, team=built.teams[team], board=board,
        received_at=close + timedelta(minutes=5) if late
        else close - timedelta(minutes=minutes_before_close), late=late, chosen=chosen)
