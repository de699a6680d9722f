"""The submissions API (token auth: `Authorization: Token KEY`), one view per operation."""

from django.http import Http404, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.verification import verification_needed, verification_problem
from config.serializers import error_responses
from config.throttle import ScopedThrottle
from judge import families
from scoring import visibility
from scoring.exports import content_type, file_chunks
from scoring.kinds import get_kind
from scoring.models import ScoringRun, SliceResult
from scoring.runs import cost_card
from submissions import moderation, selectors
from submissions.file_checks import (
    archive_file_problems,
    predictions_file_problems,
    takes_archive,
)
from submissions.models import Submission
from submissions.names import NAME_MAX_LENGTH, name_clean
from submissions.serializers import (
    SignalCardSerializer,
    SubmissionCreatedSerializer,
    SubmissionDetailSerializer,
    SubmissionSerializer,
    SubmissionStatusSerializer,
)
from submissions.services import (
    METADATA_FIELDS,
    submission_cancel,
    submission_create,
    upload_file_problems,
)
from submissions.signals import signal_card
from submissions.withheld import withheld


class SubmissionListCreateApi(APIView):
    parser_classes = [MultiPartParser, FormParser]
    throttle_scope = "uploads"

    class SubmissionInputSerializer(serializers.Serializer):
        benchmark = serializers.SlugField()
        # Names are measured once normalised (submissions.names), as the board stores them.
        model_name = serializers.CharField(help_text=f"at most {NAME_MAX_LENGTH} characters")
        predictions = serializers.FileField(required=False)
        audio = serializers.FileField(required=False)
        organisation = serializers.CharField(required=False, allow_blank=True,
                                             help_text=f"at most {NAME_MAX_LENGTH} characters")
        link = serializers.URLField(required=False, allow_blank=True)
        parameters = serializers.CharField(max_length=50, required=False, allow_blank=True)
        licence = serializers.CharField(max_length=100, required=False, allow_blank=True)
        open_weights = serializers.BooleanField(required=False, default=False)
        base_family = serializers.ChoiceField(
            choices=families.CHOICES, required=False, default=families.NOT_DECLARED,
            help_text="the base model family the system is built on (judge.families; "
                      "\"other\": none of them)")
        description = serializers.CharField(required=False, allow_blank=True)
        public = serializers.BooleanField(required=False, default=False)
        publish_at = serializers.DateTimeField(
            required=False, allow_null=True, default=None, help_text=(
                "an embargo: scored now, public from this moment on (ISO 8601; UTC unless an "
                "offset is given), shown nowhere before; at most a year ahead"))
        anonymous_until = serializers.DateTimeField(
            required=False, allow_null=True, default=None, help_text=(
                "an anonymous entry: shown as \"Anonymous submission N\" (no author, no model "
                "details) until this moment, then under its name (ISO 8601; UTC unless an "
                "offset is given); at most a year ahead, after publish_at"))
        align = serializers.BooleanField(
            required=False, default=False,
            help_text="AIR-Bench foundation: align unreadable responses through the judge")

        def validate_benchmark(self, slug):
            benchmark = selectors.benchmark_latest(slug)
            if benchmark is None:
                raise serializers.ValidationError(f"no benchmark {slug!r}")
            return benchmark

        def validate_model_name(self, value):
            return name_clean(value, field="model name")

        def validate_organisation(self, value):
            return name_clean(value, field="organisation", required=False,
                              label="Organisation")

        # Each field is checked whatever the others hold, so that one answer names every
        # problem; the benchmark is looked up again since its validated value is not at hand.
        def validate_predictions(self, upload):
            return _checked(upload, predictions_file_problems(upload, self._benchmark()))

        def validate_audio(self, upload):
            if not takes_archive(self._benchmark()):
                return upload  # refused by the service, naming the benchmark
            return _checked(upload, archive_file_problems(upload))

        def _benchmark(self):
            slug = self.initial_data.get("benchmark")
            return selectors.benchmark_latest(slug) if isinstance(slug, str) else None

        def every_problem(self) -> dict:
            """Its own errors and, for a benchmark that exists, what the service would refuse
            of the files and options that passed them (a predictions file's lines), which it
            is not asked once these are refused: one answer names every problem."""
            errors = {field: list(found) for field, found in self.errors.items()}
            benchmark = self._benchmark()
            if benchmark is None:
                return errors
            given = {name: None if name in errors else self.initial_data.get(name) or None
                     for name in ("predictions", "audio", "align")}
            found = upload_file_problems(
                benchmark=benchmark, predictions=given["predictions"], archive=given["audio"],
                options={"align": given["align"] in self.fields["align"].TRUE_VALUES})
            return {**errors, **{k: v for k, v in found.items() if k not in errors}}

    def get_throttles(self):
        """Uploads also count against the `uploads` rate (THROTTLE_UPLOAD); listing does not."""
        throttles = super().get_throttles()
        if self.request.method == "POST":
            throttles.append(ScopedThrottle())
        return throttles

    @extend_schema(operation_id="submissions_list",
                   responses={200: SubmissionSerializer(many=True), **error_responses(403)})
    def get(self, request):
        return Response(SubmissionSerializer(selectors.submissions_of(request.user),
                                             many=True, context={"request": request}).data)

    @extend_schema(operation_id="submissions_create", request=SubmissionInputSerializer,
                   responses={201: SubmissionCreatedSerializer,
                              **error_responses(400, 403, 429, 503)})
    def post(self, request):
        if verification_needed(request.user):
            raise PermissionDenied(verification_problem(request))
        serializer = self.SubmissionInputSerializer(data=request.data)
        if not serializer.is_valid():
            raise serializers.ValidationError(serializer.every_problem())
        data = serializer.validated_data
        # A broker that cannot be reached raises BrokerUnavailable: 503 (config.api).
        submission = submission_create(
            user=request.user, benchmark=data["benchmark"], model_name=data["model_name"],
            metadata={k: data[k] for k in METADATA_FIELDS if k in data},
            public=data["public"], predictions=data.get("predictions"),
            archive=data.get("audio"), options={"align": data["align"]},
            publish_at=data.get("publish_at"), anonymous_until=data.get("anonymous_until"),
        )
        url = request.build_absolute_uri(reverse("submissions:api-detail",
                                                 args=[submission.id]))
        submission.url = url
        return Response(SubmissionCreatedSerializer(submission,
                                                    context={"request": request}).data,
                        status=status.HTTP_201_CREATED, headers={"Location": url})


