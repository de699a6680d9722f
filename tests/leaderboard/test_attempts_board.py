"""The attempts column: each board row, its API row and CSV line, and the model page say how
many scored submissions the model's author made to the benchmark, private ones included."""

import csv
import datetime
import io

import pytest

from leaderboard.boards.model_pages import ATTEMPT_DAYS_LISTED, dated_attempts
from submissions.moderation import submission_delete
from tests.html import select, texts

pytestmark = pytest.mark.django_db


@pytest.fixture
def attempts_board(board, author, other_author):
    """Echo Editor's author tried twice in private (once under another model's name) before
    the public row; the other author submitted once."""
    benchmark, score_by_slices = board
    score_by_slices("Echo Editor (draft)", (70.0, 70.0, 30.0), public=False)
    hidden = score_by_slices("Echo Editor", (60.0, 60.0, 20.0), public=False)
    echo = score_by_slices("Echo Editor", (50.0, 60.0, 10.0))
    score_by_slices("Other", (40.0, 50.0, 5.0), owner=other_author)
    return benchmark, echo, hidden


def cell(body: str, model: str) -> str:
    """The attempts cell of a model's row on the board page."""
    (row,) = [row for row in select(body, "#board tbody tr")
              if row.select("td.model a.name bdi") and row.one("td.model a.name").text == model]
    return row.one("td.num.attempts").text


def test_the_board_api_and_csv_count_every_scored_attempt(client, attempts_board):
    body = client.get("/b/mmae/").content.decode()
    assert "Author's tries" in texts(body, "#board thead th.col-attempts a")[0]
    assert (cell(body, "Echo Editor"), cell(body, "Other")) == ("3", "1")
    rows = {r["model"]: r["attempts"] for r in client.get("/api/leaderboards/mmae/").json()[
        "rows"]}
    assert rows == {"Echo Editor": 3, "Other": 1}
    lines = list(csv.DictReader(io.StringIO(
        client.get("/api/leaderboards/mmae/?format=csv").content.decode())))
    assert {line["model"]: line["attempts"] for line in lines} == {"Echo Editor": "3",
                                                                   "Other": "1"}


def test_sorting_by_attempts_puts_the_most_tried_first(client, attempts_board):
    body = client.get("/b/mmae/?sort=attempts").content.decode()
    assert texts(body, "#board tbody td.model a.name bdi") == ["Echo Editor", "Other"]


def test_deleting_a_private_attempt_leaves_the_count(client, attempts_board, staff):
    _, _, hidden = attempts_board
    submission_delete(actor=staff, submission=hidden, reason="the author asked")
    body = client.get("/b/mmae/").content.decode()
    assert cell(body, "Echo Editor") == "3"
    rows = client.get("/api/leaderboards/mmae/").json()["rows"]
    assert {r["model"]: r["attempts"] for r in rows}["Echo Editor"] == 3


def test_attempts_are_counted_per_day_and_by_month_past_a_month_of_days():
    start = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.UTC)
    day = datetime.timedelta(days=1)
    assert dated_attempts([start + 2 * day, start, start]) == [("2026-01-01", 2),
                                                               ("2026-01-03", 1)]
    few = [start + i * day for i in range(ATTEMPT_DAYS_LISTED)]
    assert len(dated_attempts(few)) == ATTEMPT_DAYS_LISTED
    many = [start + i * day for i in range(ATTEMPT_DAYS_LISTED + 1)]  # Jan 1 to Feb 1
    assert dated_attempts(many) == [("2026-01", 31), ("2026-02", 1)]
    assert sum(n for _, n in dated_attempts(many * 3)) == 3 * len(many)


def test_the_model_page_lists_when_each_attempt_was_made(client, attempts_board):
    _, echo, hidden = attempts_board
    body = client.get(f"/m/{echo.model_id}/").content.decode()
    day = echo.created_at.strftime("%Y-%m-%d")  # all three were made today
    (mmae,) = [li for li in select(body, "ul.attempts li") if li.one("strong").text == "MMAE"]
    # Two of Echo Editor's own; the third under another of the author's names.
    assert mmae.text == (f"MMAE: 3 attempts by the author, 2 of them this model's, uploaded "
                         f"{day} (×3)")
    # The private drafts are counted and dated, never named or linked.
    assert "Echo Editor (draft)" not in body and f"/s/{hidden.pk}/" not in body
