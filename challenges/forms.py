"""The participants' forms: a team, an invitation, a track's attestations, an upload to a phase
board. Each only shapes the input; the services (challenges.teams, challenges.entries) decide."""

from __future__ import annotations

from django import forms

from submissions.file_checks import (
    ARCHIVE_SUFFIXES,
    PREDICTIONS_SUFFIXES,
    archive_file_problems,
    predictions_file_problems,
)
from submissions.names import name_clean


class TeamForm(forms.Form):
    name = forms.CharField(label="Team name", max_length=300,
                           help_text="Shown on the challenge's boards and official ranking.")


class InviteForm(forms.Form):
    who = forms.CharField(label="User name or e-mail address", max_length=254,
                          help_text="They get an e-mail with a link to accept.")


class AttestationForm(forms.Form):
    """One checkbox per attestation of the track: every one must be ticked."""

    def __init__(self, *args, track, **kwargs):
        super().__init__(*args, **kwargs)
        self.track = track
        for number, text in enumerate(track.attestations):
            self.fields[f"a{number}"] = forms.BooleanField(required=False, label=text)

    def ticked(self) -> list[str]:
        return [text for number, text in enumerate(self.track.attestations)
                if self.cleaned_data.get(f"a{number}")]


class EntryUploadForm(forms.Form):
    """An upload to a phase board: the JSONL manifest {"id", "audio_path"} and an archive of
    the output audio (or one archive holding both), as on the site's upload page."""

    model_name = forms.CharField(label="System name", max_length=300,
                                 help_text="Its row on the phase's open board; your team's "
                                           "name is shown beside it.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    public = forms.BooleanField(required=False, initial=True,
                                label="List it on the phase's open board",
                                help_text="What the board shows of a hidden-rubric phase's "
                                          "results is the phase's setting.")
    predictions = forms.FileField(
        required=False, label="Manifest",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join(PREDICTIONS_SUFFIXES)}),
        help_text='submission.jsonl: one {"id": ..., "audio_path": "audio/<id>.wav"} a line '
                  "(optional if the archive holds it)")
    audio = forms.FileField(
        required=False, label="Output audio",
        widget=forms.ClearableFileInput(attrs={"accept": ",".join((*ARCHIVE_SUFFIXES, ".gz"))}),
        help_text=".zip or .tar.gz of the output WAV/FLAC files, or one archive holding both "
                  "them and the manifest")

    def __init__(self, *args, benchmark, **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmark = benchmark

    def clean_model_name(self):
        return name_clean(self.cleaned_data["model_name"], field="system name")

    def clean_predictions(self):
        upload = self.cleaned_data["predictions"]
        if upload:
            _raise_any(predictions_file_problems(upload, self.benchmark))
        return upload

    def clean_audio(self):
        upload = self.cleaned_data["audio"]
        if upload:
            _raise_any(archive_file_problems(upload))
        return upload

    def clean(self):
        data = super().clean()
        if not any(data.get(name) or name in self.errors for name in ("predictions", "audio")):
            raise forms.ValidationError("Upload a manifest and an archive of the output "
                                        "audio, or one archive holding both.")
        return data


def _raise_any(problems: list[str]) -> None:
    if problems:
        raise forms.ValidationError(problems)
