"""An address added but never confirmed blocks no one: its owner signs up with it, and the
first account to confirm it takes it from every unconfirmed claim."""

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.urls import reverse

from tests.accounts.test_pages import link_in, sign_up

pytestmark = pytest.mark.django_db


@pytest.fixture
def squatter(client, other_author):
    """other_author adds the newcomer's address to their account and never confirms it."""
    client.force_login(other_author)
    client.post(reverse("account_email"), {"action_add": "", "email": "newcomer@example.com"})
    client.logout()
    assert EmailAddress.objects.filter(user=other_author, email="newcomer@example.com",
                                       verified=False).exists()
    mail.outbox.clear()
    return other_author


def test_an_unconfirmed_claim_does_not_block_the_owners_sign_up(client, squatter,
                                                                django_user_model):
    response = sign_up(client)
    assert response.status_code == 302
    newcomer = django_user_model.objects.get(username="newcomer")
    assert newcomer.email == "newcomer@example.com"
    assert [m.to for m in mail.outbox] == [["newcomer@example.com"]]


def test_confirming_releases_the_other_claims(client, squatter, django_user_model):
    sign_up(client)
    client.post(link_in(mail.outbox[0]))
    newcomer = django_user_model.objects.get(username="newcomer")
    assert EmailAddress.objects.get(email="newcomer@example.com").user == newcomer
    assert EmailAddress.objects.get(email="newcomer@example.com").verified
    squatter.refresh_from_db()
    assert squatter.email != "newcomer@example.com"
    # Log-in by that address now finds its owner only.
    client.logout()
    assert client.post("/accounts/login/", {"login": "newcomer@example.com",
                                            "password": "a-new-Sturdy-passphrase-7"}
                       ).status_code == 302
    assert client.session["_auth_user_id"] == str(newcomer.pk)


def test_a_confirmed_address_still_blocks_a_sign_up(client, author, django_user_model):
    response = sign_up(client, email="author@example.com")
    assert response.context["form"].errors["email"] == [
        "A user is already registered with this email address."]
    assert django_user_model.objects.count() == 1
