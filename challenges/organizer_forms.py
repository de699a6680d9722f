"""The organizer pages' forms. A phase's instants are entered and shown in the challenge's time
zone (ZonedDateTimeField) and stored in UTC; a time that the zone skips or repeats (a
daylight-saving change) is refused, as Django refuses it in the current zone."""

from __future__ import annotations

import zoneinfo

from django import forms
from django.utils import timezone

from challenges.models import Phase, Verification
from scoring.kinds import KINDS

LOCAL_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]


def zone_of(challenge) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(challenge.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


class ZonedDateTimeField(forms.DateTimeField):
    """A date and time entered (and shown) in `zone`, cleaned to an aware datetime."""

    def __init__(self, *, zone: zoneinfo.ZoneInfo, **kwargs):
        self.zone = zone
        kwargs.setdefault("input_formats", LOCAL_FORMATS)
        kwargs.setdefault("widget", forms.DateTimeInput(attrs={"type": "datetime-local"},
                                                        format="%Y-%m-%dT%H:%M"))
        super().__init__(**kwargs)

    def to_python(self, value):
        with timezone.override(self.zone):
            return super().to_python(value)

    def prepare_value(self, value):
        with timezone.override(self.zone):
            return super().prepare_value(value)


class ChallengeForm(forms.Form):
    title = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}))
    time_zone = forms.CharField(max_length=64, label="Time zone (IANA name)",
                                help_text="Phases are entered and shown in it, such as "
                                          "America/Los_Angeles; stored in UTC.")

    def clean_time_zone(self):
        name = self.cleaned_data["time_zone"].strip()
        try:
            zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise forms.ValidationError(f"{name!r} is no IANA time zone") from None
        return name


class OrganizerGrantForm(forms.Form):
    who = forms.CharField(label="User name or e-mail", max_length=254)


class PhaseForm(forms.Form):
    slug = forms.SlugField(max_length=50)
    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=Phase.Kind.choices)
    per_day = forms.IntegerField(min_value=1, label="Uploads per team in 24 hours")
    total = forms.IntegerField(min_value=1, label="Uploads per team in the phase")
    late_uploads = forms.BooleanField(
        required=False, label="Score uploads after the closing instant (on the open board, "
                              "never on the official one)")
    shown = forms.ChoiceField(choices=Phase.Shown.choices,
                              label="Shown to participants and visitors before the reveal")
    released_dimensions = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple,
        label="Item dimensions the task package gives out",
        help_text="Never rubrics; a dimension its boards' kind lacks is left out.")
    reason = forms.CharField(required=False, max_length=500,
                             label="Why (kept in the audit log)")

    def __init__(self, *args, challenge, **kwargs):
        super().__init__(*args, **kwargs)
        zone = zone_of(challenge)
        where = f"in {zone.key}"
        self.fields["opens_at"] = ZonedDateTimeField(zone=zone, label=f"Opens ({where})")
        self.fields["closes_at"] = ZonedDateTimeField(zone=zone, label=f"Closes ({where})")
        self.fields["released_dimensions"].choices = [
            (key, key) for key in sorted({k for kind in KINDS.values()
                                          for k in kind.dimension_keys})]
        self.order_fields(["slug", "name", "kind", "opens_at", "closes_at", "per_day", "total",
                           "late_uploads", "shown", "released_dimensions", "reason"])

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug == "new":  # /manage/phases/new/ is the form of a new phase
            raise forms.ValidationError("'new' names the form of a new phase: choose another")
        return slug

    @classmethod
    def initial_of(cls, phase: Phase) -> dict:
        return {k: getattr(phase, k) for k in ("slug", "name", "kind", "opens_at", "closes_at",
                                               "per_day", "total", "late_uploads", "shown",
                                               "released_dimensions")}

    def clean(self):
        cleaned = super().clean()
        opens, closes = cleaned.get("opens_at"), cleaned.get("closes_at")
        if opens and closes and closes <= opens:
            self.add_error("closes_at", "the phase must close after it opens")
        return cleaned


