"""The caches of a hidden-rubric board follow who asks: an organizer's pages, kept by the front
for their session, are never answered again once they stop being an organizer (their epoch
renewed by challenges.apps), and a page made for them never reaches anyone else from the
responses cache (scoring.visibility.cache_part in its key)."""

import pytest
from django.test import Client

from challenges.models import Organizer, Phase
from tests.challenges.test_hidden_crawler import REPLY, SLUG, final_phase_of  # noqa: F401
from tests.config.test_page_cache import call, clock, django_app, front, signed_in  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_an_organizer_removed_is_answered_their_kept_pages_no_more(
        final_phase_of, front, client, django_capture_on_commit_callbacks):  # noqa: F811
    state = final_phase_of(Phase.Shown.NOTHING)
    cookie = signed_in(front, client, state["organizer"])
    item = f"/b/{SLUG}/i/{state['keys'][0]}/"
    for _ in range(2):  # the second from the front, for their session
        board, detail = (call(front, url, headers={"Cookie": cookie})
                         for url in (f"/b/{SLUG}/", item))
        assert board.status == 200 and b'id="board"' in board.body
        assert detail.status == 200 and REPLY.encode() in detail.body
    with django_capture_on_commit_callbacks(execute=True):
        Organizer.objects.filter(user=state["organizer"]).delete()
    board = call(front, f"/b/{SLUG}/", headers={"Cookie": cookie})
    assert board.status == 200 and b'id="board"' not in board.body
    assert b"Hidden Editor" in board.body
    assert call(front, item, headers={"Cookie": cookie}).status == 404
    with django_capture_on_commit_callbacks(execute=True):
        Organizer.objects.create(challenge=state["phase"].challenge, user=state["organizer"])
    assert b'id="board"' in call(front, f"/b/{SLUG}/", headers={"Cookie": cookie}).body


@pytest.mark.slow
def test_a_page_made_for_an_organizer_reaches_no_one_else(
        final_phase_of, front, client, author):  # noqa: F811
    """Each page first for the organizer, then for the author and a visitor: the board's body
    and the item page are kept in the responses cache per board state, and the organizer's
    figures and replies stay theirs."""
    state = final_phase_of(Phase.Shown.NOTHING)
    organizer = signed_in(front, client, state["organizer"])
    participant = signed_in(front, Client(), author)
    item = f"/b/{SLUG}/i/{state['keys'][0]}/"
    for url, mark, hidden_status in ((f"/b/{SLUG}/", b'id="board"', 200),
                                     (item, REPLY.encode(), 404),
                                     (f"/api/leaderboards/{SLUG}/", b'"rows"', 404)):
        made = call(front, url, headers={"Cookie": organizer})
        assert mark in made.body or url.startswith("/api/")  # the API reads no session
        for cookie in (participant, None):
            answer = call(front, url, headers={"Cookie": cookie} if cookie else {})
            assert answer.status == hidden_status and mark not in answer.body, url
