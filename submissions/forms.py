from django import forms
from django.contrib.auth import get_user_model

from judge import families
from scoring.kinds import get_kind
from scoring.models import Benchmark, JudgeConfig, ScoringRun
from submissions import selectors
from submissions.file_checks import (
    ARCHIVE_SUFFIXES,
    PREDICTIONS_SUFFIXES,
    archive_file_problems,
    page_limits,
    predictions_file_problems,
    takes_archive,
)
from submissions.models import Submission
from submissions.moderation import QUOTA_MAX
from submissions.names import NAME_MAX_LENGTH, name_clean
from submissions.rescoring import RescoreFilter, rescorable_configs
from submissions.services import upload_file_problems

REASON = {"max_length": 1000, "widget": forms.Textarea(attrs={"rows": 2})}
STATES = [("", "any state"), *[(s, s) for s in (
    "uploaded", "validating", "rejected", *ScoringRun.Status.values)]]


class SubmissionForm(forms.Form):
    benchmark = forms.ChoiceField()
    # Names are measured once normalised (submissions.names), as the board stores them.
    model_name = forms.CharField(label="Model name")
    organisation = forms.CharField(required=False)
    link = forms.URLField(required=False, label="Paper or code link", assume_scheme="https")
    parameters = forms.CharField(max_length=50, required=False, label="Parameter count",
                                 help_text="e.g. 7B")
    licence = forms.CharField(max_length=100, required=False)
    open_weights = forms.BooleanField(required=False, label="Open weights")
    base_family = forms.ChoiceField(
        required=False, choices=families.CHOICES, label="Base model family",
        help_text="What the system is built on: the judge is Qwen3-Omni, and a judge may favour "
                  "systems of its own family, so boards mark them.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    public = forms.BooleanField(required=False, label="Show on the public leaderboard",
                                help_text="Private submissions are seen by you and admins only.")
    publish_at = forms.DateTimeField(
        required=False, label="Publish on (embargo)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Optional, UTC: scored now, shown on the board from this moment on (you get "
                  "an e-mail), and nowhere before. Implies public.")
    anonymous_until = forms.DateTimeField(
        required=False, label="Anonymous until (double-blind review)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Optional, UTC: shown as \"Anonymous submission N\", with neither your name "
                  "nor the model's details, until this moment; then under its name (you get "
                  "an e-mail). Its submission page gives a private review link. Implies public.")
    align = forms.BooleanField(
        required=False, label="Align unreadable answers with the judge",
        help_text="Responses whose letter the official rule cannot read are mapped to an "
                  "option by the judge, with the official alignment prompt.")
    predictions = forms.FileField(
        required=False, label="Predictions",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join(PREDICTIONS_SUFFIXES)}),
        help_text="The chosen benchmark's predictions file (for audio outputs, optional if "
                  "the archive holds it).")
    audio = forms.FileField(
        required=False, label="Output audio",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join((*ARCHIVE_SUFFIXES, ".gz"))}),
        help_text=".zip or .tar.gz of the output WAV/FLAC files, or one archive holding both "
                  "them and the predictions file")

    # Fields that only some benchmark kinds read: an archive of output files, and each
    # upload option (Kind.options). The page shows the chosen benchmark's only.
    OPTIONS = ("align",)
    # Text fields with a limit, and the word their message begins with.
    MEASURED = {"model_name": "Name", "organisation": "Organisation",
                "parameters": "Parameter count", "licence": "Licence"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["benchmark"].choices = selectors.benchmark_choices()
        for name, label in self.MEASURED.items():
            _measured(self.fields[name], label)

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
        # A file refused by its own field's check was given all the same.
        if not any(data.get(name) or name in self.errors for name in ("predictions", "audio")):
            raise forms.ValidationError("Upload a predictions file and an archive of the "
                                        "edited audio, or one archive holding both.")
        if self.errors and data.get("benchmark"):
            self._add_file_problems(data)
        return data

    def _add_file_problems(self, data: dict) -> None:
        """Refused already, the upload is not sent to the service, which would tell what else
        is wrong with its files (a predictions file's lines): ask it here, so that one answer
        shows every problem."""
        found = upload_file_problems(
            benchmark=data["benchmark"], predictions=data.get("predictions"),
            archive=data.get("audio"), options={k: data.get(k) for k in self.OPTIONS})
        for field, messages in found.items():
            if field not in self.errors:
                self.add_error(field, messages)

    def clean_benchmark(self):
        return selectors.benchmark_latest(self.cleaned_data["benchmark"])

    def clean_model_name(self):
        return name_clean(self.cleaned_data["model_name"], field="model name")

    def clean_organisation(self):
        return name_clean(self.cleaned_data["organisation"], field="organisation",
                          required=False, label="Organisation")

    def clean_predictions(self):
        upload = self.cleaned_data["predictions"]
        if upload:
            _raise_any(predictions_file_problems(upload, self.cleaned_data.get("benchmark")))
        return upload

    def clean_audio(self):
        upload = self.cleaned_data["audio"]
        if upload and takes_archive(self.cleaned_data.get("benchmark")):
            _raise_any(archive_file_problems(upload))
        return upload

    def page_limits(self) -> dict:
        return page_limits()


def _measured(field: forms.CharField, label: str) -> None:
    """A text over its limit is refused saying by how much. The browser's maxlength would cut
    a pasted one short without a word: the page's script says it instead (upload.js)."""
    field.widget.attrs.pop("maxlength", None)
    field.widget.attrs["data-max-length"] = field.max_length or NAME_MAX_LENGTH
    field.widget.attrs["data-label"] = label
    field.error_messages["max_length"] = (f"{label} is %(show_value)d characters; the limit "
                                          "is %(limit_value)d")


def _raise_any(problems: list[str]) -> None:
    if problems:
        raise forms.ValidationError(problems)


class VisibilityForm(forms.Form):
    public = forms.TypedChoiceField(choices=[("true", "public"), ("false", "private")],
                                    coerce=lambda v: v == "true")


class RepresentativeForm(forms.Form):
    chosen = forms.TypedChoiceField(choices=[("true", "choose"), ("false", "withdraw")],
                                    coerce=lambda v: v == "true")


class QueueForm(forms.Form):
    """The moderation page's filters (GET)."""

    benchmark = forms.ChoiceField(required=False)
    state = forms.ChoiceField(required=False, choices=STATES)
    flagged = forms.BooleanField(required=False)
    hidden = forms.BooleanField(required=False)
    q = forms.CharField(required=False, max_length=200, label="Model or author")
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data):
        super().__init__(data)
        slugs = Benchmark.objects.order_by("slug").values_list("slug", flat=True).distinct()
        self.fields["benchmark"].choices = [("", "every benchmark"), *[(s, s) for s in slugs]]


