"""Board selectors against figures worked out by hand."""

import pytest

from leaderboard.boards.selectors import TIED, BoardQuery, leaderboard_rows, ranked_by, separation
from leaderboard.boards.state import representatives
from scoring.kinds import get_kind
from tests.html import select, texts

MMAE = get_kind("mmae")


def ranked(benchmark, **query):
    return [(r["rank"], r["model"]) for r in leaderboard_rows(benchmark=benchmark,
                                                              query=BoardQuery(**query))]


def test_rows_rank_by_emr_then_ifr_then_cr_and_ties_share_a_rank(board):
    benchmark, score_by_slices = board
    score_by_slices("A", (40.0, 60.0, 5.0))
    score_by_slices("B", (45.0, 10.0, 5.0))
    score_by_slices("C", (1.0, 1.0, 6.0))
    score_by_slices("D", (40.0, 70.0, 5.0))
    score_by_slices("E", (40.0, 70.0, 5.0))
    assert ranked(benchmark) == [(1, "C"), (2, "B"), (3, "D"), (3, "E"), (5, "A")]


def test_only_public_finished_submissions_show_one_per_model(board, other_author):
    benchmark, score_by_slices = board
    score_by_slices("Old", (10.0, 10.0, 1.0))
    latest = score_by_slices("Old", (20.0, 20.0, 2.0))  # the same model again: latest represents it
    score_by_slices("Private", (90.0, 90.0, 90.0), public=False)
    score_by_slices("Running", (90.0, 90.0, 90.0), status="scoring")
    score_by_slices("Failed", (90.0, 90.0, 90.0), status="failed")
    score_by_slices("Other", (5.0, 5.0, 1.5), owner=other_author)
    rows = leaderboard_rows(benchmark=benchmark)
    assert [(r["model"], r["EMR"]) for r in rows] == [("Old", 2.0), ("Other", 1.5)]
    assert rows[0]["submission"] == latest.id
    assert {s.id for s in representatives(benchmark)} == {latest.id, rows[1]["submission"]}


def test_a_slice_reranks_on_its_own_figures(board):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 50.0, 10.0), slices={("modality", "sound"): (10.0, 10.0, 0.0),
                                             ("modality", "music"): (90.0, 90.0, 50.0)})
    score_by_slices("B", (40.0, 40.0, 5.0), slices={("modality", "sound"): (30.0, 30.0, 20.0)})
    assert ranked(benchmark) == [(1, "A"), (2, "B")]
    assert ranked(benchmark, dimension="modality", bucket="sound") == [(1, "B"), (2, "A")]
    assert ranked(benchmark, dimension="modality", bucket="music") == [(1, "A")]


def test_filters_hide_rows_but_keep_the_ranks(board):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 50.0, 30.0), open_weights=True, licence="MIT")
    score_by_slices("Beta", (50.0, 50.0, 20.0), open_weights=False, licence="proprietary",
                    organisation="Acme")
    score_by_slices("Gamma", (50.0, 50.0, 10.0), open_weights=True, licence="Apache-2.0")
    assert ranked(benchmark, open_weights=True) == [(1, "Alpha"), (3, "Gamma")]
    assert ranked(benchmark, open_weights=False) == [(2, "Beta")]
    assert ranked(benchmark, licence="apache-2.0") == [(3, "Gamma")]
    assert ranked(benchmark, search="acme") == [(2, "Beta")]
    assert ranked(benchmark, search="mm") == [(3, "Gamma")]


@pytest.mark.parametrize("sort, descending, order", [
    ("CR", False, ["B", "C", "A"]),
    ("CR", True, ["A", "C", "B"]),
    ("model", False, ["A", "B", "C"]),
    ("rank", True, ["C", "B", "A"]),
])
def test_any_column_sorts(board, sort, descending, order):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 10.0, 30.0))
    score_by_slices("B", (50.0, 90.0, 20.0))
    score_by_slices("C", (50.0, 50.0, 10.0))
    rows = leaderboard_rows(benchmark=benchmark, query=BoardQuery(sort=sort,
                                                                  descending=descending))
    assert [r["model"] for r in rows] == order


# --- which figure separated the rows -----------------------------------------------------


def test_each_row_names_the_figure_that_placed_it_below_the_row_above(board):
    benchmark, score_by_slices = board  # figures as (IFR, CR, EMR)
    score_by_slices("A", (50.0, 60.0, 30.0))
    score_by_slices("B", (40.0, 60.0, 30.0))  # EMR equal to A's: IFR places it
    score_by_slices("C", (40.0, 50.0, 30.0))  # EMR and IFR equal to B's: CR
    score_by_slices("D", (40.0, 50.0, 30.0))  # equal to C on every figure: its rank
    score_by_slices("E", (90.0, 90.0, 10.0))  # a lower EMR
    rows = leaderboard_rows(benchmark=benchmark)
    assert [(r["model"], r["rank"], r["decided_by"]) for r in rows] == [
        ("A", 1, None), ("B", 2, "IFR"), ("C", 3, "CR"), ("D", 3, TIED), ("E", 5, "EMR")]
    assert separation(MMAE, rows, BoardQuery()) == (
        "EMR separates 1 row; where EMR ties, IFR separates 1 row; where EMR and IFR tie, CR "
        "separates 1 row; 1 row equals the row above on every figure and shares its rank.")


def test_a_figure_equal_on_every_row_is_said_to_separate_none(board):
    benchmark, score_by_slices = board
    for name, ifr in (("A", 70.0), ("B", 60.0), ("C", 50.0)):
        score_by_slices(name, (ifr, 50.0, 0.0))
    rows = leaderboard_rows(benchmark=benchmark)
    assert separation(MMAE, rows, BoardQuery()) == \
        "EMR separates no row; where EMR ties, IFR separates 2 rows."


def test_a_sort_by_a_figure_ranks_and_separates_by_it_first(board):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 60.0, 30.0))
    score_by_slices("B", (40.0, 70.0, 30.0))
    score_by_slices("C", (40.0, 70.0, 20.0))
    query = BoardQuery(sort="CR")
    rows = leaderboard_rows(benchmark=benchmark, query=query)
    assert [(r["model"], r["decided_by"]) for r in rows] == [
        ("B", None), ("C", "EMR"), ("A", "CR")]
    assert separation(MMAE, rows, query) == \
        "CR separates 1 row; where CR ties, EMR separates 1 row."
    assert ranked_by(MMAE, query) == "Ranked by CR, then by the board's rule (EMR, IFR, CR)"
    assert ranked_by(MMAE, BoardQuery()) == MMAE.ranking_text


def test_one_row_or_none_needs_no_separation(board):
    benchmark, score_by_slices = board
    assert separation(MMAE, [], BoardQuery()) == ""
    score_by_slices("A", (50.0, 60.0, 30.0))
    assert separation(MMAE, leaderboard_rows(benchmark=benchmark), BoardQuery()) == ""


def test_the_board_page_says_it_and_marks_each_rows_deciding_cell(client, board):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 60.0, 30.0))
    score_by_slices("B", (40.0, 60.0, 30.0))
    html = client.get("/b/mmae/").content.decode()
    assert "EMR separates no row; where EMR ties, IFR separates 1 row." in html
    (second,) = [row for row in select(html, "table#board tbody tr")
                 if texts(row, "td.model a.name bdi") == ["B"]]
    cells = [td.get("class") for td in second.select("td[class^=num]")]
    assert cells[:3] == ["num lead-metric", "num decided", "num"]  # EMR, IFR (decided), CR
