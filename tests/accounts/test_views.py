"""The API tokens page (accounts.views): create, list and revoke one's own tokens."""

import pytest
from django.urls import reverse

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def test_the_pages_keep_their_addresses():
    assert reverse("accounts:tokens") == "/accounts/tokens/"
    assert reverse("accounts:token-revoke", args=[7]) == "/accounts/tokens/7/revoke/"


def test_tokens_page_needs_login(client):
    response = client.get(reverse("accounts:tokens"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_creating_a_token_shows_its_key_once(client, author):
    client.force_login(author)
    response = client.post(reverse("accounts:tokens"), {"name": "CI uploads"})
    assert response.status_code == 200
    key = response.context["new_key"]
    token = ApiToken.objects.get(user=author)
    assert token.name == "CI uploads"
    assert token.key_hash == ApiToken.hash_key(key)
    html = response.content.decode()
    assert f"Authorization: Token {key}" in html
    assert key not in client.get(reverse("accounts:tokens")).content.decode()


def test_tokens_page_lists_only_your_tokens(client, author, other_author):
    mine, _ = ApiToken.issue(user=author, name="laptop")
    ApiToken.issue(user=other_author, name="not-mine")
    client.force_login(author)
    html = client.get(reverse("accounts:tokens")).content.decode()
    assert "laptop" in html and mine.prefix in html
    assert "not-mine" not in html


def test_creating_a_token_needs_a_name(client, author):
    client.force_login(author)
    response = client.post(reverse("accounts:tokens"), {"name": ""})
    assert response.status_code == 200
    assert response.context["form"].errors["name"] == ["This field is required."]
    assert response.context["new_key"] is None
    assert not ApiToken.objects.exists()


def test_revoking_a_token_marks_it_revoked(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    client.force_login(author)
    response = client.post(reverse("accounts:token-revoke", args=[token.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:tokens")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_revoking_another_users_token_gives_404(client, author, other_author):
    token, _ = ApiToken.issue(user=other_author, name="theirs")
    client.force_login(author)
    assert client.post(reverse("accounts:token-revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_needs_post(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    client.force_login(author)
    assert client.get(reverse("accounts:token-revoke", args=[token.pk])).status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_needs_login(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    response = client.post(reverse("accounts:token-revoke", args=[token.pk]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))
    token.refresh_from_db()
    assert token.revoked_at is None
