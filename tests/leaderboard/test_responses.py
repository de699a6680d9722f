"""Responses shared per board state (leaderboard/pages/responses.py): whole responses for anonymous
visitors, ETag and Last-Modified with 304 on revalidation, Cache-Control for a CDN, gzip, and
signed-in visitors' own navigation kept out of what others get."""

import gzip

import pytest
from django.utils.http import http_date

from scoring.boards import board_changed
from tests.html import texts

PAGES = ["/b/mmae/", "/b/mmae/?dimension=modality&bucket=sound",
         "/b/mmae/pivot/?dimension=modality&metric=EMR", "/b/mmae/compare/",
         "/api/leaderboards/mmae/", "/api/leaderboards/mmae/?format=csv"]


@pytest.fixture
def alpha_and_beta(board):
    benchmark, score_by_slices = board
    alpha = score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={("modality", "sound"): (1, 2, 3)})
    score_by_slices("Beta", (40.0, 70.0, 20.0), slices={("modality", "sound"): (4, 5, 6)})
    return benchmark, alpha


@pytest.mark.parametrize("url", [*PAGES, "model"])
def test_a_revalidation_answers_304_until_the_board_changes(url, client, alpha_and_beta):
    """By ETag only: a date names a second, and two states may share it."""
    benchmark, alpha = alpha_and_beta
    url = f"/m/{alpha.model_id}/" if url == "model" else url
    first = client.get(url)
    assert first.status_code == 200
    etag, modified = first["ETag"], first["Last-Modified"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == etag
    assert client.get(url, headers={"If-Modified-Since": modified}).status_code == 200
    board_changed(benchmark.id)
    changed = client.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_last_modified_is_when_the_board_last_changed(client, alpha_and_beta):
    benchmark, _ = alpha_and_beta
    benchmark.refresh_from_db()
    assert client.get("/b/mmae/")["Last-Modified"] == \
        http_date(int(benchmark.board_changed_at.timestamp()))


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_visitors_may_be_served_by_a_shared_cache(url, client, alpha_and_beta, settings):
    settings.BOARD_SHARED_MAX_AGE = 45
    response = client.get(url)
    control = {part.strip() for part in response["Cache-Control"].split(",")}
    assert control == {"public", "max-age=0", "s-maxage=45"}
    assert "Cookie" in response["Vary"]


def test_a_signed_in_visitors_page_is_private_to_them(client, alpha_and_beta, author):
    client.force_login(author)
    response = client.get("/b/mmae/")
    assert set(response["Cache-Control"].split(", ")) == {"private", "no-cache"}
    assert "Log out" in response.content.decode()


def test_a_signed_in_visitors_navigation_never_reaches_anonymous_visitors(client, alpha_and_beta,
                                                                          author, staff):
    client.force_login(staff)
    signed_in = client.get("/b/mmae/")
    client.logout()
    anonymous = client.get("/b/mmae/")
    assert "Staff" in signed_in.content.decode()
    html = anonymous.content.decode()
    assert "Log in" in html and "Log out" not in html and "Staff" not in texts(html, "a")
    assert signed_in["ETag"] != anonymous["ETag"]  # nor may a revalidation mix them up
    client.force_login(author)
    html = client.get("/b/mmae/").content.decode()
    assert "Log out" in html and "Staff" not in texts(html, "a")


def test_signed_in_visitors_get_the_cached_rows(client, alpha_and_beta, author, monkeypatch):
    from leaderboard.pages import views

    client.get("/b/mmae/")  # an anonymous visit renders the rows once
    client.force_login(author)

    def never(*args, **kwargs):
        raise AssertionError("rows rendered again")

    monkeypatch.setattr(views, "_board_body", never)
    assert "Alpha" in client.get("/b/mmae/").content.decode()


def test_anonymous_visitors_get_the_same_bytes_from_the_cache(client, alpha_and_beta, cache_writes):
    first = client.get("/b/mmae/?sort=EMR")
    assert client.get("/b/mmae/?utm_source=x&sort=EMR").content == first.content
    assert len(cache_writes("shared-response")) == 1


@pytest.mark.parametrize("url", ["/b/mmae/", "/api/leaderboards/mmae/"])
def test_the_response_is_gzipped_for_clients_that_accept_it(url, client, alpha_and_beta):
    plain = client.get(url)
    packed = client.get(url, headers={"Accept-Encoding": "gzip, deflate"})
    assert packed["Content-Encoding"] == "gzip" and "Content-Encoding" not in plain
    assert gzip.decompress(packed.content) == plain.content
    assert "Accept-Encoding" in packed["Vary"]
    # A revalidation of the gzipped one (its ETag made weak) still answers 304.
    assert client.get(url, headers={"Accept-Encoding": "gzip",
                                    "If-None-Match": packed["ETag"]}).status_code == 304


def test_a_bad_query_is_answered_afresh_and_never_cached(client, alpha_and_beta, cache_writes):
    assert client.get("/b/mmae/?dimension=nowhere").status_code == 400
    assert client.get("/api/leaderboards/mmae/?page=0").status_code == 400
    assert cache_writes("shared-response") == []


