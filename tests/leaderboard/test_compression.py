"""The explorer's responses gzipped by Accept-Encoding where they hold no secret, each encoding
with its own ETag and 304 (leaderboard.pages.compression), on `light_explorer`'s submissions."""

import gzip

import pytest

from scoring.models import Answer
from tests.leaderboard.test_explorer_rubrics import FRAGMENT, GZIP, rubrics_url

# `slow`: its shared set-up (light_explorer: 40 samples, each rubric voted thrice) takes 1.0 s
pytestmark = pytest.mark.slow

IDENTITY = {"HTTP_ACCEPT_ENCODING": "identity"}


@pytest.fixture
def public(light_explorer, db):
    return light_explorer["public"]


@pytest.fixture
def private(light_explorer, db):
    return light_explorer["private"]


@pytest.fixture
def keys(light_explorer):
    """The benchmark's item keys, in order."""
    return light_explorer["keys"]


def vary(response) -> set[str]:
    return {v.strip().lower() for v in response.get("Vary", "").split(",")}


@pytest.fixture
def urls(public, keys):
    return [f"/s/{public.pk}/", f"/s/{public.pk}/samples/?page=2",
            rubrics_url(public, keys[0])]


def test_an_anonymous_visitor_gets_each_page_gzipped_when_asking(client, urls):
    for url in urls:
        plain = client.get(url, **IDENTITY)
        packed = client.get(url, **GZIP)
        assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip", url
        assert gzip.decompress(packed.content) == plain.content, url
        assert int(packed["Content-Length"]) == len(packed.content) < len(plain.content)
        assert {"accept-encoding", "cookie"} <= vary(plain) and vary(plain) == vary(packed)


def test_a_gzip_with_q_zero_is_refused(client, urls):
    response = client.get(urls[0], HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert "Content-Encoding" not in response


def test_each_encoding_has_its_own_etag_and_answers_304_to_it(client, urls):
    for url in urls:
        plain, packed = client.get(url, **IDENTITY), client.get(url, **GZIP)
        assert plain["ETag"] != packed["ETag"]
        assert packed["ETag"] == plain["ETag"][:-1] + '-gzip"'
        again = client.get(url, HTTP_IF_NONE_MATCH=packed["ETag"], **GZIP)
        assert again.status_code == 304 and again.content == b""
        assert again["ETag"] == packed["ETag"] and "accept-encoding" in vary(again)
        assert client.get(url, HTTP_IF_NONE_MATCH=plain["ETag"], **IDENTITY).status_code == 304
        # a client that stops taking gzip never gets the gzipped copy's 304
        crossed = client.get(url, HTTP_IF_NONE_MATCH=packed["ETag"], **IDENTITY)
        assert crossed.status_code == 200 and "Content-Encoding" not in crossed


def test_the_etag_moves_with_the_content(client, public, keys):
    url = rubrics_url(public, keys[0])
    before = client.get(url, **FRAGMENT, **GZIP)["ETag"]
    Answer.objects.filter(run=public.current_run, criterion__item__key=keys[0]).update(
        reason="A different reason now.")
    after = client.get(url, HTTP_IF_NONE_MATCH=before, **FRAGMENT, **GZIP)
    assert after.status_code == 200 and after["ETag"] != before
    assert b"A different reason now." in gzip.decompress(after.content)


def test_a_signed_in_visitors_page_is_never_gzipped_it_holds_a_csrf_token(client, public,
                                                                         other_author):
    client.force_login(other_author)
    page = client.get(f"/s/{public.pk}/", **GZIP)
    assert page.status_code == 200 and "Content-Encoding" not in page
    assert b"csrfmiddlewaretoken" in page.content
    assert "private" in page["Cache-Control"] and "no-cache" in page["Cache-Control"]


def test_a_signed_in_visitor_gets_a_published_submissions_partials_gzipped(client, public,
                                                                          keys, other_author):
    client.force_login(other_author)
    for url in (f"/s/{public.pk}/samples/", rubrics_url(public, keys[0])):
        response = client.get(url, **FRAGMENT, **GZIP)
        assert response["Content-Encoding"] == "gzip", url
        assert b"csrfmiddlewaretoken" not in gzip.decompress(response.content)


def test_the_no_script_page_of_a_table_is_not_gzipped_for_a_signed_in_visitor(
        client, public, keys, other_author):
    client.force_login(other_author)
    response = client.get(rubrics_url(public, keys[0]), **GZIP)  # a whole page: a CSRF token
    assert response.status_code == 200 and "Content-Encoding" not in response


def test_a_private_submission_is_never_gzipped_even_to_its_author(client, private, keys,
                                                                  author):
    client.force_login(author)
    for url in (f"/s/{private.pk}/", f"/s/{private.pk}/samples/?q=check",
                rubrics_url(private, keys[0])):
        response = client.get(url, **FRAGMENT, **GZIP)
        assert response.status_code == 200 and "Content-Encoding" not in response, url
        assert "private" in response["Cache-Control"]


def test_an_anonymous_page_may_be_kept_but_is_revalidated_each_time(client, urls):
    control = client.get(urls[0], **GZIP)["Cache-Control"]
    assert "no-cache" in control and "private" not in control


def test_a_bad_query_is_a_400_neither_gzipped_nor_validated(client, public):
    response = client.get(f"/s/{public.pk}/samples/?page=999", **GZIP)
    assert response.status_code == 400 and "Content-Encoding" not in response
    assert "ETag" not in response and b"past the last page" in response.content