class SubmissionDetailApi(APIView):
    # Anyone may ask: submission_get answers 404 for a submission the caller may not see and
    # 403 for a published one that is not theirs.
    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_detail",
                   responses={200: SubmissionDetailSerializer, **error_responses(403, 404)})
    def get(self, request, pk):
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        return Response(SubmissionDetailSerializer(_detail(submission, request.user),
                                                   context={"request": request}).data)

    class AuthorChoicesSerializer(serializers.Serializer):
        public = serializers.BooleanField(
            required=False, help_text="show it on the public board, or keep it private")
        representative = serializers.BooleanField(
            required=False, help_text="make it its model's representative on the board (it "
            "must be public and finished); false goes back to the model's latest submission")

    @extend_schema(operation_id="submissions_update", request=AuthorChoicesSerializer,
                   responses={200: SubmissionSerializer, **error_responses(400, 403, 404)})
    def patch(self, request, pk):
        """The author's choices: public or private, and the model's representative."""
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        serializer = self.AuthorChoicesSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        moderation.submission_author_choices(actor=request.user, submission=submission,
                                             **serializer.validated_data)
        return Response(SubmissionSerializer(
            selectors.submission_get(user=request.user, pk=pk, write=True),
            context={"request": request}).data)


def _checked(upload, problems: list[str]):
    if problems:
        raise serializers.ValidationError(problems)
    return upload


