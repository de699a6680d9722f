"""Live badges: an SVG per model and board saying its rank, rank range, the ranking figure
with its interval and the board version; revalidated by an ETag that moves with the board;
404 for a model not on it; the model page gives the snippet to copy."""

from scoring.boards import board_changed
from submissions.models import Submission
from tests.html import one, select


def test_a_badge_says_the_rank_the_figure_and_the_version(client, board):
    benchmark, score_by_slices = board
    alpha = score_by_slices("Alpha", (60.0, 70.0, 30.0),
                            intervals={("overall", ""): {"EMR": (22.5, 37.5)}})
    score_by_slices("Beta", (50.0, 60.0, 10.0))
    url = f"/b/{benchmark.slug}/badge/{alpha.model_id}.svg"
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert "max-age=300" in response["Cache-Control"] and "public" in response["Cache-Control"]
    svg = response.content.decode()
    rows = client.get(f"/api/leaderboards/{benchmark.slug}/").json()["rows"]
    mine = next(r for r in rows if r["model"] == "Alpha")
    assert f"#{mine['rank']}" in svg and f"EMR {mine['EMR']:.2f}" in svg
    benchmark.refresh_from_db()
    assert f"v{benchmark.board_version}" in svg
    assert (mine["EMR_lo"], mine["EMR_hi"]) == (22.5, 37.5)
    assert "EMR 30.00 [22.50, 37.50]" in svg
    # Unchanged board: 304; a change: a new badge.
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    board_changed(benchmark.id)
    assert client.get(url, HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 200


def test_a_model_not_on_the_board_has_no_badge(client, board):
    benchmark, score_by_slices = board
    alpha = score_by_slices("Alpha", (60.0, 70.0, 30.0))
    Submission.objects.filter(pk=alpha.pk).update(public=False)
    board_changed(benchmark.id)
    assert client.get(f"/b/{benchmark.slug}/badge/{alpha.model_id}.svg").status_code == 404
    assert client.get(f"/b/{benchmark.slug}/badge/999999.svg").status_code == 404


def test_the_model_page_gives_the_snippet(client, board):
    benchmark, score_by_slices = board
    alpha = score_by_slices("Alpha", (60.0, 70.0, 30.0))
    html = client.get(f"/m/{alpha.model_id}/").content.decode()
    snippet = one(html, f"#badge-{benchmark.slug}")
    badge = f"/b/{benchmark.slug}/badge/{alpha.model_id}.svg"
    assert one(snippet, "p > img").attrs["src"] == badge
    markdown = select(snippet, "label > textarea")[0].text
    assert markdown == (f"[![{benchmark.title} rank](http://testserver{badge})]"
                        f"(http://testserver/b/{benchmark.slug}/)")
