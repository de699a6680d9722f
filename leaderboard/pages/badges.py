"""Live badges: an SVG per model and board (its rank, rank range, the board's ranking figure
with its interval, the board version), drawn by anybadge, revalidated by an ETag that moves
with the board, so that a README's badge follows the board as it changes."""

from __future__ import annotations

import anybadge
from django.http import Http404, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.http import require_safe

from leaderboard.boards import state as board_state
from leaderboard.boards.selectors import leaderboard_rows
from scoring import visibility
from scoring.kinds import get_kind

BADGE_COLOUR = "#1f6feb"
BADGE_MAX_AGE = 300  # seconds a cache may show it before asking again (then 304 or new)


def badge_text(row: dict, kind, version: int) -> str:
    """What the badge's right half says: "#3 (2-5) · EMR 12.34 [8.00, 17.00] · v4"."""
    metric = kind.metric(kind.ranking[0])
    rank = f"#{row['rank']}" if row.get("rank") else "unranked"
    if row.get("rank_range"):
        best, worst = row["rank_range"]
        rank += f" ({best}\u2013{worst})" if best != worst else ""
    figure = f"{metric.label} {metric.format(row.get(metric.key))}"
    interval = row.get(f"{metric.key}_interval")
    if interval:
        figure += f" [{metric.format(interval[0])}, {metric.format(interval[1])}]"
    return f"{rank} \u00b7 {figure} \u00b7 v{version}"


@require_safe
def model_badge(request, slug, model_id):
    """The model's badge on the board: 404 unless one of its submissions is on it."""
    benchmark = board_state.benchmark_or_404(slug)
    visibility.require(benchmark, request.user, visibility.Disclosure.OVERALL)
    now = board_state.board_state(benchmark)
    etag = f'"badge-{model_id}-{now.key}-{visibility.cache_part(benchmark, request.user)}"'
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return not_modified
    row = next((r for r in leaderboard_rows(benchmark=benchmark)
                if r["model_id"] == model_id), None)
    if row is None:
        raise Http404("this model is not on the board")
    kind = get_kind(benchmark.kind)
    badge = anybadge.Badge(label=benchmark.title.split(" (")[0][:40],
                           value=badge_text(row, kind, benchmark.board_version),
                           default_color=BADGE_COLOUR)
    response = HttpResponse(badge.badge_svg_text, content_type="image/svg+xml")
    response["ETag"] = etag
    patch_cache_control(response, public=True, max_age=BADGE_MAX_AGE)
    return response
