"""The exports' addresses (exports.eee): a board row as an Every Eval Ever record and as
.eval_results YAML, the whole board as JSONL and as a zip of YAML files, and the signing keys.
Each answer is the same for every visitor (a visitor's level of the board: scoring.visibility),
made once per board state and panel state (leaderboard.pages.responses). Errors are the API's
(`{"errors": [...]}`)."""

from __future__ import annotations

import io
import json
import re
import zipfile

from django.db.models import Count, Max
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from config import signing
from config.serializers import error_responses
from exports import eee
from exports.serializers import EeeRecordOut, SigningKeysOut
from leaderboard.boards import state
from leaderboard.pages import responses
from panel.models import PanelAnswer
from scoring import visibility


class _AnyAccept(BaseContentNegotiation):
    """The view makes its own body (a record, JSON Lines, YAML, a zip) whatever Accept says;
    an error is JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class _Export(APIView):
    permission_classes = [AllowAny]
    authentication_classes = []
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _AnyAccept

    def board(self, slug: str):
        """The newest version of board `slug`, when a visitor may learn its rows' figures."""
        benchmark = state.benchmark_current(slug)
        if benchmark is None:
            raise NotFound(f"no benchmark {slug!r}")
        if visibility.disclosure(benchmark) < visibility.Disclosure.OVERALL:
            raise NotFound(visibility.NOT_YET)
        return benchmark

    def served(self, request, benchmark, what: str, render) -> HttpResponse:
        now = state.board_state(benchmark)
        site = f"{request.scheme}://{responses.canonical_host(request)}"
        # The records' human figures count the panel's answers, which change no board state.
        panel = PanelAnswer.objects.filter(task__benchmark=benchmark).aggregate(
            n=Count("id"), last=Max("id"))
        mark = f"panel={panel['n']}:{panel['last']}"
        return responses.shared(
            request, state=now.key, changed_at=benchmark.board_changed_at,
            parts=("exports", what, site, mark), benchmark=benchmark,
            render=lambda: render(eee.Board(benchmark, site=site, panel=mark)))


def _one(board: eee.Board, model_id: int) -> dict:
    row = board.row(model_id)
    if row is None:
        raise NotFound(f"model {model_id} has no row on this board")
    return row


def _error(exc) -> HttpResponse:
    """An error met while rendering, as the API answers it."""
    return HttpResponse(json.dumps({"errors": [str(exc.detail)]}), status=exc.status_code,
                        content_type="application/json")


def _rendered(make):
    def render(board):
        try:
            return make(board)
        except NotFound as exc:
            return _error(exc)
    return render


ERRORS = error_responses(described={404: "no such benchmark or row, or a board whose "
                                         "figures a visitor may not learn yet"})
SIGNED = ("Signed with the site's Ed25519 key (GET /.well-known/signing-keys.json; "
          "config.signing): the record's source_metadata.additional_details holds "
          "signature_algorithm, signature_key_id and signature, made over the canonical JSON "
          "of the record without those three.")


class RecordApi(_Export):
    @extend_schema(operation_id="eee_record", responses={
        200: OpenApiResponse(EeeRecordOut, description=(
            "The model's row as an Every Eval Ever record (schema 0.3.0): its figures overall "
            "and (where a visitor may see slices) per slice with their 95% intervals, the judge "
            "config (model, vLLM release, temperature, votes, prompts), the human panel's "
            "agreement where the board has one, and links to the board and the per-item "
            "files. " + SIGNED)), **ERRORS})
    def get(self, request, slug, model_id):
        """GET /api/leaderboards/<slug>/eee/<model id>.json"""
        return self.served(request, self.board(slug), f"record:{model_id}", _rendered(
            lambda board: HttpResponse(
                json.dumps(eee.record(board, _one(board, model_id)), ensure_ascii=False,
                           indent=2), content_type="application/json")))


class RecordsApi(_Export):
    @extend_schema(operation_id="eee_records", responses={
        (200, "application/jsonl"): OpenApiResponse(OpenApiTypes.BINARY, description=(
            "Every row of the board, best ranked first, one Every Eval Ever record a line. "
            + SIGNED)), **ERRORS})
    def get(self, request, slug):
        """GET /api/leaderboards/<slug>/eee.jsonl"""
        benchmark = self.board(slug)
        return self.served(request, benchmark, "records", lambda board: HttpResponse(
            "".join(json.dumps(eee.record(board, row), ensure_ascii=False) + "\n"
                    for row in board.rows),
            content_type="application/jsonl; charset=utf-8", headers={
                "Content-Disposition": f'attachment; filename="{benchmark.slug}-eee.jsonl"'}))


YAML_SIGNED = ("Its second line, a comment, holds the signature (algorithm, key id, value) of "
               "the entries as canonical JSON.")


class EvalResultsApi(_Export):
    @extend_schema(operation_id="eval_results", responses={
        (200, "application/yaml"): OpenApiResponse(OpenApiTypes.STR, description=(
            "The model repository's .eval_results/<slug>.yaml (the Hugging Face Hub's format): "
            "one entry per ranking figure, with the board as its source and the judge, "
            "interval and rank in its notes. " + YAML_SIGNED)), **ERRORS})
    def get(self, request, slug, model_id):
        """GET /api/leaderboards/<slug>/eval-results/<model id>.yaml"""
        benchmark = self.board(slug)
        return self.served(request, benchmark, f"yaml:{model_id}", _rendered(
            lambda board: HttpResponse(
                eee.eval_results(board, _one(board, model_id)),
                content_type="application/yaml; charset=utf-8", headers={
                    "Content-Disposition": f'attachment; filename="{benchmark.slug}.yaml"'})))


def _filename(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-") or "model"


class EvalResultsZipApi(_Export):
    @extend_schema(operation_id="eval_results_zip", responses={
        (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description=(
            "Each row's .eval_results file, under <model id>-<name>/.eval_results/<slug>.yaml. "
            + YAML_SIGNED)), **ERRORS})
    def get(self, request, slug):
        """GET /api/leaderboards/<slug>/eval-results.zip"""
        benchmark = self.board(slug)

        def render(board):
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for row in board.rows:
                    info = zipfile.ZipInfo(
                        f"{row['model_id']}-{_filename(row['model'])}/.eval_results/"
                        f"{benchmark.slug}.yaml", date_time=board.changed_at.timetuple()[:6])
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, eee.eval_results(board, row))
            return HttpResponse(buffer.getvalue(), content_type="application/zip", headers={
                "Content-Disposition":
                f'attachment; filename="{benchmark.slug}-eval-results.zip"'})

        return self.served(request, benchmark, "yaml-zip", render)


class SigningKeysApi(APIView):
    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(operation_id="signing_keys", responses={200: OpenApiResponse(
        SigningKeysOut, description=(
            "Every key that signed a record or snapshot here: {algorithm, signed, keys: "
            "[{key_id, algorithm, public_key (base64 of the 32 raw bytes), created, retired}]}, "
            "newest last; a retired key still verifies what it signed."))})
    def get(self, request):
        """GET /.well-known/signing-keys.json"""
        return Response(signing.public_keys(), headers={"Cache-Control": "public, max-age=300"})
