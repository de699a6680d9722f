"""The panel API (a signed-in rater with a confirmed address) and the judge card's read API."""

from django.utils.cache import patch_cache_control
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import error_responses
from config.throttle import ScopedThrottle
from leaderboard.boards import state
from panel import assignment, corrected, item_verdicts, judge_card, services
from panel.serializers import (
    AnswerIn,
    AnswerOut,
    CorrectedOut,
    ItemPanelOut,
    JudgeCardOut,
    TaskOut,
)
from scoring import visibility
from scoring.kinds import get_kind

# Panel answers come in at any time and change no board state, so the item page's verdicts
# are read afresh; a shared cache may keep them this long.
ITEM_PANEL_MAX_AGE = 60


def _panel_benchmark(slug: str):
    """The benchmark of a panel's address; a hidden-rubric one has no panel until its reveal
    (a task names its rubric, and its item's verdicts are the judge's: scoring.visibility)."""
    benchmark = state.benchmark_current(slug)
    if benchmark is None or not get_kind(benchmark.kind).has_panel \
            or benchmark.rubrics_hidden:
        raise NotFound(f"no listening panel on {slug!r}")
    return benchmark


def _rater(request):
    problem = services.rater_problem(request.user)
    if problem:
        raise PermissionDenied(problem)
    return request.user


class PanelNextApi(APIView):
    """GET /api/panel/<slug>/next/: the rater's next task; 204 when none is left for them."""

    @extend_schema(operation_id="panel_next", responses={
        200: TaskOut, 204: None, **error_responses(401, 403, 404)})
    def get(self, request, slug):
        benchmark = _panel_benchmark(slug)
        given = assignment.panel_next(benchmark=benchmark, rater=_rater(request))
        if given is None:
            return Response(status=204)
        return Response(TaskOut(services.task_payload(given)).data)


class PanelAnswerApi(APIView):
    """POST /api/panel/<slug>/tasks/<task>/: answer it, after listening to each audio."""

    throttle_scope = "panel"

    def get_throttles(self):
        return [*super().get_throttles(), ScopedThrottle()]

    @extend_schema(operation_id="panel_answer", request=AnswerIn, responses={
        201: AnswerOut, **error_responses(400, 401, 403, 404, 409, 429)})
    def post(self, request, slug, task):
        _panel_benchmark(slug)
        rater = _rater(request)
        data = request.data if isinstance(request.data, dict) else {}
        answer = services.panel_answer(rater=rater, task_id=task, choice=data.get("choice"),
                                       listened=data.get("listened"))
        return Response(AnswerOut(answer).data, status=201)


class JudgeCardApi(APIView):
    """GET /api/leaderboards/<slug>/judge/: the judge card."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="judge_card", responses={200: JudgeCardOut,
                                                         **error_responses(404)})
    def get(self, request, slug):
        benchmark = state.benchmark_current(slug)
        if benchmark is None:
            raise NotFound(f"no benchmark {slug!r}")
        visibility.require(benchmark, request.user)  # its rubrics and verdicts: FULL only
        return Response(JudgeCardOut(judge_card.judge_card(benchmark)).data)


class CorrectedApi(APIView):
    """GET /api/leaderboards/<slug>/judge/models/<model_id>/: a board row's figures corrected
    by the panel's answers on that system (panel.corrected), read afresh (answers change no
    board state)."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="judge_corrected_row", responses={200: CorrectedOut,
                                                                  **error_responses(404)})
    def get(self, request, slug, model_id):
        benchmark = state.benchmark_current(slug)
        if benchmark is None:
            raise NotFound(f"no benchmark {slug!r}")
        visibility.require(benchmark, request.user)  # as the judge card: FULL only
        found = corrected.corrected_figures(benchmark, model_id)
        if found is None:
            raise NotFound(f"no row of model {model_id} on {slug!r} people could rate")
        response = Response(CorrectedOut({"benchmark": slug, **found}).data)
        patch_cache_control(response, public=True, max_age=ITEM_PANEL_MAX_AGE)
        return response


class ItemPanelApi(APIView):
    """GET /api/panel/<slug>/items/<key>/: the panel's verdicts on one item, as the card
    counts them, for the item page to show beside the judge's."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="panel_item", responses={200: ItemPanelOut,
                                                         **error_responses(404)})
    def get(self, request, slug, key):
        found = item_verdicts.item_panel(_panel_benchmark(slug), key)
        if found is None:
            raise NotFound(f"no item {key!r} on {slug!r}")
        response = Response(ItemPanelOut(found).data)
        patch_cache_control(response, public=True, max_age=ITEM_PANEL_MAX_AGE)
        return response
