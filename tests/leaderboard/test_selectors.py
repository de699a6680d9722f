"""Board selectors against figures worked out by hand."""

import pytest

from leaderboard.selectors import BoardQuery, leaderboard_rows
from leaderboard.state import representatives


def ranked(benchmark, **query):
    return [(r["rank"], r["model"]) for r in leaderboard_rows(benchmark=benchmark,
                                                              query=BoardQuery(**query))]


def test_rows_rank_by_emr_then_ifr_then_cr_and_ties_share_a_rank(board):
    benchmark, scored = board
    scored("A", (40.0, 60.0, 5.0))
    scored("B", (45.0, 10.0, 5.0))
    scored("C", (1.0, 1.0, 6.0))
    scored("D", (40.0, 70.0, 5.0))
    scored("E", (40.0, 70.0, 5.0))
    assert ranked(benchmark) == [(1, "C"), (2, "B"), (3, "D"), (3, "E"), (5, "A")]


def test_only_public_finished_submissions_show_one_per_model(board, other_author):
    benchmark, scored = board
    scored("Old", (10.0, 10.0, 1.0))
    latest = scored("Old", (20.0, 20.0, 2.0))  # the same model again: latest represents it
    scored("Private", (90.0, 90.0, 90.0), public=False)
    scored("Running", (90.0, 90.0, 90.0), status="scoring")
    scored("Failed", (90.0, 90.0, 90.0), status="failed")
    scored("Other", (5.0, 5.0, 1.5), owner=other_author)
    rows = leaderboard_rows(benchmark=benchmark)
    assert [(r["model"], r["EMR"]) for r in rows] == [("Old", 2.0), ("Other", 1.5)]
    assert rows[0]["submission"] == latest.id
    assert {s.id for s in representatives(benchmark)} == {latest.id, rows[1]["submission"]}


def test_a_slice_reranks_on_its_own_figures(board):
    benchmark, scored = board
    scored("A", (50.0, 50.0, 10.0), slices={("modality", "sound"): (10.0, 10.0, 0.0),
                                             ("modality", "music"): (90.0, 90.0, 50.0)})
    scored("B", (40.0, 40.0, 5.0), slices={("modality", "sound"): (30.0, 30.0, 20.0)})
    assert ranked(benchmark) == [(1, "A"), (2, "B")]
    assert ranked(benchmark, dimension="modality", bucket="sound") == [(1, "B"), (2, "A")]
    assert ranked(benchmark, dimension="modality", bucket="music") == [(1, "A")]


def test_filters_hide_rows_but_keep_the_ranks(board):
    benchmark, scored = board
    scored("Alpha", (50.0, 50.0, 30.0), open_weights=True, licence="MIT")
    scored("Beta", (50.0, 50.0, 20.0), open_weights=False, licence="proprietary",
           organisation="Acme")
    scored("Gamma", (50.0, 50.0, 10.0), open_weights=True, licence="Apache-2.0")
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
    benchmark, scored = board
    scored("A", (50.0, 10.0, 30.0))
    scored("B", (50.0, 90.0, 20.0))
    scored("C", (50.0, 50.0, 10.0))
    rows = leaderboard_rows(benchmark=benchmark, query=BoardQuery(sort=sort,
                                                                  descending=descending))
    assert [r["model"] for r in rows] == order
