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


class SiteSignupForm(SignupForm):
    """allauth's sign-up form, where only a confirmed address is taken: an address another
    account merely added, unconfirmed, does not block its owner (whose confirmation then
    releases it, accounts.adapter.email_release)."""

    def validate_unique_email(self, value):
        confirmed = EmailAddress.objects.filter(email__iexact=value, verified=True).exists()
        # An account made without allauth (createsuperuser, the admin) holds its address
        # on the user row alone.
        unrecorded = get_user_model().objects.filter(email__iexact=value) \
            .exclude(emailaddress__email__iexact=value).exists()
        if confirmed or unrecorded:
            return super().validate_unique_email(value)
        self.account_already_exists = False
        return value


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name"]
        help_texts = {"name": "What the token is for, e.g. “CI uploads”."}
