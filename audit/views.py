"""The staff audit page. A benchmark's public changelog, which shows the events marked public
(audit.selectors.changelog_events), is a page of its board (leaderboard.pages.views.changelog)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from django.views.decorators.http import require_safe

from audit.forms import AuditForm
from audit.selectors import audit_events, event_rows
from config.staff import staff_only

PAGE_SIZE = 50


@staff_only
@require_safe
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
