"""The panel's page and the judge card page: who sees what, and pages of other kinds."""

from allauth.account.models import EmailAddress


def test_the_panel_page_asks_a_visitor_to_sign_in(client, panel_board, author):
    panel_board.scored("Echo", author)
    page = client.get("/b/mmae/panel/").content.decode()
    assert "Sign in to rate" in page and "panel.js" not in page


def test_the_panel_page_asks_for_a_confirmed_address(client, panel_board, author, raters):
    rater, = raters(1)
    EmailAddress.objects.filter(user=rater).update(verified=False)
    client.force_login(rater)
    page = client.get("/b/mmae/panel/").content.decode()
    assert "Confirm your email address" in page and "panel.js" not in page


def test_the_panel_page_loads_its_script_for_a_rater(client, panel_board, author, raters):
    rater, = raters(1)
    client.force_login(rater)
    page = client.get("/b/mmae/panel/").content.decode()
    assert "/static/js/panel.js" in page and 'data-next="/api/panel/mmae/next/"' in page
    assert "<script>" not in page  # no inline script (CSP)


def test_unknown_boards_are_404(client, db):
    assert client.get("/b/nope/judge/").status_code == 404
    assert client.get("/b/nope/panel/").status_code == 404
    assert client.get("/api/leaderboards/nope/judge/").status_code == 404


def test_the_card_of_a_board_without_answers_says_so(client, panel_board, author):
    panel_board.scored("Echo", author)
    card = client.get("/api/leaderboards/mmae/judge/").json()
    assert card["panel"]["open"] and card["panel"]["answers"] == 0
    assert card["configs"][0]["human"]["rubrics"] == 0
    assert "no rubric has two answers" in client.get("/b/mmae/judge/").content.decode()
