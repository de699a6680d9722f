"""A changed or reset password revokes the account's API tokens, and the author is told:
allauth's notification email, and a message naming the tokens."""

import pytest
from django.core import mail
from django.urls import reverse

from accounts.models import ApiToken
from tests.accounts.test_pages import NEW_PASSWORD, link_in
from tests.conftest import CAST_PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def tokens(author, other_author):
    """Two tokens of the author's, one already revoked, and one of another author's."""
    old, _ = ApiToken.issue(user=author, name="old")
    ApiToken.objects.filter(pk=old.pk).update(revoked_at="2020-01-01T00:00Z")
    return {name: ApiToken.issue(user=user, name=name)[1]
            for user, name in ((author, "ci"), (author, "laptop"), (other_author, "theirs"))}


def works(client, key) -> bool:
    return client.get("/api/submissions/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def shown_messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_a_password_change_revokes_the_tokens_and_says_which(client, author, tokens):
    client.force_login(author)
    response = client.post(reverse("account_change_password"), {
        "oldpassword": CAST_PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        follow=True)
    assert response.status_code == 200
    assert ("Your password changed, so your API tokens were revoked: ci, laptop. Make new "
            "ones on the API tokens page.") in shown_messages(response)
    assert not works(client, tokens["ci"]) and not works(client, tokens["laptop"])
    assert works(client, tokens["theirs"])
    assert [m.to for m in mail.outbox] == [["author@example.com"]]
    assert "password" in mail.outbox[0].subject.lower()


def test_a_password_reset_revokes_the_tokens(client, author, tokens):
    client.post(reverse("account_reset_password"), {"email": "author@example.com"})
    form_page = client.get(link_in(mail.outbox[0]), follow=True)
    response = client.post(form_page.redirect_chain[-1][0],
                           {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD}, follow=True)
    assert "Your password changed, so your API tokens were revoked: ci, laptop. Make new " \
        "ones on the API tokens page." in shown_messages(response)
    assert not works(client, tokens["ci"]) and works(client, tokens["theirs"])
    assert len(mail.outbox) == 2  # the link, then allauth's notice of the reset
    assert mail.outbox[1].to == ["author@example.com"]


def test_a_change_without_tokens_says_nothing_of_them(client, author):
    client.force_login(author)
    response = client.post(reverse("account_change_password"), {
        "oldpassword": CAST_PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
        follow=True)
    assert not any("API tokens" in m for m in shown_messages(response))


def test_a_password_set_elsewhere_revokes_the_tokens_too(client, author, tokens, admin_client,
                                                         django_user_model):
    """The admin's password form and `manage.py changepassword` (which saves the user as a
    shell would) revoke them as well; saving the account without a new password does not."""
    from django.core.management import call_command

    author.first_name = "Renamed"
    author.save()
    assert works(client, tokens["ci"])
    response = admin_client.post(f"/admin/auth/user/{author.pk}/password/", {
        "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"})
    assert response.status_code == 302
    assert not works(client, tokens["ci"]) and not works(client, tokens["laptop"])
    assert works(client, tokens["theirs"])
    other = django_user_model.objects.get(api_tokens__name="theirs")
    from unittest import mock

    with mock.patch("getpass.getpass", return_value=NEW_PASSWORD):
        call_command("changepassword", other.username, stdout=open("/dev/null", "w"))
    assert not works(client, tokens["theirs"])
