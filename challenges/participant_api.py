"""The participants' API (token auth: `Authorization: Token KEY`), under /c/<slug>/api/:

- `POST <phase>/<track>/entries/`: an upload to the phase board (multipart `predictions` (the
  JSONL manifest), `audio`, `model_name` (default: the team's name), optional `description`,
  `public` (default true)); 201 with the entry, 400/409 naming every problem, 429 over the
  team's limits (with the next allowed instant in the message and `Retry-After`), 503 while
  the queue cannot be reached; nothing stored when refused.
- `GET <phase>/<track>/entries/`: the team's limits in the phase and its entries on the board.
- `POST entries/<id>/choose/`: the team's choice of the submission that counts."""

from __future__ import annotations

import math

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.verification import verification_needed, verification_problem
from challenges import entries as entry_services
from challenges import teams as team_services
from challenges.models import Challenge, Entry
from config.errors import ServiceError
from config.serializers import error_responses
from config.throttle import ScopedThrottle
from submissions.file_checks import archive_file_problems, predictions_file_problems
from submissions.names import NAME_MAX_LENGTH, name_clean


class EntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    submission = serializers.IntegerField(source="submission_id")
    status = serializers.CharField(source="submission.state")
    track = serializers.CharField(source="board.track.slug")
    received_at = serializers.DateTimeField()
    late = serializers.BooleanField(help_text="received after the phase's closing instant: "
                                              "on the open board, never on the official one")
    chosen = serializers.BooleanField(help_text="the team chose it as the one that counts")
    counts = serializers.BooleanField(help_text="it counts on the official ranking (the "
                                                "chosen one, else the latest on time)")


class LimitsSerializer(serializers.Serializer):
    per_day = serializers.IntegerField()
    used_today = serializers.IntegerField(help_text="in the last 24 hours, every track of "
                                                    "the phase")
    today_left = serializers.IntegerField()
    total = serializers.IntegerField()
    used_total = serializers.IntegerField()
    total_left = serializers.IntegerField()
    next_at = serializers.DateTimeField(allow_null=True, help_text="when today's are spent: "
                                        "the instant the next upload is possible")


class BoardEntriesSerializer(serializers.Serializer):
    team = serializers.CharField()
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField()
    limits = LimitsSerializer()
    entries = EntrySerializer(many=True)


def _board(slug: str, phase: str, track: str):
    challenge = get_object_or_404(Challenge, slug=slug)
    board = entry_services.board_find(challenge, phase, track)
    if board is None:
        raise Http404("No such phase board.")
    return challenge, board


def _checked(upload, problems: list[str]):
    if problems:
        raise serializers.ValidationError(problems)
    return upload


class EntryListCreateApi(APIView):
    parser_classes = [MultiPartParser, FormParser]
    throttle_scope = "uploads"

    class EntryInputSerializer(serializers.Serializer):
        model_name = serializers.CharField(required=False, help_text="at most "
                                           f"{NAME_MAX_LENGTH} characters; the team's name "
                                           "when left out")
        predictions = serializers.FileField(required=False, help_text="the JSONL manifest")
        audio = serializers.FileField(required=False)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        public = serializers.BooleanField(required=False, default=True)

        def validate_model_name(self, value):
            return name_clean(value, field="model name")

        def validate_predictions(self, upload):
            return _checked(upload, predictions_file_problems(upload, self.context["benchmark"]))

        def validate_audio(self, upload):
            return _checked(upload, archive_file_problems(upload))

        def validate(self, data):
            if not data.get("predictions") and not data.get("audio"):
                raise serializers.ValidationError("upload a manifest and an archive of the "
                                                  "output audio, or one archive holding both")
            return data

    def get_throttles(self):
        throttles = super().get_throttles()
        if self.request.method == "POST":
            throttles.append(ScopedThrottle())
        return throttles

    @extend_schema(operation_id="challenge_entries_list",
                   responses={200: BoardEntriesSerializer, **error_responses(403, 404, 409)})
    def get(self, request, slug, phase, track):
        challenge, board = _board(slug, phase, track)
        team = team_services.team_of(challenge, request.user)
        if team is None:
            raise ServiceError(f"you are in no team of {challenge.title}", code="conflict")
        limits = entry_services.limits_left(team, board.phase)
        entries = [e for e in entry_services.entries_of(team, board.phase)
                   if e.board_id == board.pk]
        return Response(BoardEntriesSerializer({
            "team": team.name, "opens_at": board.phase.opens_at,
            "closes_at": board.phase.closes_at,
            "limits": {**limits.__dict__, "today_left": limits.today_left,
                       "total_left": limits.total_left},
            "entries": entries}).data)

    @extend_schema(operation_id="challenge_entries_create", request=EntryInputSerializer,
                   responses={201: EntrySerializer,
                              **error_responses(400, 403, 404, 409, 429, 503)})
    def post(self, request, slug, phase, track):
        # The instant the body had fully arrived: once it is read whole (the web server
        # reads it before the view, config.web_worker; another server is waited for here).
        request.data  # noqa: B018
        received_at = timezone.now()
        if verification_needed(request.user):
            raise PermissionDenied(verification_problem(request))
        challenge, board = _board(slug, phase, track)
        serializer = self.EntryInputSerializer(data=request.data,
                                               context={"benchmark": board.benchmark})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        team = team_services.team_of(challenge, request.user)
        try:
            entry = entry_services.entry_create(
                user=request.user, board=board, received_at=received_at,
                model_name=data.get("model_name") or (team.name if team else ""),
                metadata={"description": data["description"]}, public=data["public"],
                predictions=data.get("predictions"), archive=data.get("audio"))
        except ServiceError as exc:
            response = Response({"errors": exc.problems}, status=exc.status)
            limits = entry_services.limits_left(team, board.phase) if team else None
            if exc.code == "quota" and limits is not None and limits.next_at is not None:
                wait = (limits.next_at - timezone.now()).total_seconds()
                response["Retry-After"] = str(max(1, math.ceil(wait)))
            return response
        entry.counts = False
        url = request.build_absolute_uri(reverse("submissions:api-detail",
                                                 args=[entry.submission_id]))
        return Response(EntrySerializer(entry).data, status=status.HTTP_201_CREATED,
                        headers={"Location": url})


class EntryChooseApi(APIView):
    @extend_schema(operation_id="challenge_entries_choose", request=None,
                   responses={200: EntrySerializer, **error_responses(403, 404, 409)})
    def post(self, request, slug, pk):
        entry = get_object_or_404(Entry, pk=pk, team__challenge__slug=slug)
        entry = entry_services.entry_choose(user=request.user, entry=entry)
        entry.counts = True
        return Response(EntrySerializer(entry).data)
