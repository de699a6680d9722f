"""The official ranking of a track board: one row per team (its chosen, else latest on-time
entry), ranked by EMR, then IFR, then CR on finished runs; late entries never count; the
disqualified are listed apart with their public reason; Rank Delta against the development
board; what a viewer reads follows scoring.visibility.disclosure."""

import pytest

from challenges.models import Entry, Phase, PhaseBoard, Track, Verification
from challenges.official import official_ranking, results_for
from challenges.reveal import phase_reveal
from leaderboard.boards.selectors import leaderboard_rows
from scoring import synthetic
from scoring.models import ScoringRun
from scoring.services import benchmark_import
from tests.challenges.challenge_factories import add_team, build_challenge, enter
from tests.conftest import judge_config
from tests.factories import judged_submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(staff, author):
    built = build_challenge(organizer=author, tracks=("single",))
    for name in ("Alpha", "Bravo", "Charlie", "Delta", "Echo"):
        add_team(built, name)
    return built


def test_ranked_by_emr_then_ifr_then_cr_with_ties_sharing_a_rank(built):
    # (IFR, CR, EMR)
    enter(built, "Alpha", "final", "single", (0.60, 0.90, 0.30))
    enter(built, "Bravo", "final", "single", (0.70, 0.10, 0.30))  # same EMR, better IFR
    enter(built, "Charlie", "final", "single", (0.10, 0.10, 0.50))  # best EMR
    enter(built, "Delta", "final", "single", (0.60, 0.90, 0.30))  # tied with Alpha
    enter(built, "Echo", "final", "single", None)  # still being scored
    ranking = official_ranking(built.board("final", "single"))
    assert [(r.team, r.rank) for r in ranking.ranked] == [
        ("Charlie", 1), ("Bravo", 2), ("Alpha", 3), ("Delta", 3)]
    assert ranking.ranked[0].figures == {"EMR": 0.50, "IFR": 0.10, "CR": 0.10}
    assert [(r.team, r.state) for r in ranking.waiting] == [("Echo", "scoring")]


def test_late_entries_never_count_and_a_chosen_entry_does(built):
    on_time = enter(built, "Alpha", "final", "single", (0.2, 0.2, 0.2), minutes_before_close=90)
    enter(built, "Alpha", "final", "single", (0.9, 0.9, 0.9), late=True)
    enter(built, "Bravo", "final", "single", (0.5, 0.5, 0.5), chosen=True,
          minutes_before_close=120)
    enter(built, "Bravo", "final", "single", (0.1, 0.1, 0.1), minutes_before_close=10)
    ranking = official_ranking(built.board("final", "single"))
    rows = {r.team: r for r in ranking.ranked}
    assert rows["Alpha"].submission == on_time.submission_id
    assert rows["Alpha"].figures["EMR"] == 0.2  # the late 0.9 is on the open board only
    assert rows["Bravo"].figures["EMR"] == 0.5  # its chosen entry, not its latest
    assert [r.team for r in ranking.ranked] == ["Bravo", "Alpha"]


def test_a_disqualified_team_is_listed_apart_with_its_reason(built, author):
    enter(built, "Alpha", "final", "single", (0.9, 0.9, 0.9))
    enter(built, "Bravo", "final", "single", (0.5, 0.5, 0.5))
    Verification.objects.create(phase=built.final, team=built.teams["Alpha"],
                                state=Verification.State.DISQUALIFIED,
                                reason="used a closed-source tool")
    Verification.objects.create(phase=built.final, team=built.teams["Bravo"],
                                state=Verification.State.VERIFIED)
    ranking = official_ranking(built.board("final", "single"))
    assert [(r.team, r.rank, r.verification) for r in ranking.ranked] == [
        ("Bravo", 1, "verified")]
    assert [(r.team, r.reason) for r in ranking.disqualified] == [
        ("Alpha", "used a closed-source tool")]


def test_rank_delta_is_the_development_rank_minus_the_final_rank(built):
    for team, emr in (("Alpha", 0.9), ("Bravo", 0.8), ("Charlie", 0.7)):
        enter(built, team, "development", "single", (0.5, 0.5, emr))
    for team, emr in (("Charlie", 0.9), ("Alpha", 0.8), ("Bravo", 0.7), ("Delta", 0.6)):
        enter(built, team, "final", "single", (0.5, 0.5, emr))
    rows = {r.team: r for r in official_ranking(built.board("final", "single")).ranked}
    assert rows["Charlie"].rank_delta == 3 - 1
    assert rows["Alpha"].rank_delta == 1 - 2
    assert rows["Bravo"].rank_delta == 2 - 3
    assert rows["Delta"].rank_delta is None  # not on the development board
    development = official_ranking(built.board("development", "single")).ranked
    assert all(r.rank_delta is None for r in development)


