"""A board's history: its public changelog (the audit events marked public for it) and the
snapshots the site and staff kept (leaderboard.boards.snapshots)."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.http import require_safe

from audit.forms import ChangelogForm
from audit.selectors import changelog_events, changelog_rows, changelog_subjects
from config import slots
from config.throttle import too_many_requests
from leaderboard.boards import dataset_files, datasets, snapshots
from leaderboard.boards import state as board_state
from leaderboard.pages.views import reach
from scoring import visibility
from scoring.kinds import get_kind
from submissions import selectors as submission_selectors

CHANGELOG_PAGE_SIZE = 50


@require_safe
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
        # A row links to its submission's explorer only for a viewer it answers.
        "reach": reach(visibility.disclosure(benchmark, request.user)),
        "rows": changelog_rows(page.object_list, withheld=submission_selectors.withheld(
            changelog_subjects(page.object_list)))})


@require_safe
def board_cite(request, slug):
    """The board's newest snapshot (the board links here, so that its cached pages need not
    know when the worker keeps one): a redirect, or 404 while none is kept."""
    benchmark = board_state.benchmark_or_404(slug)
    version = snapshots.snapshot_latest(benchmark)
    if version is None:
        raise Http404(f"no snapshot of {slug!r} is kept yet: the site keeps one about once a "
                      "day")
    response = redirect("leaderboard:board-snapshot", slug, version)
    patch_cache_control(response, no_cache=True)
    return response


@require_safe
def board_snapshot(request, slug, version):
    """The board as it was at a kept board version, without the rows of submissions withdrawn
    since (leaderboard.boards.snapshots); revalidated by an ETag that moves with them."""
    snapshot = snapshots.snapshot_get(slug, version)
    if snapshot is None:
        raise Http404(f"board version {version} of {slug!r} was not kept: snapshots are "
                      "taken by the site, about once a day, and by staff")
    # Its rows' overall figures: none below OVERALL on a hidden-rubric board; its items
    # file linked for a viewer it answers (FULL), so the validator holds the level.
    level = visibility.require(snapshot.benchmark, request.user, visibility.Disclosure.OVERALL)
    gone = snapshots.withdrawn(snapshot)
    current = board_state.benchmark_current(slug)
    changed = current is None or current.board_version != version
    etag = snapshots.snapshot_etag(snapshot, gone,
                                   f"page:{changed}:{request.user.is_authenticated}:"
                                   f"{visibility.cache_part(snapshot.benchmark, request.user)}")
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _revalidated(request, not_modified)
    kind = get_kind(snapshot.benchmark.kind)
    # The figures that decide the rank first, so that a phone shows them before it scrolls.
    keys = [*kind.ranking, *(k for k in kind.metric_keys if k not in kind.ranking)]
    metrics = [kind.metric(key) for key in keys]
    rows = [{**row, "figures": [
        (m.format(row.get(m.key)), None if row.get(f"{m.key}_lo") is None else
         (m.format(row[f"{m.key}_lo"]), m.format(row[f"{m.key}_hi"]))) for m in metrics]}
        for row in snapshots.shown_rows(snapshot, gone)]
    response = render(request, "leaderboard/snapshot.html", {
        "snapshot": snapshot, "benchmark": snapshot.benchmark, "kind": kind,
        "metrics": metrics, "rows": rows, "withdrawn": len(gone),
        "changed_since": changed, "reach": reach(level)})
    response["ETag"] = etag
    return _revalidated(request, response)


@require_safe
def board_snapshot_json(request, slug, version):
    """The snapshot as signed JSON (snapshots.signed_body), on the page's rule: overall
    figures, nothing below OVERALL on a hidden-rubric board."""
    snapshot = snapshots.snapshot_get(slug, version)
    if snapshot is None:
        raise Http404("no such snapshot")
    visibility.require(snapshot.benchmark, request.user, visibility.Disclosure.OVERALL)
    gone = snapshots.withdrawn(snapshot)
    etag = snapshots.snapshot_etag(snapshot, gone, "json")
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _revalidated(request, not_modified)
    response = JsonResponse(snapshots.signed_body(snapshot, gone),
                            json_dumps_params={"ensure_ascii": False, "indent": 1})
    response["ETag"] = etag
    return _revalidated(request, response)


@require_safe
def board_snapshot_items(request, slug, version):
    """The snapshot's items dataset (Parquet): its state's stored file, sent without the rows
    of submissions withdrawn since, within the downloads' concurrency caps."""
    if request.GET:
        return HttpResponseBadRequest(
            f"this file takes no parameters: {', '.join(sorted(request.GET))}",
            content_type="text/plain; charset=utf-8")
    snapshot = snapshots.snapshot_get(slug, version)
    if snapshot is None:
        raise Http404("no such snapshot")
    visibility.require(snapshot.benchmark, request.user)  # per-item results: FULL only
    gone = snapshots.withdrawn(snapshot)
    etag = snapshots.snapshot_etag(snapshot, gone, "items")
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _revalidated(request, not_modified)
    give_back = slots.slot(request, group="datasets",
                           per_client=dataset_files.DOWNLOADS_PER_CLIENT,
                           overall=dataset_files.DOWNLOADS, seconds=dataset_files.SLOT_SECONDS)
    if give_back is None:
        return too_many_requests(request, what="downloads at once", rate=None,
                                 retry_after=dataset_files.RETRY_SECONDS)
    try:
        items = snapshots.items_without(snapshot, gone)
    except BaseException:
        give_back()
        raise
    if items is None:
        give_back()
        raise Http404("this snapshot's items file is missing")
    response = FileResponse(slots.Returning(items, give_back),
                            content_type=datasets.FORMATS["parquet"], as_attachment=True,
                            filename=snapshot.items_file.rpartition("/")[2])
    response["ETag"] = etag
    return _revalidated(request, response)


def _revalidated(request, response):
    """A snapshot's answer changes when a submission of it is withdrawn: caches keep it as
    briefly as a board (BOARD_SHARED_MAX_AGE) and then revalidate by its ETag; a signed-in
    visitor's page, which names them, only their own browser."""
    if request.user.is_authenticated:
        patch_cache_control(response, private=True, max_age=0)
    else:
        patch_cache_control(response, public=True, max_age=settings.BOARD_SHARED_MAX_AGE)
    return response