class TrackForm(forms.Form):
    slug = forms.SlugField(max_length=50)
    name = forms.CharField(max_length=100)
    rules = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 5}))
    attestations = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line: what a team ticks to enter the track.")
    where = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One DIMENSION=BUCKET per line (complexity=single); empty for every item.")
    position = forms.IntegerField(min_value=0, initial=0)
    reason = forms.CharField(required=False, max_length=500,
                             label="Why (kept in the audit log)")

    @classmethod
    def initial_of(cls, track) -> dict:
        where = "\n".join(f"{d}={b}" for d, buckets in (track.where or {}).items()
                          for b in buckets)
        return {"slug": track.slug, "name": track.name, "rules": track.rules,
                "attestations": "\n".join(track.attestations or []), "where": where,
                "position": track.position}

    def clean_attestations(self):
        return [line.strip() for line in self.cleaned_data["attestations"].splitlines()
                if line.strip()]

    def clean_where(self):
        where: dict[str, list[str]] = {}
        for line in self.cleaned_data["where"].splitlines():
            if not line.strip():
                continue
            dimension, sep, bucket = line.partition("=")
            if not sep or not dimension.strip() or not bucket.strip():
                raise forms.ValidationError(f"expected DIMENSION=BUCKET, got {line.strip()!r}")
            where.setdefault(dimension.strip(), []).append(bucket.strip())
        return where


class BoardAttachForm(forms.Form):
    benchmark = forms.SlugField(max_length=50, label="Benchmark (its slug)")

    def __init__(self, *args, tracks, attachable: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["track"] = forms.TypedChoiceField(
            coerce=int, choices=[(t.pk, t.name) for t in tracks])
        self.fields["benchmark"].help_text = (
            f"given to this challenge, on no board: {', '.join(attachable)}" if attachable else
            "none given to this challenge is free: staff give benchmarks (manage.py "
            "challenge_benchmark), or import one on this phase's page")
        self.order_fields(["track", "benchmark"])


class FinalistsForm(forms.Form):
    top = forms.IntegerField(min_value=1, max_value=100, required=False, initial=3,
                             label="Top N of each track")

    def __init__(self, *args, teams, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["teams"] = forms.TypedMultipleChoiceField(
            coerce=int, required=False, choices=[(t.pk, t.name) for t in teams],
            label="Or these teams", widget=forms.CheckboxSelectMultiple)


class DecisionForm(forms.Form):
    state = forms.ChoiceField(choices=[(Verification.State.VERIFIED, "verified"),
                                       (Verification.State.DISQUALIFIED, "disqualified")])
    reason = forms.CharField(required=False, max_length=2000,
                             widget=forms.Textarea(attrs={"rows": 2}),
                             label="Reason (public for a disqualification)")


class PackageForm(forms.Form):
    package = forms.FileField(label="Reproducibility package (.zip or .tar.gz)")


class BenchmarkImportForm(forms.Form):
    """A benchmark imported on the organizer pages and attached as a track's board
    (challenges.benchmark_imports); the track's dimension filter picks its items."""

    metadata = forms.FileField(label="Metadata file (such as MMAE-meta.json)")
    archive = forms.FileField(label="Input audio (.zip or .tar.gz)",
                              help_text="The files at the paths the metadata names, from the "
                                        "archive's root or its one top-level folder.")
    slug = forms.SlugField(max_length=50, label="Board slug",
                           help_text="The board's address, /b/<slug>/; a new one.")
    title = forms.CharField(required=False, max_length=200,
                            help_text="Empty: the kind's title.")
    rubrics_hidden = forms.BooleanField(
        required=False, label="Hide its rubrics, per-item results and judge replies from "
                              "everyone but the organizers and staff until the reveal")

    def __init__(self, *args, tracks, kinds, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"] = forms.ChoiceField(choices=kinds, label="Benchmark kind")
        self.fields["track"] = forms.TypedChoiceField(
            coerce=int, label="Track (its board in this phase)",
            choices=[(t.pk, t.name + (" (" + "; ".join(
                f"{d} = {', '.join(b)}" for d, b in t.where.items()) + ")" if t.where else
                " (every item)")) for t in tracks])
        self.order_fields(["metadata", "archive", "kind", "track", "slug", "title",
                           "rubrics_hidden"])