def test_what_a_viewer_reads_follows_disclosure(built, author, other_author, staff):
    enter(built, "Alpha", "final", "single", (0.5, 0.5, 0.2))
    enter(built, "Bravo", "final", "single", (0.5, 0.5, 0.9))
    board = built.board("final", "single")
    hidden = results_for(board, None)  # shown: nothing
    assert not hidden.figures_shown
    assert [(r.team, r.rank, r.figures) for r in hidden.ranked] == [
        ("Alpha", None, {}), ("Bravo", None, {})]  # by name, nothing that orders them
    assert results_for(board, other_author).ranked[0].rank is None
    for organizer in (author, staff):
        assert [r.team for r in results_for(board, organizer).ranked] == ["Bravo", "Alpha"]
    Phase.objects.filter(pk=built.final.pk).update(shown=Phase.Shown.OVERALL)
    board.refresh_from_db()
    board.phase.refresh_from_db()
    assert results_for(board, None).ranked[0].figures == {"EMR": 0.9, "IFR": 0.5, "CR": 0.5}


def test_the_public_results_page_shows_figures_only_when_disclosed(client, built, author):
    enter(built, "Alpha", "final", "single", (0.5, 0.5, 0.1234))
    enter(built, "Bravo", "final", "single", (0.5, 0.5, 0.9876))
    Verification.objects.create(phase=built.final, team=built.teams["Bravo"],
                                state=Verification.State.DISQUALIFIED,
                                reason="no tool-call records")
    page = client.get("/c/icassp/results/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Alpha" in text and "0.12" not in text and "0.99" not in text
    assert "no tool-call records" in text
    client.force_login(author)
    assert "0.12" in client.get("/c/icassp/results/").content.decode()
    client.logout()
    phase_reveal(built.final, actor=author)
    text = client.get("/c/icassp/results/").content.decode()
    assert "0.12" in text and "Rank Delta" in text


def test_the_official_figures_are_the_boards_own(built, tmp_path):
    """On a benchmark of real items judged as the pipeline judges (votes, per-item results,
    slices), the official row of a team reads the very overall figures its board row shows."""
    meta = synthetic.write_benchmark(tmp_path / "set", 10, seed=4)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=meta.parent,
                                    slug="final-agent-real", where=None)
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    track = Track.objects.create(challenge=built.challenge, slug="agent", name="Agent")
    board = PhaseBoard.objects.create(phase=built.final, track=track, benchmark=benchmark)
    for seed, team in enumerate(("Alpha", "Bravo", "Charlie")):
        submission = judged_submission(benchmark, built.members[team], f"{team} agent",
                                       seed=seed)
        Entry.objects.create(submission=submission, team=built.teams[team], board=board,
                             received_at=built.final.closes_at, late=False)
    rows = {r["submission"]: r for r in leaderboard_rows(benchmark=benchmark)}
    ranking = official_ranking(board)
    assert len(ranking.ranked) == 3
    for row in ranking.ranked:
        assert row.figures == {m: rows[row.submission][m] for m in ("EMR", "IFR", "CR")}
    board_order = [r["submission"] for r in sorted(rows.values(), key=lambda r: r["rank"])]
    assert [r.submission for r in ranking.ranked] == board_order


def test_a_run_under_another_judge_config_waits_as_on_the_board(built):
    entry = enter(built, "Alpha", "final", "single", (0.5, 0.5, 0.5))
    enter(built, "Bravo", "final", "single", (0.5, 0.5, 0.4))
    other = judge_config(["http://127.0.0.1:9"], seed=99)
    ScoringRun.objects.filter(pk=entry.submission.current_run_id).update(judge_config=other)
    ranking = official_ranking(built.board("final", "single"))
    assert [r.team for r in ranking.ranked] == ["Bravo"]
    assert [(r.team, r.state) for r in ranking.waiting] == [
        ("Alpha", "to be scored by the current judge")]
