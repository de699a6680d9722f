"""allauth's account pages in the site's templates: sign-up with an email check, log-in by
username or email, log-out, password reset, email confirmation, and the admin's log-in."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.urls import reverse

from tests.conftest import CAST_PASSWORD
from tests.html import one, select

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-new-Sturdy-passphrase-7"


def signup_data(**overrides):
    return {"username": "newcomer", "email": "newcomer@example.com",
            "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, **overrides}


def sign_up(client, **overrides):
    return client.post(reverse("account_signup"), signup_data(**overrides))


def link_in(message) -> str:
    return re.search(r"http://testserver(/accounts/\S+/)", message.body).group(1)


# Sign-up

def test_the_signup_page_shows_the_form_in_the_sites_frame(client):
    response = client.get("/accounts/signup/")
    assert response.status_code == 200
    html = response.content.decode()
    form = one(html, 'form[method=post][action="/accounts/signup/"]')
    assert form.classes == {"stacked"}
    for name in ("username", "email", "password1", "password2"):
        assert form.select(f"input[name={name}]")
    assert one(html, "main h1").text == "Create an account"
    assert select(html, "header.site a.brand")  # templates/base.html around it


def test_signup_creates_the_user_logs_them_in_and_emails_a_confirmation_link(
        client, django_user_model):
    response = sign_up(client)
    assert response.status_code == 302
    assert response["Location"] == reverse("submissions:list")
    user = django_user_model.objects.get(username="newcomer")
    assert user.email == "newcomer@example.com" and user.check_password(NEW_PASSWORD)
    assert client.session["_auth_user_id"] == str(user.pk)
    address = EmailAddress.objects.get(user=user)
    assert address.email == "newcomer@example.com" and not address.verified
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["newcomer@example.com"]
    assert link_in(mail.outbox[0]).startswith("/accounts/confirm-email/")


def test_the_link_confirms_the_address(client, django_user_model):
    sign_up(client)
    link = link_in(mail.outbox[0])
    page = client.get(link)
    assert page.status_code == 200
    assert "newcomer@example.com" in page.content.decode()
    response = client.post(link)
    assert response.status_code == 302
    assert EmailAddress.objects.get(user__username="newcomer").verified


def test_a_confirmation_link_that_is_not_one_says_so(client):
    response = client.get("/accounts/confirm-email/not-a-real-key/")
    assert response.status_code == 200
    assert "This email confirmation link expired or is invalid" in response.content.decode()


def test_signup_refuses_a_taken_username_in_any_case(client, author, django_user_model):
    response = sign_up(client, username="Author")
    assert response.status_code == 200
    assert "A user with that username already exists." in response.content.decode()
    assert django_user_model.objects.count() == 1


def test_signup_refuses_mismatched_passwords(client, django_user_model):
    response = sign_up(client, password2=NEW_PASSWORD + "x")
    assert response.status_code == 200
    assert "You must type the same password each time." in response.content.decode()
    assert not django_user_model.objects.exists()


def test_signup_refuses_a_weak_password(client, django_user_model):
    response = sign_up(client, password1="password", password2="password")
    assert response.status_code == 200
    assert "This password is too common." in response.content.decode()
    assert not django_user_model.objects.exists()


@pytest.mark.parametrize("email, error", [
    ("", "This field is required."),
    ("not-an-address", "Enter a valid email address."),
])
def test_signup_checks_the_email(client, django_user_model, email, error):
    response = sign_up(client, email=email)
    assert response.status_code == 200
    assert response.context["form"].errors["email"] == [error]
    assert not django_user_model.objects.exists()
    assert mail.outbox == []


# Log-in and log-out

@pytest.mark.parametrize("login", ["author", "author@example.com"])
def test_login_by_username_or_email_redirects(client, author, login):
    response = client.post("/accounts/login/", {"login": login, "password": CAST_PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("submissions:list")
    assert client.session["_auth_user_id"] == str(author.pk)


def test_login_follows_a_next_link_on_the_site_only(client, author):
    form = {"login": "author", "password": CAST_PASSWORD}
    response = client.post("/accounts/login/?next=/submit/", form)
    assert response["Location"] == "/submit/"
    client.logout()
    response = client.post("/accounts/login/?next=https://evil.example/", form)
    assert response["Location"] == reverse("submissions:list")


def test_login_with_a_wrong_password_shows_an_error(client, author):
    response = client.post("/accounts/login/", {"login": "author", "password": "wrong"})
    assert response.status_code == 200
    assert "The username and/or password you specified are not correct." in \
        response.content.decode()
    assert "_auth_user_id" not in client.session


def test_login_with_missing_fields_names_them(client, author):
    response = client.post("/accounts/login/", {"login": ""})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["login"] == ["This field is required."]
    assert errors["password"] == ["This field is required."]


def test_logout_asks_on_get_and_logs_out_on_post(client, author):
    client.force_login(author)
    page = client.get(reverse("account_logout"))
    assert page.status_code == 200
    assert "_auth_user_id" in client.session
    response = client.post(reverse("account_logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:home")
    assert "_auth_user_id" not in client.session


def test_the_header_offers_login_to_visitors_and_logout_to_users(client, author):
    header = one(client.get(reverse("leaderboard:home")), "header.site")
    assert header.select('a[href="/accounts/login/"]')
    assert header.select('a[href="/accounts/signup/"]')
    client.force_login(author)
    header = one(client.get(reverse("leaderboard:home")), "header.site")
    assert header.select('form[action="/accounts/logout/"] button')
    for url in ("/accounts/tokens/", "/submissions/", "/submit/"):
        assert header.select(f'a[href="{url}"]')


def test_the_account_pages_link_to_each_other(client, author):
    client.force_login(author)
    html = client.get(reverse("account_email")).content.decode()
    for url in ("/accounts/email/", "/accounts/password/change/", "/accounts/tokens/"):
        assert select(html, f'main a[href="{url}"]')
    assert "author@example.com" in html


# Password reset

def test_password_reset_emails_a_link_that_sets_a_new_password(client, author):
    response = client.post(reverse("account_reset_password"), {"email": "author@example.com"})
    assert response.status_code == 302
    assert response["Location"] == reverse("account_reset_password_done")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["author@example.com"]
    link = link_in(mail.outbox[0])

    # allauth swaps the key in the link for one kept in the session, then redirects.
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    response = client.post(form_page.redirect_chain[-1][0],
                           {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response["Location"] == reverse("account_reset_password_from_key_done")
    author.refresh_from_db()
    assert author.check_password(NEW_PASSWORD)
    used = client.get(link, follow=True).content.decode()
    assert "The password reset link was invalid" in used


def test_password_reset_for_an_unknown_email_sends_nothing(client, author):
    response = client.post(reverse("account_reset_password"), {"email": "nobody@example.com"})
    assert response["Location"] == reverse("account_reset_password_done")
    assert mail.outbox == []


def test_password_reset_refuses_a_malformed_email(client, author):
    response = client.post(reverse("account_reset_password"), {"email": "nobody"})
    assert response.status_code == 200
    assert response.context["form"].errors["email"] == ["Enter a valid email address."]
    assert mail.outbox == []


# The admin's log-in

def test_the_admin_sends_visitors_to_the_sites_log_in_and_back(client, staff):
    response = client.get("/admin/", follow=True)
    assert response.redirect_chain[-1][0] == "/accounts/login/?next=%2Fadmin%2F"
    response = client.post("/accounts/login/?next=%2Fadmin%2F",
                           {"login": "staff", "password": CAST_PASSWORD})
    assert response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_the_admin_log_in_refuses_a_signed_in_user_who_is_not_staff(client, author):
    client.force_login(author)
    assert client.get("/admin/login/").status_code == 403
    assert client.get("/admin/").status_code == 302
