"""Uploads need a confirmed email address: an unconfirmed user may sign in, but the upload form
and `POST /api/submissions/` refuse, saying how to get the link again."""

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from rest_framework.test import APIClient

from accounts.models import ApiToken
from submissions.models import Submission
from tests.conftest import CAST_PASSWORD
from tests.html import one, select, texts
from tests.submissions.test_api import payload
from tests.submissions.test_views import form

pytestmark = pytest.mark.django_db


@pytest.fixture
def newcomer(django_user_model):
    """Signed up, email not confirmed yet."""
    user = django_user_model.objects.create_user("newcomer", "newcomer@example.com",
                                                 CAST_PASSWORD)
    EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=False)
    return user


def test_an_unconfirmed_user_can_sign_in(client, newcomer):
    response = client.post("/accounts/login/", {"login": "newcomer", "password": CAST_PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(newcomer.pk)


def test_the_upload_page_asks_for_the_confirmation_and_emails_a_new_link(client, newcomer):
    client.force_login(newcomer)
    response = client.get("/submit/")
    assert response.status_code == 200
    html = response.content.decode()
    assert one(html, "h1").text == "Confirm your email address"
    assert "newcomer@example.com" in html
    send = one(html, 'form[action="/accounts/email/"]')
    assert send.select("button[name=action_send]")
    assert send.one("input[name=email]").get("value") == "newcomer@example.com"
    assert select(html, "[name=predictions]") == []  # no upload form
    assert [m.to for m in mail.outbox] == [["newcomer@example.com"]]


def test_an_upload_before_the_confirmation_is_refused_and_stores_nothing(client, newcomer,
                                                                         small_bench):
    client.force_login(newcomer)
    response = client.post("/submit/", form(small_bench))
    assert response.status_code == 403
    assert "Confirm your email address" in response.content.decode()
    assert Submission.objects.count() == 0


def test_the_button_sends_the_link_again(client, newcomer):
    client.force_login(newcomer)
    response = client.post("/accounts/email/", {"email": "newcomer@example.com",
                                                "action_send": ""})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    assert "/accounts/confirm-email/" in mail.outbox[0].body


def test_a_user_from_before_confirmations_gets_a_link_too(client, django_user_model):
    """Accounts made before addresses were confirmed have no EmailAddress row yet."""
    user = django_user_model.objects.create_user("old", "old@example.com", CAST_PASSWORD)
    client.force_login(user)
    assert "Confirm your email address" in client.get("/submit/").content.decode()
    client.post("/accounts/email/", {"email": "old@example.com", "action_send": ""})
    assert mail.outbox and mail.outbox[-1].to == ["old@example.com"]
    assert EmailAddress.objects.filter(user=user, verified=False).exists()


def test_a_user_without_an_email_is_asked_to_add_one(client, django_user_model):
    user = django_user_model.objects.create_user("noemail", "", CAST_PASSWORD)
    client.force_login(user)
    html = client.get("/submit/").content.decode()
    assert "Add one" in texts(html, 'a[href="/accounts/email/"]')
    assert mail.outbox == []


def test_once_confirmed_the_upload_form_shows(client, newcomer, small_bench):
    EmailAddress.objects.filter(user=newcomer).update(verified=True)
    client.force_login(newcomer)
    html = client.get("/submit/").content.decode()
    assert select(html, "form#upload-form input[name=predictions]")
    assert client.post("/submit/", form(small_bench)).status_code == 302
    assert Submission.objects.filter(owner=newcomer).count() == 1


def test_the_api_refuses_an_unconfirmed_users_upload_naming_the_way_out(newcomer,
                                                                        small_bench):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=newcomer, name='t')[1]}")
    response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 403
    assert response.json() == {"errors": [
        "confirm your email address newcomer@example.com before uploading: open the link "
        "emailed to you, or send a new one from http://testserver/accounts/email/"]}
    assert Submission.objects.count() == 0
    assert api.get("/api/submissions/").status_code == 200  # reading is not uploading


def test_a_site_that_confirms_no_email_lets_everyone_upload(client, newcomer, small_bench,
                                                            settings):
    settings.ACCOUNT_EMAIL_VERIFICATION = "none"
    client.force_login(newcomer)
    assert select(client.get("/submit/"), "form#upload-form input[name=predictions]")
    assert client.post("/submit/", form(small_bench)).status_code == 302
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=newcomer, name='t')[1]}")
    response = api.post("/api/submissions/", payload(small_bench, model_name="Other"),
                        format="multipart")
    assert response.status_code == 201
    assert mail.outbox == []


def test_the_upload_page_still_needs_a_login(client, db):
    response = client.get("/submit/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
