"""What a hidden-rubric benchmark shows to whom before its reveal (the rule scoring.visibility
.disclosure reads): its challenge's organizers see everything; anyone else what the phase's
`shown` setting says; a hidden benchmark of no challenge, nothing."""

from __future__ import annotations

from challenges.models import Organizer, Phase, PhaseBoard
from scoring.visibility import Disclosure

SHOWN = {Phase.Shown.NOTHING: Disclosure.NOTHING, Phase.Shown.OVERALL: Disclosure.OVERALL,
         Phase.Shown.SLICES: Disclosure.SLICES}


def level(benchmark, user) -> Disclosure:
    board = PhaseBoard.objects.filter(benchmark_id=benchmark.pk).select_related("phase").first()
    if board is None:
        return Disclosure.NOTHING
    if user is not None and user.is_authenticated and Organizer.objects.filter(
            challenge_id=board.phase.challenge_id, user=user).exists():
        return Disclosure.FULL
    return SHOWN[board.phase.shown]
