import re

import pytest
from django.core import mail
from django.urls import reverse

from submissions.models import ApiToken

pytestmark = pytest.mark.django_db

PASSWORD = "pw-correct-horse-1"  # the cast's password (tests/conftest.py)
NEW_PASSWORD = "a-new-Sturdy-passphrase-7"


@pytest.fixture(autouse=True)
def _login_redirect(settings):
    # settings.LOGIN_REDIRECT_URL names "submissions:list", which the submissions pages
    # bring; a path keeps these tests independent of them.
    settings.LOGIN_REDIRECT_URL = "/submissions/"


def signup_data(**overrides):
    return {"username": "newcomer", "email": "newcomer@example.com",
            "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, **overrides}


# Sign-up

def test_signup_creates_the_user_logs_them_in_and_redirects(client, django_user_model):
    response = client.post(reverse("signup"), signup_data())
    assert response.status_code == 302
    assert response["Location"] == "/submissions/"
    user = django_user_model.objects.get(username="newcomer")
    assert user.email == "newcomer@example.com"
    assert user.check_password(NEW_PASSWORD)
    assert client.session["_auth_user_id"] == str(user.pk)


def test_signup_page_shows_the_form(client):
    response = client.get(reverse("signup"))
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("username", "email", "password1", "password2"):
        assert f'name="{name}"' in html


def test_signup_refuses_a_taken_username(client, author, django_user_model):
    response = client.post(reverse("signup"), signup_data(username="Author"))
    assert response.status_code == 200
    assert "A user with that username already exists." in response.content.decode()
    assert django_user_model.objects.count() == 1


def test_signup_refuses_mismatched_passwords(client, django_user_model):
    response = client.post(reverse("signup"), signup_data(password2=NEW_PASSWORD + "x"))
    assert response.status_code == 200
    assert "The two password fields didn" in response.content.decode()
    assert not django_user_model.objects.exists()


def test_signup_requires_an_email(client, django_user_model):
    response = client.post(reverse("signup"), signup_data(email=""))
    assert response.status_code == 200
    assert response.context["form"].errors["email"] == ["This field is required."]
    assert not django_user_model.objects.exists()


# Log-in and log-out

def test_login_with_the_right_password_redirects(client, author):
    response = client.post(reverse("login"), {"username": "author", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/submissions/"
    assert client.session["_auth_user_id"] == str(author.pk)


def test_login_with_a_wrong_password_shows_an_error(client, author):
    response = client.post(reverse("login"), {"username": "author", "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_logout_needs_post_and_logs_out(client, author):
    client.force_login(author)
    assert client.get(reverse("logout")).status_code == 405
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:home")
    assert "_auth_user_id" not in client.session


def test_the_header_offers_login_to_visitors_and_logout_to_users(client, author):
    html = client.get(reverse("leaderboard:home")).content.decode()
    assert f'href="{reverse("login")}"' in html and f'href="{reverse("signup")}"' in html
    client.force_login(author)
    html = client.get(reverse("leaderboard:home")).content.decode()
    assert f'action="{reverse("logout")}"' in html
    assert f'href="{reverse("tokens")}"' in html
    assert 'href="/submissions/"' in html and 'href="/submit/"' in html


# Password reset

def test_password_reset_emails_a_link_that_sets_a_new_password(client, author):
    response = client.post(reverse("password_reset"), {"email": "author@example.com"})
    assert response.status_code == 302
    assert response["Location"] == reverse("password_reset_done")
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["author@example.com"]
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)

    # Django swaps the token in the link for one kept in the session, then redirects.
    form_page = client.get(link, follow=True)
    assert form_page.context["validlink"]
    response = client.post(form_page.redirect_chain[-1][0],
                           {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response["Location"] == reverse("password_reset_complete")
    author.refresh_from_db()
    assert author.check_password(NEW_PASSWORD)
    assert client.get(link, follow=True).context["validlink"] is False


def test_password_reset_for_an_unknown_email_sends_nothing(client, author):
    response = client.post(reverse("password_reset"), {"email": "nobody@example.com"})
    assert response["Location"] == reverse("password_reset_done")
    assert mail.outbox == []


# API tokens page

def test_tokens_page_needs_login(client):
    response = client.get(reverse("tokens"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_creating_a_token_shows_its_key_once(client, author):
    client.force_login(author)
    response = client.post(reverse("tokens"), {"name": "CI uploads"})
    assert response.status_code == 200
    key = response.context["new_key"]
    token = ApiToken.objects.get(user=author)
    assert token.name == "CI uploads"
    assert token.key_hash == ApiToken.hash_key(key)
    html = response.content.decode()
    assert f"Authorization: Token {key}" in html
    assert key not in client.get(reverse("tokens")).content.decode()


def test_tokens_page_lists_only_your_tokens(client, author, other_author):
    mine, _ = ApiToken.issue(user=author, name="laptop")
    ApiToken.issue(user=other_author, name="not-mine")
    client.force_login(author)
    html = client.get(reverse("tokens")).content.decode()
    assert "laptop" in html and mine.prefix in html
    assert "not-mine" not in html


def test_creating_a_token_needs_a_name(client, author):
    client.force_login(author)
    response = client.post(reverse("tokens"), {"name": ""})
    assert response.status_code == 200
    assert response.context["form"].errors["name"] == ["This field is required."]
    assert response.context["new_key"] is None
    assert not ApiToken.objects.exists()


def test_revoking_a_token_marks_it_revoked(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    client.force_login(author)
    response = client.post(reverse("token_revoke", args=[token.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("tokens")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_revoking_another_users_token_gives_404(client, author, other_author):
    token, _ = ApiToken.issue(user=other_author, name="theirs")
    client.force_login(author)
    assert client.post(reverse("token_revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_needs_post(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    client.force_login(author)
    assert client.get(reverse("token_revoke", args=[token.pk])).status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_needs_login(client, author):
    token, _ = ApiToken.issue(user=author, name="laptop")
    response = client.post(reverse("token_revoke", args=[token.pk]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    token.refresh_from_db()
    assert token.revoked_at is None
