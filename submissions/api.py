"""The submissions API (token auth: `Authorization: Token KEY`), one view per operation."""

from django.http import Http404, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from scoring.exports import FILES, file_chunks
from scoring.models import ScoringRun
from submissions import selectors
from submissions.services import (
    METADATA_FIELDS,
    SubmissionRefused,
    submission_cancel,
    submission_create,
)


def _run_out(run: ScoringRun) -> dict:
    return {
        "id": run.id, "status": run.status, "judge": run.judge_model,
        "simulated": run.simulated, "created_at": run.created_at,
        "status_times": run.status_times, "error": run.error or None,
    }


def submission_out(submission) -> dict:
    return {
        "id": submission.id, "status": submission.state,
        "benchmark": submission.benchmark.slug,
        "benchmark_version": submission.benchmark.version,
        "model": submission.model.name, "public": submission.public,
        "created_at": submission.created_at, "status_times": submission.status_times,
        "coverage": submission.coverage, "partial": submission.partial,
    }


class SubmissionListCreateApi(APIView):
    parser_classes = [MultiPartParser, FormParser]

    class InputSerializer(serializers.Serializer):
        benchmark = serializers.SlugField()
        model_name = serializers.CharField(max_length=200)
        predictions = serializers.FileField(required=False)
        audio = serializers.FileField(required=False)
        organisation = serializers.CharField(max_length=200, required=False, allow_blank=True)
        link = serializers.URLField(required=False, allow_blank=True)
        parameters = serializers.CharField(max_length=50, required=False, allow_blank=True)
        licence = serializers.CharField(max_length=100, required=False, allow_blank=True)
        open_weights = serializers.BooleanField(required=False, default=False)
        description = serializers.CharField(required=False, allow_blank=True)
        public = serializers.BooleanField(required=False, default=False)

        def validate_benchmark(self, slug):
            benchmark = selectors.benchmark_latest(slug)
            if benchmark is None:
                raise serializers.ValidationError(f"no benchmark {slug!r}")
            return benchmark

    @extend_schema(operation_id="submissions_list", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response([submission_out(s) for s in selectors.submissions_of(request.user)])

    @extend_schema(operation_id="submissions_create", request=InputSerializer,
                   responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT,
                              429: OpenApiTypes.OBJECT})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            return Response({"errors": _flatten(serializer.errors)},
                            status=status.HTTP_400_BAD_REQUEST)
        data = serializer.validated_data
        try:
            submission = submission_create(
                user=request.user, benchmark=data["benchmark"], model_name=data["model_name"],
                metadata={k: data[k] for k in METADATA_FIELDS if k in data},
                public=data["public"], predictions=data.get("predictions"),
                archive=data.get("audio"),
            )
        except SubmissionRefused as exc:
            code = status.HTTP_429_TOO_MANY_REQUESTS if exc.quota else status.HTTP_400_BAD_REQUEST
            return Response({"errors": exc.problems}, status=code)
        url = request.build_absolute_uri(reverse("submissions:api-detail",
                                                 args=[submission.id]))
        return Response({"id": submission.id, "status": submission.state, "url": url},
                        status=status.HTTP_201_CREATED, headers={"Location": url})


def _flatten(errors: dict) -> list[str]:
    return [f"{field}: {message}" for field, messages in errors.items() for message in messages]


class SubmissionDetailApi(APIView):
    # Anyone may ask; submission_for answers 404 unless the caller is the owner or staff,
    # so an anonymous caller learns no more than another user does.
    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_detail", responses=OpenApiTypes.OBJECT)
    def get(self, request, pk):
        submission = selectors.submission_for(request.user, pk)
        progress = selectors.run_progress(submission.current_run)
        return Response({
            **submission_out(submission),
            "progress": {"done": progress["done"], "total": progress["total"],
                         "eta_seconds": progress["eta_seconds"],
                         "queue_position": progress["queue_position"]},
            "failures": progress["failures"],
            "report": submission.report,
            "failure": submission.current_run.error if submission.current_run else None,
            "runs": [_run_out(run) for run in submission.runs.order_by("-created_at")],
        })


class SubmissionFileApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_file", responses={200: OpenApiTypes.BINARY})
    def get(self, request, pk, name):
        submission = selectors.submission_for(request.user, pk)
        return file_response(submission, name)


class SubmissionCancelApi(APIView):
    @extend_schema(operation_id="submissions_cancel", request=None,
                   responses=OpenApiTypes.OBJECT)
    def post(self, request, pk):
        submission = selectors.submission_for(request.user, pk)
        if not submission_cancel(submission):
            return Response({"errors": [f"submission {pk} is {submission.state}; only a "
                                        "queued or scoring one can be cancelled"]},
                            status=status.HTTP_409_CONFLICT)
        submission.refresh_from_db()
        return Response({"id": submission.id, "status": submission.state})


def file_response(submission, name: str) -> StreamingHttpResponse:
    """A finished run's results file, streamed from the database; 404 otherwise."""
    run = submission.current_run
    if name not in FILES or run is None or run.status != ScoringRun.Status.FINISHED:
        raise Http404("no such file")
    response = StreamingHttpResponse(file_chunks(run, name), content_type=FILES[name])
    response["Content-Disposition"] = f'attachment; filename="{submission.id}-{name}"'
    return response
