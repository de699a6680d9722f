"""The item pages: the items where two models differ (`/b/<slug>/compare/items/`) and one item
across every representative of a board (`/b/<slug>/i/<key>/`). Both are shared per board
state (leaderboard.pages.responses) like the compare page; bad parameters are a 400. A fresh page
of differing items renders every vote of 20 items twice over (about half a second at 2,000
samples): it counts against THROTTLE_RENDER, as the compare page does."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from leaderboard.boards import item_pages
from leaderboard.boards import state as board_state
from leaderboard.boards.explorer_selectors import slice_buckets
from leaderboard.boards.spectrogram_selectors import sides_annotate
from leaderboard.boards.state import benchmark_or_404
from leaderboard.pages import compare as comparison
from leaderboard.pages import responses
from leaderboard.pages.forms import CompareItemsForm, ItemPageForm, normalised
from leaderboard.pages.views import as_asked, form_errors, page_of
from scoring import visibility
from scoring.kinds import get_kind


def _parts(request, names: tuple[str, ...]) -> tuple:
    """The query as the key of a shared response: only the parameters the page reads, each
    as given (the form then validates them), the models in the order given."""
    return (",".join(request.GET.getlist("models")),
            *(f"{n}={request.GET.get(n, '')}" for n in names))


@require_safe
def compare_items(request, slug):
    """The items where two models' representatives differ, most different first, a page at
    a time, each with both outputs, figures and verdicts side by side."""
    benchmark = benchmark_or_404(slug)
    now = board_state.board_state(benchmark)
    return responses.shared(
        request, state=now.key, changed_at=benchmark.board_changed_at,
        parts=("compare-items", *_parts(request, ("dimension", "bucket", "by", "winner",
                                                  "page"))),
        render=lambda: _compare_items_page(request, benchmark, now), costly=True,
        boards=now.versions, benchmark=benchmark)


def _compare_items_page(request, benchmark, now: board_state.BoardState):
    visibility.require(benchmark, request.user)  # every item's verdicts: FULL only
    kind = get_kind(benchmark.kind)
    form = CompareItemsForm(request.GET, board=comparison.board_models(
                                benchmark, comparison.asked_ids(request.GET.getlist("models"))),
                            buckets=slice_buckets(benchmark), kind=kind)
    context = {"benchmark": benchmark, "kind": kind, "form": form, "errors": []}
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, "leaderboard/compare_items.html", context, status=400)
    data = form.cleaned_data
    a, b = form.submissions()
    slice_ = {name: data[name] for name in ("dimension", "bucket", "by", "winner")}
    # The order is read once per state and filter; every page of it is served from it.
    ids = board_state.kept(now, "compare-items", shared=True,
                           parts=(data["models"], *slice_.values()),
                           make=lambda: item_pages.differing(kind, a, b, **slice_))
    shown, paging = page_of(ids, data["page"], item_pages.PAGE_SIZE)
    normal = normalised(form, page=1)
    items = item_pages.pair_items(benchmark, a, b, shown)
    sides_annotate(benchmark, items)
    context.update(items=items, paging=paging,
                   query=normal, slice=slice_, models=item_pages.systems([a, b]),
                   compare_query=urlencode([("models", a.model_id), ("models", b.model_id)]),
                   slice_query=urlencode([(n, data[n]) for n in ("dimension", "bucket")
                                          if data[n]]),
                   dimension_label=kind.dimension_label(data["dimension"])
                   if data["dimension"] else "")
    return render(as_asked(request, normal), "leaderboard/compare_items.html", context)


@require_safe
def item(request, slug, key):
    """One item across every representative on the board, in board order, with the previous
    and next item of the slice it was reached from."""
    benchmark = benchmark_or_404(slug)
    now = board_state.board_state(benchmark)
    return responses.shared(
        request, state=now.key, changed_at=benchmark.board_changed_at,
        parts=("item", key, *_parts(request, ("dimension", "bucket", "page"))[1:]),
        render=lambda: _item_page(request, benchmark, key), boards=now.versions,
        benchmark=benchmark)


def _item_page(request, benchmark, key: str):
    visibility.require(benchmark, request.user)  # its rubrics and verdicts: FULL only
    kind = get_kind(benchmark.kind)
    form = ItemPageForm(request.GET, buckets=slice_buckets(benchmark), kind=kind)
    context = {"benchmark": benchmark, "kind": kind, "form": form, "errors": []}
    if not form.is_valid():
        context["errors"] = form_errors(form)
        return render(request, "leaderboard/item.html", context, status=400)
    data = form.cleaned_data
    shown, paging = item_pages.systems_page(benchmark, data["page"] or 1)
    found = item_pages.item_across(benchmark, key, shown)
    if found is None:
        raise Http404("no such item")
    sides_annotate(benchmark, [found])
    normal = normalised(form, page=1)
    slice_query = urlencode([(n, data[n]) for n in ("dimension", "bucket") if data[n]])
    before, after = item_pages.neighbours(benchmark, found["id"], dimension=data["dimension"],
                                          bucket=data["bucket"])
    context.update(item=found, paging=paging, query=normal, slice_query=slice_query,
                   before=before, after=after, dimension=data["dimension"],
                   dimension_label=kind.dimension_label(data["dimension"])
                   if data["dimension"] else "", bucket=data["bucket"],
                   panel_url=reverse("panel:api-panel-item", args=[benchmark.slug, key])
                   if kind.has_panel and found["sides"] else "")
    return render(as_asked(request, normal), "leaderboard/item.html", context)
