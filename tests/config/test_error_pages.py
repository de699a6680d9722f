"""404, 403 and 500 answer with the site's own pages: its header and links, no stack trace.
The 500 page renders without a database, as when the database is what failed."""

import pytest
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from django.urls import path
from django.views import defaults

from config.urls import urlpatterns as site_urls
from tests.html import one, select, texts


def boom(request):
    raise RuntimeError("a bug in a view")


def forbidden(request):
    raise PermissionDenied("no")


urlpatterns = [path("boom/", boom), path("forbidden/", forbidden), *site_urls]

SITE_LINKS = {"/api/docs/": "API", "/accounts/login/": "Log in"}  # href: the link's text


def site_page(client, url: str, status: int) -> str:
    """The page at `url`, which must answer `status` with the site's header and links."""
    response = client.get(url)
    assert response.status_code == status
    html = response.content.decode()
    for href, text in SITE_LINKS.items():
        assert text in texts(html, f'a[href="{href}"]')
    assert select(html, 'link[rel=icon][href="/static/favicon.svg"]')
    assert select(html, "header a.brand") and "Traceback" not in html
    return html


def test_an_unknown_address_gets_the_styled_404_page_naming_it(client, db):
    html = site_page(client, "/no-such-page/", 404)
    assert one(html, "h1").text == "Page not found"
    assert one(html, ".error-page code").text == "/no-such-page/"


def test_a_missing_submission_gets_the_same_404_page(client, db):
    assert "Page not found" in site_page(client, "/s/999999/", 404)


@pytest.mark.urls(__name__)
def test_a_refused_request_gets_the_styled_403_page(client, db):
    html = site_page(client, "/forbidden/", 403)
    assert one(html, "h1").text == "Not allowed"
    assert one(html, '.error-page a[href="/accounts/login/?next=/forbidden/"]').text == "log in"


@pytest.mark.urls(__name__)
def test_a_crash_gets_the_500_page_without_touching_the_database(client):
    # No `db` fixture: any query, from the page or its middleware, would fail the test.
    client.raise_request_exception = False
    assert "Something went wrong on our side" in site_page(client, "/boom/", 500)


def test_the_500_page_renders_with_no_request_context():
    response = defaults.server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    assert "Something went wrong on our side" in response.content.decode()
