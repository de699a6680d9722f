"""An address added but never confirmed blocks no one: its owner signs up with it, and the
first account to confirm it takes it from every unconfirmed claim."""

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client
from django.urls import reverse

from tests.accounts.test_pages import link_in, sign_up
from tests.conftest import CAST_PASSWORD

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


def test_an_unconfirmed_claim_opens_no_log_in(client, squatter):
    # The squatter's own password, at the address they added and never confirmed.
    response = client.post("/accounts/login/", {"login": "newcomer@example.com",
                                                "password": CAST_PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert client.post("/accounts/login/", {"login": "other_author", "password": CAST_PASSWORD}
                       ).status_code == 302


def test_a_sign_up_never_says_an_address_is_registered(client, author, django_user_model):
    fresh = sign_up(Client(), username="newcomer", email="newcomer@example.com")
    taken = sign_up(client, username="another", email="AUTHOR@example.com")
    assert (taken.status_code, taken["Location"]) == (fresh.status_code, fresh["Location"])
    # The address stays its owner's: the newcomer's claim is unconfirmed, and its owner is
    # told of the attempt in place of a confirmation link.
    another = django_user_model.objects.get(username="another")
    assert not EmailAddress.objects.get(user=another).verified
    assert EmailAddress.objects.get(user=author).verified
    to_author = [m for m in mail.outbox if m.to == ["author@example.com"]]
    assert len(to_author) == 1 and "an account using that email address already exists" \
        in " ".join(to_author[0].body.split())
    assert "/accounts/confirm-email/" not in to_author[0].body
    # Log-in by that address still finds its owner.
    owner = Client()
    assert owner.post("/accounts/login/", {"login": "author@example.com",
                                           "password": CAST_PASSWORD}).status_code == 302
    assert owner.session["_auth_user_id"] == str(author.pk)
