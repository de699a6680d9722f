from allauth.account.forms import LoginForm
from django import forms

from submissions.models import ApiToken


class SiteLoginForm(LoginForm):
    """allauth's log-in form, its first field named for what it takes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or email"
        self.fields["remember"].label = "Keep me logged in"


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name"]
        help_texts = {"name": "What the token is for, e.g. “CI uploads”."}
