"""Every form that posts carries a CSRF token, and a post without one is refused."""

import re

from django.conf import settings
from django.test import Client

from tests.conftest import CAST_PASSWORD

TEMPLATES = settings.BASE_DIR / "templates"
FORM = re.compile(r"<form\b(?P<attrs>[^>]*)>(?P<body>.*?)</form>", re.S | re.I)
POST = re.compile(r"""method\s*=\s*["']?post""", re.I)


def post_forms() -> list[tuple[str, str]]:
    return [(path.relative_to(TEMPLATES).as_posix(), match["body"])
            for path in sorted(TEMPLATES.rglob("*.html"))
            for match in FORM.finditer(path.read_text())
            if POST.search(match["attrs"])]


def test_every_post_form_in_the_templates_carries_a_csrf_token():
    forms = post_forms()
    assert {"account/verified_email_required.html", "submissions/upload.html", "base.html",
            "accounts/tokens.html"} <= {name for name, _ in forms}
    missing = [name for name, body in forms if "{% csrf_token %}" not in body]
    assert missing == []


def test_a_form_post_without_the_token_is_refused_with_403(author):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"login": "author", "password": CAST_PASSWORD})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session


def test_a_form_post_with_the_token_goes_through(author):
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post("/accounts/login/", {"login": "author", "password": CAST_PASSWORD,
                                                "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(author.pk)


def test_a_signed_in_author_posting_without_the_token_changes_nothing(author):
    client = Client(enforce_csrf_checks=True)
    client.force_login(author)
    response = client.post("/accounts/tokens/", {"name": "ci"})
    assert response.status_code == 403
    assert author.api_tokens.count() == 0
