"""What the submissions API answers: output serializers shared by its views, so that every
response is written from one definition and described by it in the OpenAPI schema."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from submissions import anonymity


class RunSerializer(serializers.Serializer):
    """One scoring run of a submission."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    judge = serializers.CharField(source="judge_name", help_text="the judge model, or the "
                                  "judge simulator")
    judge_config = serializers.CharField(source="judge_config.name")
    purpose = serializers.CharField(help_text="submission, rescore or baseline")
    simulated = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    status_times = serializers.DictField(child=serializers.CharField(),
                                         help_text="status -> when it was entered")
    error = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_error(self, run) -> str | None:
        return run.error or None


class RunWithCacheSerializer(RunSerializer):
    cached_answers = serializers.IntegerField(
        help_text="answers taken from the judgment cache: copies of the author's own, a "
        "published or a baseline run's (another author's private upload is never counted)")


class SubmissionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(source="state", help_text="uploaded, validating, "
                                   "rejected (the upload is wrong: see report.errors), "
                                   "failed (validation broke on our side), then its run's: "
                                   "queued, scoring, aggregating, finished, failed (on our "
                                   "side) or cancelled")
    benchmark = serializers.CharField(source="benchmark.slug")
    benchmark_version = serializers.IntegerField(source="benchmark.version")
    model = serializers.CharField(source="model.name")
    public = serializers.BooleanField()
    publish_at = serializers.DateTimeField(allow_null=True, help_text=(
        "an embargo: public from this moment on (UTC), shown nowhere before; null once "
        "released, or without one"))
    anonymous_until = serializers.DateTimeField(allow_null=True, help_text=(
        "an anonymous entry: shown as `model` (\"Anonymous submission N\") until this moment "
        "(UTC), then under its name; null once revealed, or without one"))
    reveals_as = serializers.SerializerMethodField(
        help_text="an anonymous entry's model name from its reveal on (its author and staff "
                  "only; null for anyone else)")
    review_link = serializers.SerializerMethodField(
        help_text="an anonymous entry's private review link: its page, without its name until "
                  "the reveal, its model's after (its author and staff only)")
    created_at = serializers.DateTimeField()
    status_times = serializers.DictField(
        child=serializers.CharField(), source="state_times",
        help_text="each `status` it entered -> when: the upload's own, then its current run's")
    coverage = serializers.FloatField(allow_null=True)
    partial = serializers.BooleanField()
    representative = serializers.BooleanField()
    hidden = serializers.BooleanField()
    flag = serializers.SerializerMethodField()
    notice = serializers.SerializerMethodField(
        help_text="when it failed on our side: that, in plain words, and what happens next")

    def _manager(self, submission) -> bool:
        user = getattr(self.context.get("request"), "user", None)
        return user is not None and (user.is_staff or user.pk == submission.owner_id)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_reveals_as(self, submission) -> str | None:
        if submission.reveal_as_id is None or not self._manager(submission):
            return None
        return submission.reveal_as.name

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_review_link(self, submission) -> str | None:
        if not submission.review_token or not self._manager(submission):
            return None
        return anonymity.review_link(submission)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_flag(self, submission) -> str | None:
        return submission.flag_reason or None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_notice(self, submission) -> str | None:
        return submission.failure_notice() if submission.failed_on_our_side else None


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    eta_seconds = serializers.IntegerField(allow_null=True)
    queue_position = serializers.IntegerField(allow_null=True)


class SubmissionDetailSerializer(SubmissionSerializer):
    """A submission with its progress, validation report, runs and overall figures: the
    view sets what the model does not hold on the instance (submissions.api)."""

    progress = ProgressSerializer()
    failures = serializers.DictField(child=serializers.IntegerField(),
                                     help_text="failed judge queries by kind")
    report = serializers.DictField(help_text="the validation report")
    failure = serializers.CharField(allow_null=True, help_text="why it failed on our side: "
                                    "its validation or its current run")
    runs = RunWithCacheSerializer(many=True, source="runs_shown", help_text="newest first")
    metrics = serializers.ListField(child=serializers.CharField())
    files = serializers.ListField(child=serializers.CharField(),
                                  help_text="results files, at files/<name> once finished")
    overall = serializers.DictField(allow_null=True,
                                    help_text="n and each metric, once finished")
    cost = serializers.DictField(
        allow_null=True, help_text="what the current run cost the judge fleet: queries, "
        "reused, requests, replies, prompt_tokens, completion_tokens, audio_seconds, "
        "audio_sent, audio_bytes, audio_cached, cache_misses, request_bytes, busy_seconds, "
        "wall_seconds (null before anything was asked)")


class SubmissionStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(source="state")


class SubmissionCreatedSerializer(SubmissionStatusSerializer):
    url = serializers.URLField(help_text="the submission's API address (also Location)")


class RescoreSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    judge_config = serializers.CharField()
    answers = serializers.IntegerField(help_text="answers the new run needs")
    cached = serializers.IntegerField(help_text="of which the judgment cache already has")
    queries = serializers.IntegerField(help_text="judge queries it will send")
    dry_run = serializers.BooleanField()
    run = RunSerializer(required=False, help_text="the new run (not for a dry run)")


class QuotaSerializer(serializers.Serializer):
    """A user's upload limits in force and what is left of them."""

    username = serializers.CharField()
    per_day = serializers.IntegerField(help_text="submissions per 24 hours")
    today = serializers.IntegerField(help_text="left in the last 24 hours")
    in_flight_limit = serializers.IntegerField(help_text="scored at once")
    in_flight = serializers.IntegerField(help_text="left of those")
    overridden = serializers.BooleanField(help_text="the user has limits of their own")


class DeletedSerializer(serializers.Serializer):
    deleted = serializers.IntegerField(help_text="the deleted submission's id")
    runs = serializers.ListField(child=serializers.IntegerField(),
                                 help_text="its runs, deleted with it")


class SignalSerializer(serializers.Serializer):
    """One output's signals (scoring.signals)."""

    item = serializers.CharField()
    lufs = serializers.FloatField(allow_null=True, help_text="integrated loudness "
                                  "(ITU-R BS.1770-4); null when silent or under 0.4 s")
    true_peak_dbtp = serializers.FloatField(allow_null=True, help_text="true peak, 4x "
                                            "oversampled; null for digital silence")
    clipped_share = serializers.FloatField(help_text="share of samples at full scale")
    silent_share = serializers.FloatField(help_text="share of 10 ms frames under -60 dBFS")
    duration_ratio = serializers.FloatField(allow_null=True, help_text="its length over "
                                            "its item's first input's")
    sample_rate = serializers.IntegerField()
    channels = serializers.IntegerField()


class SignalSummarySerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="outputs measured")
    median_lufs = serializers.FloatField(required=False, allow_null=True)
    max_true_peak_dbtp = serializers.FloatField(required=False, allow_null=True)
    clipping_share = serializers.FloatField(
        required=False, help_text="share of outputs over 0.1% of their samples at full "
        "scale")
    silent_share = serializers.FloatField(
        required=False, help_text="share of outputs more than half silent")
    length_off_share = serializers.FloatField(
        required=False, help_text="share of outputs under half or over twice their "
        "input's length")


class SignalCardSerializer(serializers.Serializer):
    """GET /api/submissions/<id>/signals/ (submissions.signals.signal_card)."""

    state = serializers.ChoiceField(["measuring", "measured"])
    outputs = serializers.IntegerField(help_text="outputs to measure")
    items = SignalSerializer(many=True)
    summary = SignalSummarySerializer()
