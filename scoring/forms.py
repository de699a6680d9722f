"""Forms of the fleet page: switching an endpoint, changing and creating judge configs."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from config.env import parse_base_urls
from scoring.judge_configs import DEFAULT_SAMPLING
from scoring.kinds import KINDS
from scoring.models import JudgeConfig

REASON_WIDGET = forms.TextInput(attrs={"placeholder": "why", "size": 24})


class BaseUrlsField(forms.CharField):
    """One http(s) base URL a line (or comma-separated), each once."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false"})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value) -> list[str]:
        text = super().to_python(value)
        try:
            urls = parse_base_urls(text.replace("\n", ","), name="base URLs")
        except ImproperlyConfigured as exc:
            raise forms.ValidationError(str(exc)) from None
        if not urls:
            raise forms.ValidationError("give at least one base URL, "
                                        "such as http://127.0.0.1:8001")
        for url in urls:
            if len(url) > 300:
                raise forms.ValidationError(f"{url[:60]}…: a base URL has at most 300 "
                                            "characters")
        return urls

    def validate(self, value) -> None:
        """Emptiness is checked by to_python, with a clearer message."""


class EndpointSwitchForm(forms.Form):
    ACTIONS = [("take_out", "take out"), ("put_back", "put back")]

    base_url = forms.CharField(max_length=300, widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=ACTIONS, widget=forms.HiddenInput)
    reason = forms.CharField(max_length=1000, required=False, widget=REASON_WIDGET)

    def clean(self):
        data = super().clean()
        if data.get("action") == "take_out" and not (data.get("reason") or "").strip():
            self.add_error("reason", "say why the endpoint is taken out")
        return data


class JudgeConfigUpdateForm(forms.Form):
    base_urls = BaseUrlsField(label="Base URLs", help_text="One a line.")
    max_attempts = forms.IntegerField(min_value=1, max_value=50, label="Max attempts",
                                      help_text="Per judge query, the first one included.")
    max_audio_seconds = forms.FloatField(
        min_value=0.01, max_value=86400, label="Longest audio (s)", required=False,
        help_text="The longest audio item the servers take (launch_qwen3_omni.sh's "
                  "MAX_AUDIO_SECONDS); longer outputs are refused at upload.")
    max_audios = forms.IntegerField(min_value=1, max_value=64, label="Audios per prompt",
                                    required=False,
                                    help_text="--limit-mm-per-prompt's audio count.")
    reason = forms.CharField(max_length=1000, help_text="Kept in the audit log.")


class JudgeConfigCreateForm(forms.Form):
    kind = forms.ChoiceField(choices=[(name, kind.title) for name, kind in KINDS.items()],
                             label="Benchmark kind",
                             help_text="Whose prompts the config judges with.")
    name = forms.SlugField(max_length=100)
    judge_model = forms.CharField(max_length=200, label="Judge model",
                                  help_text="The model name the servers serve.")
    base_urls = BaseUrlsField(label="Base URLs", help_text="One a line.")
    rounds = forms.IntegerField(min_value=1, max_value=20, required=False,
                                help_text="Empty: the kind's usual number.")
    seed = forms.IntegerField()
    temperature = forms.FloatField(min_value=0.0, max_value=2.0)
    max_tokens = forms.IntegerField(min_value=1, max_value=32768, label="Max tokens")
    max_attempts = forms.IntegerField(min_value=1, max_value=50, label="Max attempts")
    notes = forms.CharField(max_length=2000, required=False,
                            widget=forms.Textarea(attrs={"rows": 2}))
    reason = forms.CharField(max_length=1000, required=False,
                             help_text="Kept in the audit log.")

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("initial", {
            "judge_model": settings.JUDGE_MODEL, "seed": settings.SCORING_SEED,
            "temperature": DEFAULT_SAMPLING["temperature"],
            "max_tokens": DEFAULT_SAMPLING["max_tokens"],
            "max_attempts": settings.JUDGE_MAX_ATTEMPTS,
            "base_urls": list(settings.JUDGE_BASE_URLS)})
        super().__init__(*args, **kwargs)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if JudgeConfig.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a judge config named {name!r} exists already")
        return name

    def service_arguments(self) -> dict:
        """The keyword arguments of judge_config_create."""
        data = self.cleaned_data
        return {"kind": data["kind"], "name": data["name"], "judge_model": data["judge_model"],
                "base_urls": data["base_urls"],
                "rounds": data["rounds"] or KINDS[data["kind"]].rounds,
                "sampling": {"temperature": data["temperature"],
                             "max_tokens": data["max_tokens"]},
                "seed": data["seed"], "max_attempts": data["max_attempts"],
                "notes": data["notes"], "reason": data["reason"]}


class BaselinesForm(forms.Form):
    benchmark = forms.SlugField(max_length=50)
    reason = forms.CharField(required=False, max_length=1000)
