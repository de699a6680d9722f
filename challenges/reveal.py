"""The reveal of a phase: its boards' rubrics, per-item results and judge replies made public,
in one step that every page kept per board state follows (a board change). The final official
rows of each track (challenges.official, with verification states and Rank Delta) are kept in
that board's reveal record of the audit log (append-only: what was published, as it was);
once the change commits, a dated snapshot of each board is taken
(leaderboard.boards.snapshots) and every participant of the phase is e-mailed."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core import mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Entry, Membership, Phase
from challenges.official import official_ranking, phase_boards
from leaderboard.boards.snapshots import snapshot_take
from scoring.boards import board_changed
from scoring.models import Benchmark

log = logging.getLogger(__name__)


class RevealError(Exception):
    pass


def phase_reveal(phase: Phase, *, actor=None) -> list[Benchmark]:
    """Reveal `phase`: every board's benchmark loses its hidden rubrics and changes board
    state (so no page, file or cache entry kept for the hidden state is served again); the
    phase records when, and the public changelog of each board says so, with the board's
    final official rows. Once committed: a snapshot of each board, and an e-mail to each
    participant. The benchmarks revealed; a phase already revealed is refused."""
    with transaction.atomic():
        phase = Phase.objects.select_for_update().select_related("challenge").get(pk=phase.pk)
        if phase.revealed_at is not None:
            raise RevealError(f"{phase} was revealed at {phase.revealed_at:%Y-%m-%d %H:%M} UTC")
        if timezone.now() < phase.closes_at:
            raise RevealError(f"{phase} is open until {phase.closes_at:%Y-%m-%d %H:%M} UTC; "
                              "reveal it once it has closed")
        boards = phase_boards(phase)
        benchmarks = [b.benchmark for b in boards]
        Benchmark.objects.filter(id__in=[b.id for b in benchmarks]).update(rubrics_hidden=False)
        phase.revealed_at = timezone.now()
        phase.save(update_fields=["revealed_at"])
        rankings = {board.pk: official_ranking(board) for board in boards}
        for board in boards:
            audit_record(actor=actor, action=AuditEvent.Action.REVEAL, obj=phase,
                         benchmark_slug=board.benchmark.slug, before={"rubrics_hidden": True},
                         after={"rubrics_hidden": False,
                                "official": rankings[board.pk].as_dict()},
                         public=True,
                         reason="the phase's rubrics, every per-item result and the final "
                                "official ranking are public")
        board_changed(*[b.id for b in benchmarks])
        transaction.on_commit(lambda: _after_reveal(phase, boards, rankings), robust=True)
    return benchmarks


def _after_reveal(phase: Phase, boards, rankings) -> None:
    for board in boards:
        try:
            snapshot = snapshot_take(benchmark=board.benchmark)
        except Exception:  # the reveal stands: staff take one with manage.py snapshot_board
            log.exception("reveal of %s: no snapshot of %s", phase, board.benchmark.slug)
            continue
        if snapshot is None:
            log.warning("reveal of %s: %s changed while its snapshot was taken", phase,
                        board.benchmark.slug)
    sent = participants_notify(phase, rankings)
    log.info("reveal of %s: %d participant(s) e-mailed", phase, sent)


def participants(phase: Phase) -> list:
    """Every participant of the phase: the accepted members of the teams with an entry on
    one of its boards, by user name."""
    teams = Entry.objects.filter(board__phase=phase).values("team_id")
    members = Membership.objects.filter(team_id__in=teams, accepted_at__isnull=False) \
        .select_related("user", "team").order_by("user__username")
    return [m for m in members if m.user.is_active]


def participants_notify(phase: Phase, rankings: dict) -> int:
    """E-mail each participant (one message each, to their address alone) their team's
    final standing on each track and the results page. The number sent."""
    url = settings.SITE_URL + reverse("challenges:results", args=[phase.challenge.slug])
    boards = {b.pk: b for b in phase_boards(phase)}
    messages = []
    for membership in participants(phase):
        if not membership.user.email:
            continue
        standing = []
        for pk, ranking in rankings.items():
            track = boards[pk].track.name if pk in boards else ranking.board.track.name
            row = next((r for r in ranking.ranked if r.team_id == membership.team_id), None)
            out = next((r for r in ranking.disqualified if r.team_id == membership.team_id),
                       None)
            if row is not None:
                standing.append({"track": track, "rank": row.rank, "of": len(ranking.ranked),
                                 "delta": row.rank_delta})
            elif out is not None:
                standing.append({"track": track, "disqualified": True, "reason": out.reason})
        context = {"phase": phase, "challenge": phase.challenge, "team": membership.team,
                   "user": membership.user, "standing": standing, "url": url}
        subject = render_to_string("challenges/public/email/reveal_subject.txt", context)
        body = render_to_string("challenges/public/email/reveal_body.txt", context)
        messages.append(mail.EmailMessage(" ".join(subject.split()), body, None,
                                          [membership.user.email]))
    if not messages:
        return 0
    with mail.get_connection() as connection:
        return connection.send_messages(messages) or 0
