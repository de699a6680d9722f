"""POST /api/token/: a username and password for a new personal token."""

import pytest

from accounts.models import ApiToken
from tests.conftest import CAST_PASSWORD as PASSWORD

pytestmark = pytest.mark.django_db

URL = "/api/token/"


@pytest.mark.parametrize("fmt", ["json", "multipart"])
def test_good_credentials_get_a_new_token(client, author, fmt):
    data = {"username": "author", "password": PASSWORD}
    if fmt == "json":
        response = client.post(URL, data, content_type="application/json")
    else:
        response = client.post(URL, data)
    assert response.status_code == 200
    key = response.json()["token"]
    token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
    assert token.user == author and token.name == "api"


def test_each_request_issues_another_token(client, author):
    data = {"username": "author", "password": PASSWORD}
    keys = {client.post(URL, data).json()["token"] for _ in range(2)}
    assert len(keys) == 2
    assert ApiToken.objects.filter(user=author).count() == 2


def test_wrong_password_gives_400(client, author):
    response = client.post(URL, {"username": "author", "password": "nope"})
    assert response.status_code == 400
    assert response.json() == {"errors": ["Unable to log in with provided credentials."]}
    assert not ApiToken.objects.exists()


def test_inactive_user_gets_no_token(client, author):
    author.is_active = False
    author.save()
    response = client.post(URL, {"username": "author", "password": PASSWORD})
    assert response.status_code == 400


def test_missing_fields_are_named(client):
    response = client.post(URL, {}, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"errors": ["username: This field is required.",
                                          "password: This field is required."]}


def test_the_endpoint_needs_post(client):
    assert client.get(URL).status_code == 405


def test_the_endpoint_keeps_its_address():
    from django.urls import reverse

    assert reverse("accounts:api-token") == URL


def test_a_malformed_json_body_is_named(client):
    response = client.post(URL, '{"username": "author",', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("JSON parse error")
