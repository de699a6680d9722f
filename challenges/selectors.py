"""Reading a challenge: which of a team's entries counts on a phase's official board, and which
benchmarks its organizers may still attach."""

from __future__ import annotations

from challenges.models import Challenge, ChallengeBenchmark, Entry, PhaseBoard


def counting_entries(board: PhaseBoard) -> dict[int, Entry]:
    """team id -> the entry that counts for it on the board's official ranking: the one the
    team chose, else its latest entry received by the phase's closing instant. Late entries
    never count; an entry counts whatever its scoring state (the ranking shows that state)."""
    entries = (Entry.objects.filter(board=board, late=False)
               .select_related("submission", "team").order_by("received_at", "id"))
    counting: dict[int, Entry] = {}
    for entry in entries:
        if entry.chosen or not (entry.team_id in counting and counting[entry.team_id].chosen):
            counting[entry.team_id] = entry
    return counting


def attachable(challenge: Challenge) -> list[str]:
    """The benchmarks given to the challenge and attached to no board, as `slug vN`, for the
    organizer's board form (organizer_services.board_attach takes a slug's newest version)."""
    return [str(given.benchmark) for given in ChallengeBenchmark.objects
            .filter(challenge=challenge, benchmark__phase_board__isnull=True)
            .select_related("benchmark").order_by("benchmark__slug", "benchmark__version")]
