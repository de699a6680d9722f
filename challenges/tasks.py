"""The deadline's freeze: Celery beat asks every minute (`freeze_phases`) for the phases past
their closing instant and not frozen yet; each is frozen once, whoever asks and however often:
its boards' official state kept as citable snapshots (leaderboard.boards.snapshots), their
board versions recorded (PhaseBoard.frozen_version), the phase's `frozen_at` set, and the
public changelog of each board told. A second sweep at the same instant skips a phase being
frozen (its row locked, SKIP LOCKED) and finds it frozen afterwards (the conditional read of
`frozen_at` under that lock). The freeze's changelog line raises each board's version after
its snapshot is kept, so the frozen version is the one before it."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.benchmark_imports import benchmark_import_run  # noqa: F401 (found by autodiscovery)
from challenges.models import Phase, PhaseBoard
from challenges.reveal import reveal_mail  # noqa: F401 (with the reveal; found by autodiscovery)
from leaderboard.boards.snapshots import snapshot_take
from scoring.boards import board_changed

log = logging.getLogger(__name__)

# A board that changes while its snapshot is read (a score landing) is read again this often
# before the phase is left to the next sweep.
SNAPSHOT_TRIES = 3


def phases_due(now=None) -> list[int]:
    """Phases whose closing instant has passed and which are not frozen."""
    now = now or timezone.now()
    return list(Phase.objects.filter(closes_at__lte=now, frozen_at__isnull=True)
                .order_by("closes_at", "id").values_list("id", flat=True))


def _snapshot(board: PhaseBoard):
    for _ in range(SNAPSHOT_TRIES):
        snapshot = snapshot_take(benchmark=board.benchmark)
        if snapshot is not None:
            return snapshot
    return None


def phase_freeze(phase_id: int, now=None) -> bool:
    """Freeze the phase if it is due and not frozen: True when this call froze it. A board
    whose snapshot cannot be taken (it kept changing) leaves the whole phase to the next
    sweep, nothing of it recorded."""
    now = now or timezone.now()
    with transaction.atomic():
        phase = Phase.objects.select_for_update(skip_locked=True) \
            .filter(pk=phase_id, closes_at__lte=now, frozen_at__isnull=True) \
            .select_related("challenge").first()
        if phase is None:
            return False
        boards = list(PhaseBoard.objects.filter(phase=phase).select_related("benchmark", "track")
                      .order_by("track__position", "id"))
        taken = {}
        for board in boards:
            snapshot = _snapshot(board)
            if snapshot is None:
                log.warning("freezing %s: the board of %s kept changing; the next sweep "
                            "tries again", phase, board.track)
                transaction.set_rollback(True)
                return False
            taken[board.pk] = snapshot.board_version
        for board in boards:
            PhaseBoard.objects.filter(pk=board.pk).update(frozen_version=taken[board.pk])
            audit_record(actor=None, action=AuditEvent.Action.CHALLENGE, obj=phase,
                         benchmark_slug=board.benchmark.slug, public=True,
                         after={"frozen_version": taken[board.pk], "track": board.track.slug,
                                "closed_at": phase.closes_at.isoformat()},
                         reason=f"{phase.name} closed: the official board of the "
                                f"{board.track.name} track is frozen as its snapshot at board "
                                f"version {taken[board.pk]}; later uploads are on the open "
                                "board only")
        phase.frozen_at = now
        phase.save(update_fields=["frozen_at"])
        # Its changelog line shows on each board's pages, kept per board state.
        board_changed(*[board.benchmark_id for board in boards])
    log.info("froze %s (%s board(s))", phase, len(boards))
    return True


@shared_task(ignore_result=True)
def freeze_phases() -> int:
    """Freeze every phase due (phase_freeze); how many this sweep froze."""
    frozen = 0
    for phase_id in phases_due():
        try:
            frozen += phase_freeze(phase_id)
        except Exception:  # one phase's failure must not keep the others unfrozen
            log.exception("freezing phase %s failed; the next sweep tries again", phase_id)
    return frozen