def _detail(submission, user):
    """The submission with what its detail answers beside its fields: progress and failures
    (as its author is shown them), every run with its cache hits, the kind's metrics and
    results files and, once finished, the overall figures."""
    progress = selectors.run_progress(submission.current_run, owner_id=submission.owner_id)
    runs = list(submission.runs.select_related("judge_config").order_by("-created_at"))
    cached = selectors.run_cache_hits(runs, owner_id=submission.owner_id)
    for run in runs:
        run.cached_answers = cached.get(run.id, 0)
    kind = get_kind(submission.benchmark.kind)
    run = submission.current_run
    overall = None
    # No figure of a hidden-rubric benchmark's row below OVERALL, no results file below
    # FULL, for its author too (scoring.visibility).
    level = visibility.disclosure(submission.benchmark, user)
    if run is not None and run.status == ScoringRun.Status.FINISHED \
            and level >= visibility.Disclosure.OVERALL:
        found = SliceResult.objects.filter(run=run, dimension=SliceResult.OVERALL).first()
        figures = found.figures() if found else {}
        overall = {k: figures.get(k) for k in ("n", *kind.metric_keys)}
    submission.progress, submission.failures = progress, progress["failures"]
    submission.failure = run.error if run is not None else (
        "validation failed on our side" if submission.status == Submission.Status.FAILED
        else None)
    submission.runs_shown = runs
    submission.metrics = list(kind.metric_keys)
    submission.files = list(kind.files) if level is visibility.Disclosure.FULL else []
    submission.overall = overall
    submission.cost = cost_card(run) if run is not None else None
    return submission


class SubmissionSignalsApi(APIView):
    # The audio's own rule: anyone who may see the submission and its benchmark's items.
    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_signals", responses={200: SignalCardSerializer,
                                                                  **error_responses(404)})
    def get(self, request, pk):
        """Each output's objective signals (loudness, true peak, clipping, silence, length,
        rate, channels) and their summary, measured once after validation."""
        submission = selectors.submission_get(user=request.user, pk=pk)
        visibility.require(submission.benchmark, request.user)
        return Response(signal_card(submission))


class SubmissionFileApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_file",
                   responses={(200, "application/octet-stream"): OpenApiTypes.BINARY,
                              **error_responses(403, 404)})
    def get(self, request, pk, name):
        """A public, published submission's results files are anyone's to download; a private
        one's are its author's and staff's (anyone else: 404, as if it did not exist)."""
        submission = selectors.submission_get(user=request.user, pk=pk)
        return file_response(submission, name, run_id=request.query_params.get("run"),
                             all_runs=selectors.manages(request.user, submission),
                             user=request.user)


class SubmissionCancelApi(APIView):
    @extend_schema(operation_id="submissions_cancel", request=None,
                   responses={200: SubmissionStatusSerializer, **error_responses(403, 404, 409)})
    def post(self, request, pk):
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        submission_cancel(submission=submission)
        submission.refresh_from_db()
        return Response(SubmissionStatusSerializer(submission).data)


def file_response(submission, name: str, run_id=None, *, all_runs: bool = True,
                  user=None) -> StreamingHttpResponse:
    """A finished run's results file, streamed from the database; 404 otherwise. The run is
    the submission's current one, or `run_id` when it is one of the submission's runs and
    `all_runs` (its author and staff see every run; anyone else the current one only, less
    the items whose results are withheld: submissions.withheld). Every results file holds
    per-item results: of a hidden-rubric benchmark, a 404 for a `user` below FULL (its
    author included: scoring.visibility)."""
    visibility.require(submission.benchmark, user)
    run = submission.current_run
    if run_id not in (None, ""):
        run = submission.runs.filter(id=run_id).first() \
            if str(run_id).isdigit() and all_runs else None
    if name not in get_kind(submission.benchmark.kind).files \
            or run is None or run.status != ScoringRun.Status.FINISHED:
        raise Http404("no such file")
    held = frozenset() if all_runs else withheld(
        submission.benchmark, submission_ids=[submission.id]).items(submission.id)
    response = StreamingHttpResponse(file_chunks(run, name, withheld=held),
                                     content_type=content_type(name))
    label = f"{submission.id}-{name}" if run == submission.current_run \
        else f"{submission.id}-run{run.id}-{name}"
    response["Content-Disposition"] = f'attachment; filename="{label}"'
    return response
