"""The official ranking of a challenge's track boards: one row per team (its counting entry,
challenges.selectors.counting_entries), ranked by the benchmark kind's ranking key on the
overall figures of the entry's current run once finished under the benchmark's current judge
config (as the board reads it); late entries never count, disqualified
teams are listed apart with the public reason; each row says the team's verification state
and, on a final board, its Rank Delta (development rank minus final rank, for teams ranked on
the development board of the same track).

A team's counting entry is ranked whether or not its submission is public on the open board
(entering a challenge is entering its official ranking, under the team's name; the model and
the submission's own pages keep their author's choice); one hidden by staff is not.

What a viewer reads of the figures follows scoring.visibility.disclosure alone
(`results_for`): below OVERALL the rows keep their teams and states, without figures, ranks or
Rank Delta, listed by team name."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from challenges.models import Phase, PhaseBoard, Verification
from challenges.selectors import counting_entries
from scoring.kinds import get_kind
from scoring.kinds.base import rank_value
from scoring.models import ScoringRun, SliceResult
from scoring.visibility import Disclosure, disclosure


@dataclass(frozen=True)
class OfficialRow:
    team: str
    team_id: int
    submission: int
    state: str  # the scoring state of the entry's submission ("finished" for a ranked row)
    figures: dict = field(default_factory=dict)  # {metric key: value} of the ranking metrics
    rank: int | None = None
    verification: str = ""  # Verification.State, "" when the team was not invited
    reason: str = ""  # the organizers' public reason (disqualification)
    rank_delta: int | None = None  # development rank minus final rank

    def as_dict(self) -> dict:
        return {"team": self.team, "team_id": self.team_id, "submission": self.submission,
                "state": self.state, "figures": dict(self.figures), "rank": self.rank,
                "verification": self.verification, "reason": self.reason,
                "rank_delta": self.rank_delta}


@dataclass(frozen=True)
class Ranking:
    board: PhaseBoard
    ranked: list[OfficialRow]  # best first; rows tied on the whole key share a rank
    waiting: list[OfficialRow]  # counting entries whose current run has not finished
    disqualified: list[OfficialRow]

    def as_dict(self) -> dict:
        return {"board": self.board.benchmark.slug, "track": self.board.track.slug,
                "ranked": [r.as_dict() for r in self.ranked],
                "waiting": [r.as_dict() for r in self.waiting],
                "disqualified": [r.as_dict() for r in self.disqualified]}


def _verifications(phase: Phase) -> dict[int, Verification]:
    return {v.team_id: v for v in Verification.objects.filter(phase=phase)}


def official_ranking(board: PhaseBoard, *, deltas: bool = True) -> Ranking:
    """The board's official ranking (every figure: disclosure is applied by results_for)."""
    kind = get_kind(board.benchmark.kind)
    entries = counting_entries(board)
    runs = {e.submission.current_run_id for e in entries.values() if e.submission.current_run_id}
    # As the board: figures of finished runs under the benchmark's current judge config.
    finished = set(ScoringRun.objects.filter(
        id__in=runs, status=ScoringRun.Status.FINISHED,
        judge_config_id=board.benchmark.judge_config_id).values_list("id", flat=True))
    overall = {s.run_id: s.figures() for s in SliceResult.objects.filter(
        run_id__in=finished, dimension=SliceResult.OVERALL, bucket="")}
    checks = _verifications(board.phase)
    scored, waiting, out = [], [], []
    for team_id, entry in entries.items():
        submission = entry.submission
        if submission.hidden:  # withdrawn by moderation: no official standing
            continue
        check = checks.get(team_id)
        run = submission.current_run_id
        figures = overall.get(run)
        state = submission.state
        if figures is None and state == ScoringRun.Status.FINISHED:
            state = "to be scored by the current judge"
        row = OfficialRow(
            team=entry.team.name, team_id=team_id, submission=submission.id,
            state="finished" if figures is not None else state,
            figures={k: figures.get(k) for k in kind.ranking} if figures is not None else {},
            verification=check.state if check else "",
            reason=check.reason if check else "")
        if check is not None and check.state == Verification.State.DISQUALIFIED:
            out.append(row)
        elif figures is None:
            waiting.append(row)
        else:
            scored.append(row)
    scored.sort(key=lambda r: (kind.rank_key(r.figures), r.team.casefold(), r.team_id))
    ranked: list[OfficialRow] = []
    for position, row in enumerate(scored, start=1):
        tied = ranked and _key(kind, ranked[-1]) == _key(kind, row)
        ranked.append(replace(row, rank=ranked[-1].rank if tied else position))
    if deltas and board.phase.kind == Phase.Kind.FINAL:
        development = development_board(board)
        if development is not None:
            before = {r.team_id: r.rank for r in
                      official_ranking(development, deltas=False).ranked}
            ranked = [replace(r, rank_delta=before[r.team_id] - r.rank)
                      if r.team_id in before else r for r in ranked]
    by_name = lambda r: (r.team.casefold(), r.team_id)  # noqa: E731
    return Ranking(board=board, ranked=ranked, waiting=sorted(waiting, key=by_name),
                   disqualified=sorted(out, key=by_name))


