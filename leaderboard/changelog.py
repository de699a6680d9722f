"""A benchmark's public changelog: what staff changed on its board, when and why.

It lists the audit events marked public for the benchmark (flags with their reasons, hidden
and deleted submissions, rescoring, judge config changes); events about private submissions,
quota overrides and authors' own choices are never marked public.
"""

from __future__ import annotations

from django import forms
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard import selectors
from scoring.audit import changelog as changelog_events
from scoring.models import AuditEvent

PAGE_SIZE = 50
Action = AuditEvent.Action


class ChangelogForm(forms.Form):
    page = forms.IntegerField(required=False, min_value=1)


def _what(event: AuditEvent) -> str:
    after = event.after or {}
    if event.action == Action.FLAG:
        return "flagged" if after.get("flag_reason") else "flag removed"
    if event.action == Action.HIDE:
        return "hidden from the board" if after.get("hidden") else "shown on the board again"
    return {Action.DELETION: "deleted", Action.RESCORE: "rescored",
            Action.JUDGE_CONFIG: "judge config changed"}.get(event.action,
                                                              event.get_action_display())


def changelog_rows(events) -> list[dict]:
    """The changelog's rows: when, what happened, to what, and the reason given. A submission
    still on public pages is linked (flagged and rescored ones)."""
    return [{
        "date": e.created_at, "action": e.action, "what": _what(e), "object": e.object_repr,
        "reason": e.reason,
        "submission": int(e.object_id) if e.object_type == "submissions.submission"
        and e.action in (Action.FLAG, Action.RESCORE) and e.object_id.isdigit() else None,
    } for e in events]


@require_GET
def changelog(request, slug):
    benchmark = selectors.benchmark_current(slug)
    if benchmark is None:
        raise Http404("no such benchmark")
    form = ChangelogForm(request.GET)
    if not form.is_valid():
        return render(request, "leaderboard/changelog.html",
                      {"benchmark": benchmark, "form": form, "rows": []}, status=400)
    page = Paginator(changelog_events(slug), PAGE_SIZE).get_page(form.cleaned_data["page"] or 1)
    return render(request, "leaderboard/changelog.html", {
        "benchmark": benchmark, "form": form, "page": page,
        "rows": changelog_rows(page.object_list)})
