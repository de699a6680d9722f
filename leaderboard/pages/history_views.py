"""A board's history: its public changelog (the audit events marked public for it) and the
snapshots visitors cited (leaderboard.boards.snapshots)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_safe

from audit.forms import ChangelogForm
from audit.selectors import changelog_events, changelog_rows, changelog_subjects
from leaderboard.boards import datasets, snapshots
from leaderboard.boards import state as board_state
from leaderboard.models import BoardSnapshot
from scoring.kinds import get_kind
from submissions import selectors as submission_selectors

SNAPSHOT_MAX_AGE = 365 * 86400  # a cited board never changes
CHANGELOG_PAGE_SIZE = 50


@require_GET
def changelog(request, slug):
    """A benchmark's public changelog: the audit events marked public for it (flags with their
    reasons, hidden and deleted submissions, rescoring, judge config changes); events about
    private submissions, quota overrides and authors' own choices are never marked public."""
    benchmark = board_state.benchmark_current(slug)
    if benchmark is None:
        raise Http404("no such benchmark")
    form = ChangelogForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/changelog.html",
                      {"benchmark": benchmark, "form": form, "rows": []}, status=400)
    page = Paginator(changelog_events(slug), CHANGELOG_PAGE_SIZE) \
        .get_page(form.cleaned_data["page"] or 1)
    return render(request, "audit/changelog.html", {
        "benchmark": benchmark, "form": form, "page": page,
        "rows": changelog_rows(page.object_list, withheld=submission_selectors.withheld(
            changelog_subjects(page.object_list)))})


@require_safe
def board_snapshot(request, slug, version):
    """The board as it was at a board version a visitor cited: immutable, so cached for good
    (leaderboard.boards.snapshots)."""
    snapshot = snapshots.snapshot_get(slug, version)
    if snapshot is None:
        raise Http404(f"board version {version} of {slug!r} was not kept: a version is kept "
                      "once cited while it is the board's current one")
    kind = get_kind(snapshot.benchmark.kind)
    # The figures that decide the rank first, so that a phone shows them before it scrolls.
    keys = [*kind.ranking, *(k for k in kind.metric_keys if k not in kind.ranking)]
    metrics = [kind.metric(key) for key in keys]
    rows = [{**row, "figures": [
        (m.format(row.get(m.key)), None if row.get(f"{m.key}_lo") is None else
         (m.format(row[f"{m.key}_lo"]), m.format(row[f"{m.key}_hi"]))) for m in metrics]}
        for row in snapshot.rows]
    current = board_state.benchmark_current(slug)
    response = render(request, "leaderboard/snapshot.html", {
        "snapshot": snapshot, "benchmark": snapshot.benchmark, "kind": kind,
        "metrics": metrics, "rows": rows,
        "changed_since": current is None or current.board_version != version})
    patch_cache_control(response, public=True, max_age=SNAPSHOT_MAX_AGE, immutable=True)
    return response


@require_safe
def board_snapshot_items(request, slug, version):
    """The snapshot's items dataset, as it was (Parquet)."""
    snapshot = BoardSnapshot.objects.filter(benchmark__slug=slug, board_version=version) \
        .order_by("-benchmark__version").first()
    if snapshot is None:
        raise Http404("no such snapshot")
    response = HttpResponse(bytes(snapshot.items), content_type=datasets.FORMATS["parquet"])
    response["Content-Disposition"] = (f'attachment; filename="{slug}-v'
                                       f'{snapshot.benchmark.version}-board{version}'
                                       '-items.parquet"')
    patch_cache_control(response, public=True, max_age=SNAPSHOT_MAX_AGE, immutable=True)
    return response
