"""The compare page's model search (`/b/<slug>/compare/models/?q=`): at most
compare.PICKER_LIMIT of the board's public representatives as JSON, for the picker's search
box (static/js/compare-picker.js). Shared per board state and search like the page itself
(leaderboard.pages.responses); without scripts the page's own GET form runs the same search."""

from __future__ import annotations

from django.http import JsonResponse
from django.views.decorators.http import require_safe

from leaderboard.boards import state as board_state
from leaderboard.boards.state import benchmark_or_404
from leaderboard.pages import compare as comparison
from leaderboard.pages import responses
from scoring import visibility

MAX_SEARCH = 100  # characters, as the compare page reads its search


@require_safe
def compare_models(request, slug):
    benchmark = benchmark_or_404(slug)
    text = request.GET.get("q", "")
    if len(text) > MAX_SEARCH:
        return JsonResponse({"errors": [f"q: a search is at most {MAX_SEARCH} characters "
                                        f"(got {len(text)})"]}, status=400)
    needle = comparison.picker_needle(text)
    now = board_state.board_state(benchmark)
    return responses.shared(
        request, state=now.key, changed_at=benchmark.board_changed_at,
        parts=("compare-models", needle), benchmark=benchmark,
        render=lambda: _found(benchmark, needle, request.user))


def _found(benchmark, needle: str, user) -> JsonResponse:
    visibility.require(benchmark, user)  # the compare page's, whose rule it follows
    results, count = comparison.picker_matches(benchmark, needle)
    return JsonResponse({"q": needle, "count": count, "limit": comparison.PICKER_LIMIT,
                         "note": comparison.picker_note(needle, len(results), count),
                         "results": results})
