"""The board API (leaderboard/api/views.py): its CSV cells and its cache key."""

import csv
import io

import pytest

from leaderboard.api.views import CsvRenderer

FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r"]


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))


class TestCsvCells:
    @pytest.mark.parametrize("start", FORMULA_STARTS, ids=repr)
    def test_a_text_cell_that_a_spreadsheet_would_run_as_a_formula_starts_with_a_quote(
            self, client, board, start):
        _, score_by_slices = board
        score_by_slices(f"{start}HYPERLINK(\"http://x\")", (50.0, 60.0, 30.0),
                        organisation=f"{start}cmd|' /C calc'!A0", licence=f"{start}1+1")
        (row,) = csv_rows(client.get("/api/leaderboards/mmae/?format=csv"))
        assert row["model"] == f"'{start}HYPERLINK(\"http://x\")"
        assert row["organisation"] == f"'{start}cmd|' /C calc'!A0"
        assert row["licence"] == f"'{start}1+1"

    def test_ordinary_text_is_left_alone(self, client, board):
        _, score_by_slices = board
        score_by_slices("Echo 2 = best", (50.0, 60.0, 30.0), organisation="Lab @ Uni",
                        licence="MIT")
        (row,) = csv_rows(client.get("/api/leaderboards/mmae/?format=csv"))
        assert (row["model"], row["organisation"], row["licence"]) == \
            ("Echo 2 = best", "Lab @ Uni", "MIT")

    def test_a_negative_figure_stays_a_number(self, client, board):
        _, score_by_slices = board
        score_by_slices("Minus", (-5.0, 60.0, -2.5))
        (row,) = csv_rows(client.get("/api/leaderboards/mmae/?format=csv"))
        assert (row["IFR"], row["EMR"]) == ("-5.0", "-2.5")

    def test_a_number_written_as_text_stays_a_number(self):
        body = CsvRenderer().render({"kind": "mmae",
                                     "rows": [{"model": "-12.5", "licence": "+3e2"}]})
        (row,) = csv.DictReader(io.StringIO(body, newline=""))
        assert (row["model"], row["licence"]) == ("-12.5", "+3e2")

    def test_an_error_body_is_neutralised_too(self):
        body = CsvRenderer().render({"errors": ["=cmd", "fine"]})
        assert body == "error\r\n'=cmd\r\nfine\r\n"


class TestCacheKey:
    def test_unknown_and_reordered_parameters_hit_the_same_key(self, client, board,
                                                                cache_writes):
        _, score_by_slices = board
        score_by_slices("Alpha", (50.0, 60.0, 30.0),
                        slices={("modality", "sound"): (10.0, 20.0, 0.0)})
        first = client.get("/api/leaderboards/mmae/?dimension=modality&bucket=sound&format=csv")
        for query in ("format=csv&bucket=sound&dimension=modality",
                      "dimension=modality&cachebust=1&bucket=sound&format=csv",
                      "page=1&bucket=sound&format=csv&dimension=modality&cachebust=2"):
            response = client.get(f"/api/leaderboards/mmae/?{query}")
            assert response.content == first.content
        assert len(cache_writes("shared-response")) == 1

    def test_each_format_and_query_gets_its_own_key(self, client, board, cache_writes):
        _, score_by_slices = board
        score_by_slices("Alpha", (50.0, 60.0, 30.0))
        for query in ("", "format=csv", "sort=model", "sort=model&cachebust=1"):
            assert client.get(f"/api/leaderboards/mmae/?{query}").status_code == 200
        assert len(set(cache_writes("shared-response"))) == 3


def test_a_first_call_checks_its_slice_against_the_buckets_alone(client, board, monkeypatch):
    """The read API and the datasets check a slice against the board state's buckets, kept on
    their own: a first call after a change does not make the board's snapshot (which ranks
    the board's top rows). A new board state reads its buckets anew."""
    from leaderboard.boards import board_pages

    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={("modality", "sound"): (10.0, 20.0, 0.0)})
    monkeypatch.setattr(board_pages, "board_snapshot",
                        lambda *a: pytest.fail("the snapshot made for the API"))
    assert client.get("/api/leaderboards/mmae/?dimension=modality&bucket=sound") \
        .json()["count"] == 1
    unknown = client.get("/api/leaderboards/mmae/?dimension=modality&bucket=speech")
    assert unknown.status_code == 400 and "speech" in unknown.content.decode()
    items = client.get("/api/leaderboards/mmae/items/?dimension=modality&bucket=speech")
    assert items.status_code == 400
    score_by_slices("Beta", (40.0, 50.0, 20.0), slices={("modality", "speech"): (5.0, 5.0, 5.0)})
    assert client.get("/api/leaderboards/mmae/?dimension=modality&bucket=speech") \
        .json()["count"] == 1
