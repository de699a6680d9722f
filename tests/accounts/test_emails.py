"""allauth's emails name the site from SITE_NAME and SITE_URL, never from the Host of the
request that sent them (django.contrib.sites is not installed)."""

import pytest
from django.core import mail
from django.urls import reverse

from tests.accounts.test_pages import sign_up

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = "https://board.example:8443"
    settings.SITE_NAME = "Board of Audio"


def test_the_confirmation_email_names_the_site_from_its_settings(client):
    sign_up(client)
    [message] = mail.outbox
    assert message.subject == "[Board of Audio] Please Confirm Your Email Address"
    assert message.body.startswith("Hello from Board of Audio!")
    assert "register an account on board.example:8443." in message.body
    assert message.body.endswith("Thank you for using Board of Audio!\nboard.example:8443")


def test_the_password_reset_email_names_the_site_from_its_settings(client, author):
    client.post(reverse("account_reset_password"), {"email": "author@example.com"})
    [message] = mail.outbox
    assert message.subject.startswith("[Board of Audio] ")
    assert message.body.startswith("Hello from Board of Audio!")
    assert message.body.endswith("Thank you for using Board of Audio!\nboard.example:8443")
    assert "testserver\n" not in message.body and "example.com\n" not in message.body
