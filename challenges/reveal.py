"""The reveal of a phase: its boards' rubrics, per-item results and judge replies made public,
in one step that every page kept per board state follows (a board change)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import audit_record
from challenges.models import Phase
from scoring.boards import board_changed
from scoring.models import Benchmark


class RevealError(Exception):
    pass


def phase_reveal(phase: Phase, *, actor=None) -> list[Benchmark]:
    """Reveal `phase`: every board's benchmark loses its hidden rubrics and changes board
    state (so no page, file or cache entry kept for the hidden state is served again); the
    phase records when, and the public changelog of each board says so. The benchmarks
    revealed; a phase already revealed is refused."""
    with transaction.atomic():
        phase = Phase.objects.select_for_update().get(pk=phase.pk)
        if phase.revealed_at is not None:
            raise RevealError(f"{phase} was revealed at {phase.revealed_at:%Y-%m-%d %H:%M} UTC")
        if timezone.now() < phase.closes_at:
            raise RevealError(f"{phase} is open until {phase.closes_at:%Y-%m-%d %H:%M} UTC; "
                              "reveal it once it has closed")
        benchmarks = list(Benchmark.objects.filter(phase_board__phase=phase))
        Benchmark.objects.filter(id__in=[b.id for b in benchmarks]).update(rubrics_hidden=False)
        phase.revealed_at = timezone.now()
        phase.save(update_fields=["revealed_at"])
        for benchmark in benchmarks:
            audit_record(actor=actor, action=AuditEvent.Action.REVEAL, obj=phase,
                         benchmark_slug=benchmark.slug, before={"rubrics_hidden": True},
                         after={"rubrics_hidden": False}, public=True,
                         reason="the phase's rubrics and every per-item result are public")
        board_changed(*[b.id for b in benchmarks])
    return benchmarks
