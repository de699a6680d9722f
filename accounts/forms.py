from allauth.account.forms import LoginForm, SignupForm
from allauth.account.models import EmailAddress
from django import forms
from django.contrib.auth import get_user_model

from accounts.models import ApiToken


class SiteLoginForm(LoginForm):
    """allauth's log-in form, its first field named for what it takes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or email"
        self.fields["remember"].label = "Keep me logged in"


def address_taken(email: str, *, but=None) -> bool:
    """Whether an account (other than `but`) holds `email` confirmed, or holds it on the user
    row alone (an account made without allauth: createsuperuser, the admin)."""
    confirmed = EmailAddress.objects.filter(email__iexact=email, verified=True)
    unrecorded = get_user_model().objects.filter(email__iexact=email) \
        .exclude(emailaddress__email__iexact=email)
    if but is not None:
        confirmed, unrecorded = confirmed.exclude(user=but), unrecorded.exclude(pk=but.pk)
    return confirmed.exists() or unrecorded.exists()


class SiteSignupForm(SignupForm):
    """allauth's sign-up form, which never says whether an address is registered: a sign-up
    with any address goes through alike, the new account holding it unconfirmed (a claim that
    does not block the owner, whose confirmation releases it: accounts.adapter.email_release,
    and that opens no log-in: accounts.auth.EmailConfirmedBackend). Where the address is
    already an account's, its owner is told so in place of a confirmation link
    (accounts.adapter.AccountAdapter.send_confirmation_mail)."""

    def validate_unique_email(self, value):
        self.account_already_exists = False
        return value


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name"]
        help_texts = {"name": "What the token is for, e.g. “CI uploads”."}
