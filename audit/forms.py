from django import forms

from audit.models import AuditEvent


class AuditForm(forms.Form):
    """The staff audit page's filters (GET)."""

    action = forms.ChoiceField(required=False,
                               choices=[("", "every action"), *AuditEvent.Action.choices])
    benchmark = forms.SlugField(required=False, max_length=50)
    actor = forms.CharField(required=False, max_length=150)
    object_type = forms.CharField(required=False, max_length=50,
                                  help_text="e.g. submissions.submission")
    object_id = forms.CharField(required=False, max_length=50)
    public = forms.NullBooleanField(required=False, widget=forms.Select(choices=[
        ("unknown", "public or not"), ("true", "public only"), ("false", "staff only")]))
    page = forms.IntegerField(required=False, min_value=1)


class ChangelogForm(forms.Form):
    page = forms.IntegerField(required=False, min_value=1)
