from django import forms

from scoring.kinds import get_kind
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
        required=False, label="Align unreadable answers with the judge",
        help_text="Responses whose letter the official rule cannot read are mapped to an "
                  "option by the judge, with the official alignment prompt.")
    predictions = forms.FileField(
        required=False, label="Predictions",
        help_text="The chosen benchmark's predictions file (for audio outputs, optional if "
                  "the archive holds it).")
    audio = forms.FileField(
        required=False, label="Output audio",
        help_text=".zip or .tar.gz of the output WAV/FLAC files, or one archive holding both "
                  "them and the predictions file")

    # Fields that only some benchmark kinds read: an archive of output files, and each
    # upload option (Kind.options). The page shows the chosen benchmark's only.
    OPTIONS = ("align",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["benchmark"].choices = selectors.benchmark_choices()

    def benchmark_kinds(self) -> list[dict]:
        """What each benchmark's kind takes, for the page's script (data attributes)."""
        kinds = []
        for slug, title in self.fields["benchmark"].choices:
            kind = get_kind(selectors.benchmark_latest(slug).kind)
            kinds.append({"slug": slug, "title": title, "files": kind.outputs.files,
                          "options": " ".join(kind.options), "help": kind.outputs.help})
        return kinds

    def clean(self):
        data = super().clean()
        if not data.get("predictions") and not data.get("audio"):
            raise forms.ValidationError("Upload a predictions file and an archive of the "
                                        "edited audio, or one archive holding both.")
        return data

    def clean_benchmark(self):
        return selectors.benchmark_latest(self.cleaned_data["benchmark"])