class HideForm(forms.Form):
    hidden = forms.TypedChoiceField(choices=[("true", "hide"), ("false", "unhide")],
                                    coerce=lambda v: v == "true")
    reason = forms.CharField(**REASON, help_text="Kept in the audit log; public on the "
                             "benchmark's changelog if the submission is public.")


class FlagForm(forms.Form):
    flagged = forms.TypedChoiceField(choices=[("true", "flag"), ("false", "remove the flag")],
                                     coerce=lambda v: v == "true")
    reason = forms.CharField(**REASON, help_text="A flag's reason is shown publicly beside "
                             "the submission on the board.")


class RetryForm(forms.Form):
    reason = forms.CharField(**REASON, help_text="Kept in the audit log (not public): what "
                             "was fixed, say.")


class DeleteForm(forms.Form):
    reason = forms.CharField(**REASON)
    confirm = forms.CharField(max_length=20, label="Type the submission's number to confirm")

    def __init__(self, data, *, submission: Submission):
        super().__init__(data)
        self.submission = submission

    def clean_confirm(self):
        if self.cleaned_data["confirm"].strip() != str(self.submission.pk):
            raise forms.ValidationError(f"type {self.submission.pk} to confirm the deletion")
        return self.cleaned_data["confirm"]


class QuotaForm(forms.Form):
    username = forms.CharField(max_length=150)
    per_day = forms.IntegerField(required=False, min_value=0, max_value=QUOTA_MAX,
                                 label="Submissions per 24 hours",
                                 help_text="blank: the site's limit")
    in_flight = forms.IntegerField(required=False, min_value=0, max_value=QUOTA_MAX,
                                   label="Scored at once", help_text="blank: the site's limit")
    reason = forms.CharField(**REASON, help_text="Kept in the audit log (not public). Both "
                             "limits blank removes the user's override.")

    def clean_username(self):
        name = self.cleaned_data["username"].strip()
        try:
            return get_user_model().objects.get(username=name)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(f"no user {name!r}") from None


class BenchmarkConfigForm(forms.Form):
    """A form that picks one of the judge configs usable for a benchmark."""

    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label="Judge config")

    def __init__(self, data, *, benchmark: Benchmark):
        super().__init__(data)
        self.benchmark = benchmark
        self.fields["config"].queryset = rescorable_configs(benchmark)
        self.fields["config"].initial = benchmark.judge_config_id


class RescoreForm(BenchmarkConfigForm):
    SCOPES = [("all", "every submission of the benchmark"),
              ("filter", "the submissions matching the filter"),
              ("one", "one submission")]

    scope = forms.ChoiceField(choices=SCOPES, initial="all", widget=forms.RadioSelect)
    submission = forms.IntegerField(required=False, min_value=1, label="Submission id")
    model_contains = forms.CharField(required=False, max_length=200,
                                     label="Model name contains")
    state = forms.ChoiceField(required=False, choices=[("", "finished or failed"),
                                                       ("finished", "finished"),
                                                       ("failed", "failed")])
    reason = forms.CharField(required=False, max_length=1000,
                             widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="Shown on the benchmark's public changelog.")
    expected = forms.IntegerField(required=False, widget=forms.HiddenInput)
    confirm = forms.CharField(required=False, max_length=100, label="Type the benchmark's "
                              "slug to confirm")

    def clean(self):
        data = super().clean()
        if data.get("scope") == "one" and not data.get("submission"):
            self.add_error("submission", "give the id of the submission to rescore")
        return data

    def where(self) -> RescoreFilter:
        data = self.cleaned_data
        if data["scope"] == "one":
            return RescoreFilter(submission_ids=(data["submission"],))
        if data["scope"] == "filter":
            return RescoreFilter(model_contains=data["model_contains"].strip(),
                                 state=data["state"])
        return RescoreFilter()


class CurrentConfigForm(BenchmarkConfigForm):
    reason = forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.CharField(max_length=100, label="Type the benchmark's slug to confirm")

    def clean_confirm(self):
        if self.cleaned_data["confirm"].strip() != self.benchmark.slug:
            raise forms.ValidationError(f"type {self.benchmark.slug} to confirm")
        return self.cleaned_data["confirm"]