def _key(kind, row: OfficialRow) -> tuple:
    return tuple(rank_value(row.figures.get(k)) for k in kind.ranking)


def development_board(board: PhaseBoard) -> PhaseBoard | None:
    """The board of the same track in the challenge's development phase (the last to close,
    should there be several), or None."""
    return (PhaseBoard.objects.filter(track=board.track, phase__challenge=board.phase.challenge,
                                      phase__kind=Phase.Kind.DEVELOPMENT)
            .select_related("phase", "track", "benchmark")
            .order_by("-phase__closes_at", "-phase__id").first())


@dataclass(frozen=True)
class BoardResults:
    """A board's official ranking as one viewer may read it."""

    board: PhaseBoard
    level: Disclosure
    metrics: list  # the kind's ranking metrics (Metric), in order
    ranked: list[OfficialRow]  # ranked rows, or (figures withheld) every standing team by name
    waiting: list[OfficialRow]
    disqualified: list[OfficialRow]

    @property
    def figures_shown(self) -> bool:
        return self.level >= Disclosure.OVERALL

    @property
    def table(self) -> list[tuple[OfficialRow, list[str]]]:
        """Each ranked row with its figures as every page shows them (Metric.format)."""
        return [(row, [m.format(row.figures.get(m.key)) for m in self.metrics])
                for row in self.ranked]


def results_for(board: PhaseBoard, user) -> BoardResults:
    """The board's official ranking for `user` (None: any visitor), as the one rule of
    disclosure allows: with figures, ranks and Rank Delta from OVERALL up; below it, the
    standing teams by name with their verification states and nothing that orders them."""
    ranking = official_ranking(board)
    level = disclosure(board.benchmark, user)
    kind = get_kind(board.benchmark.kind)
    metrics = [kind.metric(k) for k in kind.ranking]
    if level >= Disclosure.OVERALL:
        return BoardResults(board, level, metrics, ranking.ranked, ranking.waiting,
                            ranking.disqualified)

    def bare(row: OfficialRow) -> OfficialRow:
        return replace(row, figures={}, rank=None, rank_delta=None,
                       state="scored" if row.state == "finished" else row.state)

    standing = sorted([bare(r) for r in ranking.ranked], key=lambda r: (r.team.casefold(),
                                                                        r.team_id))
    return BoardResults(board, level, metrics, standing, [bare(r) for r in ranking.waiting],
                        [bare(r) for r in ranking.disqualified])


def phase_boards(phase: Phase) -> list[PhaseBoard]:
    return list(PhaseBoard.objects.filter(phase=phase)
                .select_related("phase__challenge", "track", "benchmark")
                .order_by("track__position", "track__id"))
