from django import forms
from django.contrib.auth.forms import UserCreationForm

from submissions.models import ApiToken


class SignUpForm(UserCreationForm):
    """Django's sign-up form (username, password twice) with a required email for resets and
    notifications."""

    email = forms.EmailField(help_text="Used to reset your password and to tell you when a "
                                       "submission is scored, fails or is rejected.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name"]
        help_texts = {"name": "What the token is for, e.g. “CI uploads”."}
