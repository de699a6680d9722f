"""Reading the audit log: the staff's view of every event, and a benchmark's public
changelog."""

from __future__ import annotations

import json

from audit.models import AuditEvent

Action = AuditEvent.Action


def audit_events(*, action: str = "", benchmark_slug: str = "", actor: str = "",
                 object_type: str = "", object_id: str = "", public: bool | None = None):
    """The audit log for staff, newest first, narrowed by whatever is given."""
    events = AuditEvent.objects.all()
    for field, value in (("action", action), ("benchmark_slug", benchmark_slug),
                         ("actor_name", actor), ("object_type", object_type),
                         ("object_id", object_id)):
        if value:
            events = events.filter(**{field: value})
    if public is not None:
        events = events.filter(public=public)
    return events.order_by("-created_at", "-id")


def event_rows(events) -> list[dict]:
    """Audit events as the staff tables show them, before and after as JSON."""
    return [{"event": e, "before": json.dumps(e.before, sort_keys=True, ensure_ascii=False),
             "after": json.dumps(e.after, sort_keys=True, ensure_ascii=False)}
            for e in events]


def changelog_events(benchmark_slug: str):
    """A benchmark's public changelog: the events marked public, newest first. Events about
    private submissions are never marked public (see each service that records them)."""
    return (AuditEvent.objects.filter(benchmark_slug=benchmark_slug, public=True)
            .order_by("-created_at", "-id"))


def _what(event: AuditEvent) -> str:
    after = event.after or {}
    if event.action == Action.FLAG:
        return "flagged" if after.get("flag_reason") else "flag removed"
    if event.action == Action.HIDE:
        return "hidden from the board" if after.get("hidden") else "shown on the board again"
    return {Action.DELETION: "deleted", Action.RESCORE: "rescored",
            Action.JUDGE_CONFIG: "judge config changed"}.get(event.action,
                                                              event.get_action_display())


SUBMISSION = "submissions.submission"


def changelog_subjects(events) -> set[int]:
    """The ids of the submissions the events are about."""
    return {int(e.object_id) for e in events
            if e.object_type == SUBMISSION and e.object_id.isdigit()}


def changelog_rows(events, *, withheld: frozenset[int] = frozenset()) -> list[dict]:
    """The changelog's rows: when, what happened, to what, and the reason given. A submission
    still on public pages is linked (flagged and rescored ones). A submission in `withheld`
    (hidden now: staff may have hidden it for its very name) is named by its number only."""
    rows = []
    for e in events:
        number = int(e.object_id) if e.object_type == SUBMISSION and e.object_id.isdigit() \
            else None
        hidden = number in withheld
        rows.append({
            "date": e.created_at, "action": e.action, "what": _what(e),
            "object": f"submission {number} (name withheld: hidden by staff)" if hidden
            else e.object_repr, "reason": e.reason,
            "submission": number if number is not None and not hidden
            and e.action in (Action.FLAG, Action.RESCORE) else None,
        })
    return rows
