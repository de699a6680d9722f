from django import forms
from django.contrib.auth.forms import UserCreationForm

from submissions.models import ApiToken


class SignUpForm(UserCreationForm):
    """Django's sign-up form (username, password twice) with a required email for resets."""

    email = forms.EmailField(help_text="Used only to reset your password.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name"]
        help_texts = {"name": "What the token is for, e.g. “CI uploads”."}
