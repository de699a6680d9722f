"""What moderation does to the board and the public pages: a hidden submission vanishes (its
owner and staff still see it, marked), a flagged one shows its flag and reason, and an author's
chosen representative is the model's row."""

import pytest

from leaderboard.boards import model_pages
from submissions import moderation
from tests.html import one, texts


@pytest.fixture
def two_models(board):
    benchmark, score_by_slices = board
    return (benchmark, score_by_slices("Echo Editor", (80.0, 70.0, 60.0)),
            score_by_slices("Vox Remix", (50.0, 40.0, 30.0)))


def board_table(client):
    return one(client.get("/b/mmae/"), "table#board")


def test_a_hidden_submission_leaves_the_board_and_its_api(client, two_models, staff):
    _, echo, _ = two_models
    assert "Echo Editor" in board_table(client).text  # cached under the board's state
    moderation.submission_hide(actor=staff, submission=echo, reason="spam")
    assert "Echo Editor" not in board_table(client).all_text
    rows = client.get("/api/leaderboards/mmae/").json()["rows"]
    assert [r["model"] for r in rows] == ["Vox Remix"]
    assert "Echo Editor" not in client.get("/api/leaderboards/mmae/?format=csv").content.decode()


@pytest.mark.parametrize("who", ["anonymous", "other_author"])
def test_a_hidden_submission_is_a_404_on_every_public_page(client, two_models, staff, request,
                                                           who):
    _, echo, _ = two_models
    moderation.submission_hide(actor=staff, submission=echo, reason="spam")
    if who != "anonymous":
        client.force_login(request.getfixturevalue(who))
    for url in (f"/s/{echo.pk}/", f"/s/{echo.pk}/samples/",
                f"/api/submissions/{echo.pk}/slices/", f"/m/{echo.model_id}/",
                f"/api/models/{echo.model_id}/"):
        assert client.get(url).status_code == 404, url


@pytest.mark.parametrize("who", ["author", "staff"])
def test_its_owner_and_staff_still_see_a_hidden_submission_marked(client, two_models, staff,
                                                                  request, who):
    _, echo, _ = two_models
    moderation.submission_hide(actor=staff, submission=echo, reason="spam")
    client.force_login(request.getfixturevalue(who))
    page = client.get(f"/s/{echo.pk}/")
    assert page.status_code == 200 and "hidden by staff" in page.content.decode()
    status = client.get(f"/submissions/{echo.pk}/").content.decode()
    assert "Staff have hidden this submission" in status


def test_a_flagged_submission_stays_with_its_flag_and_reason(client, two_models, staff):
    _, echo, _ = two_models
    board_table(client)
    moderation.submission_flag(actor=staff, submission=echo,
                               reason="outputs resemble the references")
    table = board_table(client)
    (row,) = [row for row in table.select("tbody tr") if "Echo Editor" in texts(row, ".name")]
    assert texts(row, "span.badge.flagged") == ["flagged"]
    assert texts(row, "small.flag-reason") == ["outputs resemble the references"]
    rows = {r["model"]: r["flag"] for r in client.get("/api/leaderboards/mmae/").json()["rows"]}
    assert rows == {"Echo Editor": "outputs resemble the references", "Vox Remix": None}
    page = client.get(f"/s/{echo.pk}/").content.decode()
    assert "Flagged by staff: outputs resemble the references" in page


def test_the_chosen_representative_is_the_models_row(client, board, author):
    _, score_by_slices = board
    older = score_by_slices("Echo Editor", (80.0, 70.0, 60.0))
    latest = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    row = client.get("/api/leaderboards/mmae/").json()["rows"][0]
    assert row["submission"] == latest.pk  # by default the latest
    moderation.model_set_representative(actor=author, submission=older)
    row = client.get("/api/leaderboards/mmae/").json()["rows"][0]
    assert (row["submission"], row["EMR"]) == (older.pk, 60.0)
    # The model's page shows the slices of the same submission.
    shown = model_pages.featured_submissions(model_pages.model_submissions(author, older.model))
    assert shown["mmae"] == older


def test_a_chosen_representative_made_private_falls_back_to_the_latest(client, board, author):
    _, score_by_slices = board
    older = score_by_slices("Echo Editor", (80.0, 70.0, 60.0))
    latest = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    moderation.model_set_representative(actor=author, submission=older)
    moderation.submission_set_public(actor=author, submission=older, public=False)
    rows = client.get("/api/leaderboards/mmae/").json()["rows"]
    assert [r["submission"] for r in rows] == [latest.pk]


def test_a_private_submission_made_public_by_its_author_joins_the_board(client, board, author):
    _, score_by_slices = board
    submission = score_by_slices("Echo Editor", (80.0, 70.0, 60.0), public=False)
    assert "Echo Editor" not in board_table(client).all_text
    moderation.submission_set_public(actor=author, submission=submission, public=True)
    assert "Echo Editor" in board_table(client).text


def test_the_model_api_shows_flags_to_all_and_hidden_ones_to_their_owner(client, board, author,
                                                                          staff):
    _, score_by_slices = board
    flagged = score_by_slices("Echo Editor", (80.0, 70.0, 60.0))
    hidden = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    moderation.submission_flag(actor=staff, submission=flagged, reason="odd")
    moderation.submission_hide(actor=staff, submission=hidden, reason="duplicate")
    seen = client.get(f"/api/models/{flagged.model_id}/").json()["submissions"]
    assert [(s["id"], s["flag"], s["hidden"]) for s in seen] == [(flagged.pk, "odd", False)]
    client.force_login(author)
    mine = client.get(f"/api/models/{flagged.model_id}/").json()["submissions"]
    assert [(s["id"], s["hidden"]) for s in mine] == [(hidden.pk, True), (flagged.pk, False)]


def test_the_representatives_of_a_few_models_are_the_boards_read_or_kept(board, author,
                                                                           other_author, staff):
    """state.representatives_of (what the compare forms read for the models asked for) picks
    each model's representative as the whole board's reading does: the chosen one, else the
    latest public; never a private or hidden submission; a model without one left out."""
    from leaderboard.boards import state

    benchmark, score_by_slices = board
    older = score_by_slices("Echo Editor", (80.0, 70.0, 60.0))
    latest = score_by_slices("Echo Editor", (50.0, 40.0, 30.0))
    chosen = score_by_slices("Vox Remix", (70.0, 60.0, 50.0))
    score_by_slices("Vox Remix", (60.0, 50.0, 40.0))
    moderation.model_set_representative(actor=author, submission=chosen)
    hidden = score_by_slices("Hidden Hum", (90.0, 90.0, 90.0))
    moderation.submission_hide(actor=staff, submission=hidden, reason="duplicate")
    private = score_by_slices("Quiet Quill", (90.0, 90.0, 90.0), public=False, owner=other_author)
    score_by_slices("Bystander", (10.0, 10.0, 10.0))
    benchmark.refresh_from_db()
    asked = [older.model_id, chosen.model_id, hidden.model_id, private.model_id, 999_999]
    whole = {s.model_id: s for s in state._read_representatives(benchmark)}
    state.forget()
    read = state.representatives_of(benchmark, asked)  # read for these models alone
    assert {m: s.id for m, s in read.items()} == {older.model_id: latest.id,
                                                   chosen.model_id: chosen.id}
    assert read == {m: whole[m] for m in read}
    state.representatives(benchmark)  # the board's state kept by this process
    assert state.representatives_of(benchmark, asked) == read
    assert state.representatives_of(benchmark, []) == {}
