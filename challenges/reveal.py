"""The reveal of a phase: its boards' rubrics, per-item results and judge replies made public,
in one step that every page kept per board state follows (a board change). The final official
rows of each track (challenges.official, with verification states and Rank Delta) are kept in
that board's reveal record of the audit log (append-only: what was published, as it was);
once the change commits, a dated snapshot of each board is taken
(leaderboard.boards.snapshots) and every participant of the phase is e-mailed."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core import mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Entry, Membership, Phase, RevealNotice
from challenges.official import official_ranking, phase_boards
from config.tasks import RowTask
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
    reveal_mail.delay(phase.pk)


def participants(phase: Phase) -> list:
    """Every participant of the phase: the accepted members of the teams with an entry on
    one of its boards, by user name."""
    teams = Entry.objects.filter(board__phase=phase).values("team_id")
    members = Membership.objects.filter(team_id__in=teams, accepted_at__isnull=False) \
        .select_related("user", "team").order_by("user__username")
    return [m for m in members if m.user.is_active]


def published_rankings(phase: Phase) -> dict:
    """board id -> the official ranking the reveal published (its audit records' rows, as
    they were), as official.Ranking.as_dict gives it."""
    boards = {b.benchmark.slug: b.pk for b in phase_boards(phase)}
    found = {}
    for event in AuditEvent.objects.filter(action=AuditEvent.Action.REVEAL,
                                           object_type="challenges.phase",
                                           object_id=str(phase.pk)):
        if event.benchmark_slug in boards and "official" in event.after:
            found[boards[event.benchmark_slug]] = event.after["official"]
    return found


def participants_notify(phase: Phase) -> int:
    """E-mail each participant not mailed yet (one message each, to their address alone)
    their team's final standing on each track, as the reveal published it, and the results
    page; each is recorded as it is sent (RevealNotice), so a retry after a failure mails
    only those left. The number sent."""
    url = settings.SITE_URL + reverse("challenges:results", args=[phase.challenge.slug])
    boards = {b.pk: b for b in phase_boards(phase)}
    rankings = published_rankings(phase)
    told = set(RevealNotice.objects.filter(phase=phase).values_list("membership_id", flat=True))
    sent = 0
    for membership in participants(phase):
        if not membership.user.email or membership.pk in told:
            continue
        standing = []
        for pk, ranking in rankings.items():
            track = boards[pk].track.name
            row = next((r for r in ranking["ranked"] if r["team_id"] == membership.team_id),
                       None)
            out = next((r for r in ranking["disqualified"]
                        if r["team_id"] == membership.team_id), None)
            if row is not None:
                standing.append({"track": track, "rank": row["rank"],
                                 "of": len(ranking["ranked"]), "delta": row["rank_delta"]})
            elif out is not None:
                standing.append({"track": track, "disqualified": True,
                                 "reason": out["reason"]})
        context = {"phase": phase, "challenge": phase.challenge, "team": membership.team,
                   "user": membership.user, "standing": standing, "url": url}
        subject = render_to_string("challenges/public/email/reveal_subject.txt", context)
        body = render_to_string("challenges/public/email/reveal_body.txt", context)
        mail.EmailMessage(" ".join(subject.split()), body, None,
                          [membership.user.email]).send()
        RevealNotice.objects.create(phase=phase, membership=membership)
        sent += 1
    return sent


class RevealMailTask(RowTask):
    """The reveal's e-mails of one phase: a failure on our side (the mail server) is retried
    CHALLENGE_EMAIL_RETRIES times with backoff, mailing only the participants left; then
    logged for staff."""

    model = "challenges.Phase"
    retries = "CHALLENGE_EMAIL_RETRIES"
    retry_seconds = "CHALLENGE_EMAIL_RETRY_SECONDS"

    def gave_up(self, row_id: int, tries: int, why: str) -> None:
        log.error("the reveal's e-mails of phase %s gave up after %s tries (%s); "
                  "participants left unmailed have no RevealNotice", row_id, tries, why)


@shared_task(base=RevealMailTask)
def reveal_mail(phase) -> None:
    sent = participants_notify(phase)
    log.info("reveal of %s: %d participant(s) e-mailed", phase, sent)
