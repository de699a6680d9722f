"""The staff's API: rescore, moderate and retry a submission, set a user's quota. Each call is the
service the staff pages and the management commands use (`rescoring.rescore_request`,
`moderation.*`); a caller who is not staff gets 403 (or 404 for a submission they may not
see), and every change is audited by its service."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import error_responses
from submissions import moderation, selectors
from submissions.moderation import QUOTA_MAX
from submissions.rescoring import RescoreFilter, rescore_request
from submissions.serializers import (
    DeletedSerializer,
    QuotaSerializer,
    RescoreSerializer,
    SubmissionSerializer,
)
from submissions.services import quota_left

REASON = {"max_length": 1000, "help_text": "kept in the audit log"}


class SubmissionRescoreApi(APIView):
    """Score a submission again under a judge config (by default the benchmark's current
    one). 404 for anyone who cannot see the submission, 403 for its non-staff owner."""

    permission_classes = [AllowAny]  # submission_get answers 404 or 403 to anyone else

    class RescoreInputSerializer(serializers.Serializer):
        judge_config = serializers.CharField(required=False, max_length=100,
                                             help_text="a judge config's name")
        reason = serializers.CharField(**REASON)
        dry_run = serializers.BooleanField(required=False, default=False)

    @extend_schema(operation_id="submissions_rescore", request=RescoreInputSerializer,
                   responses={200: RescoreSerializer, 202: RescoreSerializer,
                              **error_responses(400, 403, 404, 409)})
    def post(self, request, pk):
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        if not request.user.is_staff:  # a dry run too: it is the staff's tool
            raise PermissionDenied("only staff can rescore a submission")
        data = self.RescoreInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        dry_run = data.validated_data["dry_run"]
        plan, made = rescore_request(
            actor=request.user, benchmark=submission.benchmark,
            where=RescoreFilter(submission_ids=(submission.id,)),
            judge_config=data.validated_data.get("judge_config"),
            reason=data.validated_data["reason"], dry_run=dry_run)
        out = {"submission": submission.id, "judge_config": plan.config.name,
               "answers": plan.total, "cached": plan.cached, "queries": plan.queries,
               "dry_run": dry_run}
        if dry_run:
            return Response(RescoreSerializer(out).data)
        return Response(RescoreSerializer({**out, "run": made[0]}).data,
                        status=status.HTTP_202_ACCEPTED)


class _SubmissionModerationApi(APIView):
    """A staff change of one submission through its moderation service, answering the
    submission as it is afterwards."""

    permission_classes = [AllowAny]  # submission_get, then the service's staff check
    InputSerializer: type[serializers.Serializer]

    def change(self, **kwargs):
        raise NotImplementedError

    def post(self, request, pk):
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(SubmissionSerializer(self.change(
            actor=request.user, submission=submission, **data.validated_data),
            context={"request": request}).data)


class HideInputSerializer(serializers.Serializer):
    hidden = serializers.BooleanField(default=True, help_text="false puts it back")
    reason = serializers.CharField(**REASON)


class FlagInputSerializer(serializers.Serializer):
    flagged = serializers.BooleanField(default=True, help_text="false removes the flag")
    reason = serializers.CharField(max_length=1000, help_text="a flag's reason is public")


@extend_schema_view(post=extend_schema(
    operation_id="submissions_hide", request=HideInputSerializer,
    responses={200: SubmissionSerializer, **error_responses(400, 403, 404)}))
class SubmissionHideApi(_SubmissionModerationApi):
    """Take a submission off the board and every public page, or put it back."""

    InputSerializer = HideInputSerializer

    def change(self, **kwargs):
        return moderation.submission_hide(**kwargs)


@extend_schema_view(post=extend_schema(
    operation_id="submissions_flag", request=FlagInputSerializer,
    responses={200: SubmissionSerializer, **error_responses(400, 403, 404)}))
class SubmissionFlagApi(_SubmissionModerationApi):
    """Flag a submission with a public reason shown beside it on the board, or remove the
    flag (the reason then says why, in the audit log)."""

    InputSerializer = FlagInputSerializer

    def change(self, **kwargs):
        return moderation.submission_flag(**kwargs)


class RetryInputSerializer(serializers.Serializer):
    reason = serializers.CharField(**REASON)


@extend_schema_view(post=extend_schema(
    operation_id="submissions_retry", request=RetryInputSerializer,
    responses={200: SubmissionSerializer, **error_responses(400, 403, 404, 409)}))
class SubmissionRetryApi(_SubmissionModerationApi):
    """Retry a submission that failed on our side: its validation again, from its kept
    files, or its failed run resumed with its answers (409 for any other)."""

    InputSerializer = RetryInputSerializer

    def change(self, **kwargs):
        return moderation.submission_retry_failed(**kwargs)


class SubmissionDeleteApi(APIView):
    """Delete a submission, its runs and its files."""

    permission_classes = [AllowAny]  # submission_get, then the service's staff check

    class DeleteInputSerializer(serializers.Serializer):
        reason = serializers.CharField(**REASON)

    @extend_schema(operation_id="submissions_delete", request=DeleteInputSerializer,
                   responses={200: DeletedSerializer, **error_responses(400, 403, 404)})
    def post(self, request, pk):
        submission = selectors.submission_get(user=request.user, pk=pk, write=True)
        data = self.DeleteInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        before = moderation.submission_delete(actor=request.user, submission=submission,
                                              **data.validated_data)
        return Response(DeletedSerializer({"deleted": before["id"],
                                           "runs": before["runs"]}).data)


class QuotaApi(APIView):
    """Give a user their own upload limits; both limits null removes the override."""

    class QuotaInputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        per_day = serializers.IntegerField(min_value=0, max_value=QUOTA_MAX, allow_null=True,
                                           default=None, help_text="null: the site's limit")
        in_flight = serializers.IntegerField(min_value=0, max_value=QUOTA_MAX, allow_null=True,
                                             default=None, help_text="null: the site's limit")
        reason = serializers.CharField(**REASON)

        def validate_username(self, name):
            try:
                return get_user_model().objects.get(username=name.strip())
            except get_user_model().DoesNotExist:
                raise serializers.ValidationError(f"no user {name.strip()!r}") from None

    @extend_schema(operation_id="quotas_set", request=QuotaInputSerializer,
                   responses={200: QuotaSerializer, **error_responses(400, 403)})
    def post(self, request):
        data = self.QuotaInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = data.validated_data.pop("username")
        moderation.quota_override(actor=request.user, user=user, **data.validated_data)
        return Response(QuotaSerializer({"username": user.get_username(),
                                         **quota_left(user)}).data)
