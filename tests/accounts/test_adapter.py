"""accounts.adapter: which account an attempt counts on, and log-in providers offered only
once configured."""

from urllib.parse import parse_qs, urlsplit

import pytest

from accounts.adapter import account_name
from tests.html import texts

pytestmark = pytest.mark.django_db

PROVIDERS = {
    "github": {"APPS": [{"client_id": "gh-id", "secret": "gh-secret"}],
               "SCOPE": ["read:user", "user:email"]},
    "openid_connect": {"APPS": [{
        "provider_id": "huggingface", "name": "Hugging Face", "client_id": "hf-id",
        "secret": "hf-secret", "settings": {"server_url": "https://huggingface.co"}}]},
}


@pytest.mark.parametrize("credentials, name", [
    ({"username": "Author"}, "Author"),
    ({"email": "author@example.com", "username": "author@example.com"}, "author"),
    ({"email": "AUTHOR@example.com", "username": "AUTHOR@example.com"}, "author"),
    ({"email": "nobody@example.com", "username": "nobody@example.com"}, "nobody@example.com"),
    ({}, ""),
])
def test_an_attempt_counts_on_the_account_it_names(author, credentials, name):
    assert account_name(credentials) == name


@pytest.mark.parametrize("url", ["/accounts/github/login/", "/accounts/oidc/huggingface/login/"])
def test_a_provider_without_keys_is_not_there(client, url):
    assert client.get(url).status_code == 404
    assert client.post(url).status_code == 404
    html = client.get("/accounts/login/").content.decode()
    assert "GitHub" not in html and "Hugging Face" not in html


def test_configured_providers_are_offered_on_the_log_in_and_sign_up_pages(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = PROVIDERS
    for page in ("/accounts/login/", "/accounts/signup/"):
        html = client.get(page).content.decode()
        assert texts(html, 'a[href="/accounts/github/login/?process=login"]') == ["GitHub"]
        assert texts(html, 'a[href="/accounts/oidc/huggingface/login/?process=login"]') == [
            "Hugging Face"]


def test_github_log_in_goes_to_github_with_the_configured_client(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = PROVIDERS
    # A GET only asks to confirm (a link must not log anyone in by itself); the POST leaves.
    assert client.get("/accounts/github/login/").status_code == 200
    response = client.post("/accounts/github/login/")
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.netloc == "github.com" and location.path == "/login/oauth/authorize"
    query = parse_qs(location.query)
    assert query["client_id"] == ["gh-id"]
    assert query["redirect_uri"] == ["http://testserver/accounts/github/login/callback/"]
    assert set(query["scope"][0].split()) == {"read:user", "user:email"}
