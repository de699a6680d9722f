from django import forms

from submissions import selectors


class SubmissionForm(forms.Form):
    benchmark = forms.ChoiceField()
    model_name = forms.CharField(max_length=200, label="Model name")
    organisation = forms.CharField(max_length=200, required=False)
    link = forms.URLField(required=False, label="Paper or code link", assume_scheme="https")
    parameters = forms.CharField(max_length=50, required=False, label="Parameter count",
                                 help_text="e.g. 7B")
    licence = forms.CharField(max_length=100, required=False)
    open_weights = forms.BooleanField(required=False, label="Open weights")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    public = forms.BooleanField(required=False, label="Show on the public leaderboard",
                                help_text="Private submissions are seen by you and admins only.")
    align = forms.BooleanField(
        required=False, label="Align unreadable answers with the judge (AIR-Bench foundation)",
        help_text="Responses whose letter the official rule cannot read are mapped to an "
                  "option by the judge, with the official alignment prompt.")
    predictions = forms.FileField(
        required=False, label="Predictions",
        help_text="MMAE: predictions.json or submission.jsonl (optional if the archive holds "
                  "it). AIR-Bench: a JSONL with one {\"uniq_id\", \"response\"} a line.")
    audio = forms.FileField(
        required=False, label="Edited audio",
        help_text="MMAE only: .zip or .tar.gz of the edited WAV/FLAC files, or one archive "
                  "with both")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["benchmark"].choices = selectors.benchmark_choices()

    def clean(self):
        data = super().clean()
        if not data.get("predictions") and not data.get("audio"):
            raise forms.ValidationError("Upload a predictions file and an archive of the "
                                        "edited audio, or one archive holding both.")
        return data

    def clean_benchmark(self):
        return selectors.benchmark_latest(self.cleaned_data["benchmark"])
