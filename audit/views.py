"""The staff audit page and a benchmark's public changelog.

The changelog lists the audit events marked public for the benchmark (flags with their
reasons, hidden and deleted submissions, rescoring, judge config changes); events about
private submissions, quota overrides and authors' own choices are never marked public.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from audit.forms import AuditForm, ChangelogForm
from audit.selectors import audit_events, changelog_events, changelog_rows, event_rows
from config.staff import staff_only
from leaderboard import selectors

PAGE_SIZE = 50


@staff_only
@require_GET
def staff_audit(request):
    form = AuditForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/staff_audit.html", {"form": form, "page": None},
                      status=400)
    data = form.cleaned_data
    events = audit_events(action=data["action"], benchmark_slug=data["benchmark"],
                          actor=data["actor"].strip(), object_type=data["object_type"].strip(),
                          object_id=data["object_id"].strip(), public=data["public"])
    page = Paginator(events, PAGE_SIZE).get_page(data["page"] or 1)
    return render(request, "audit/staff_audit.html",
                  {"form": form, "page": page, "events": event_rows(page.object_list)})


@require_GET
def changelog(request, slug):
    benchmark = selectors.benchmark_current(slug)
    if benchmark is None:
        raise Http404("no such benchmark")
    form = ChangelogForm(request.GET)
    if not form.is_valid():
        return render(request, "audit/changelog.html",
                      {"benchmark": benchmark, "form": form, "rows": []}, status=400)
    page = Paginator(changelog_events(slug), PAGE_SIZE).get_page(form.cleaned_data["page"] or 1)
    return render(request, "audit/changelog.html", {
        "benchmark": benchmark, "form": form, "page": page,
        "rows": changelog_rows(page.object_list)})
