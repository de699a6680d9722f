"""The read API's paging: `page` and `page_size` (default 100, at most 1,000), with `count`,
`next` and `previous`; a bad value answers 400 naming it."""

import csv
import io

import pytest

from leaderboard.pages.forms import ApiBoardForm


@pytest.fixture
def five(board):
    benchmark, score_by_slices = board
    for i in range(5):
        score_by_slices(f"M{i}", (50.0, 50.0, 10.0 + i))
    return benchmark


def test_a_page_holds_page_size_rows_in_rank_order(client, five):
    first = client.get("/api/leaderboards/mmae/?page_size=2").json()
    assert (first["count"], first["page"], first["page_size"]) == (5, 1, 2)
    assert [r["model"] for r in first["rows"]] == ["M4", "M3"]
    assert first["previous"] is None
    second = client.get(first["next"]).json()
    assert [r["model"] for r in second["rows"]] == ["M2", "M1"]
    assert [r["rank"] for r in second["rows"]] == [3, 4]  # ranks stay those of the board
    last = client.get(second["next"]).json()
    assert [r["model"] for r in last["rows"]] == ["M0"] and last["next"] is None
    assert client.get(last["previous"]).json() == second


def test_the_default_page_is_the_first_hundred_rows(client, five):
    body = client.get("/api/leaderboards/mmae/").json()
    assert (body["page"], body["page_size"], body["count"]) == (1, 100, 5)
    assert len(body["rows"]) == 5 and body["next"] is None
    assert ApiBoardForm.DEFAULT_PAGE_SIZE == 100


def test_the_csv_holds_the_page_and_links_the_next(client, five):
    response = client.get("/api/leaderboards/mmae/?format=csv&page_size=3&utm_source=x")
    rows = list(csv.DictReader(io.StringIO(response.content.decode(), newline="")))
    assert [r["model"] for r in rows] == ["M4", "M3", "M2"]
    # The next page's URL carries the query, never a stray parameter.
    assert response["Link"] == ('<http://testserver/api/leaderboards/mmae/?format=csv&'
                                'page_size=3&page=2>; rel="next"')


@pytest.mark.parametrize(("query", "message"), [
    ("page=0", "page: must be 1 or more"),
    ("page=two", "page: must be a whole number, 1 or more"),
    ("page_size=0", "page_size: must be 1 or more"),
    ("page_size=1001", "page_size: must be at most 1000"),
    ("page_size=lots", "page_size: must be a whole number from 1 to 1000"),
    ("page=3&page_size=3", "page: 3 is past the last page, 2 (5 rows at 3 a page)"),
])
def test_a_bad_page_answers_400_naming_it(client, five, query, message):
    response = client.get(f"/api/leaderboards/mmae/?{query}")
    assert response.status_code == 400
    assert response.json() == {"errors": [message]}


def test_paging_is_in_the_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    parameters = {p["name"]: p for p in
                  schema["paths"]["/api/leaderboards/{slug}/"]["get"]["parameters"]}
    assert parameters["page"]["schema"]["type"] == "integer"
    assert "1000" in parameters["page_size"]["description"]
    described = schema["paths"]["/api/leaderboards/{slug}/"]["get"]["responses"]["200"]
    assert "`next`" in described["description"]


def test_a_board_page_past_the_end_says_so(client, five):
    """The page's 404 names what is wrong, not "nothing is published" (the board is)."""
    response = client.get("/b/mmae/?page=5")
    assert response.status_code == 404
    from tests.html import one
    html = response.content.decode()
    assert one(html, "p.why").text == "Page 5 is past the last page (1)."
    assert one(html, 'a[href="/b/mmae/"]').text == "its first page"
