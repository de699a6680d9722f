"""The audit log: one append-only record per staff action."""

from __future__ import annotations

from scoring.boards import board_changed
from scoring.models import AuditEvent


def audit_record(*, actor, action: str, obj, before: dict | None = None,
                 after: dict | None = None, reason: str = "", benchmark_slug: str = "",
                 public: bool = False) -> AuditEvent:
    """Record a staff action on `obj` (a model instance). Call it inside the transaction that
    makes the change, so the record and the change land together or not at all. An action on
    a benchmark changes what its board shows (scoring.boards)."""
    board_changed(slug=benchmark_slug)
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=getattr(actor, "username", "") or "system",
        action=action, benchmark_slug=benchmark_slug,
        object_type=obj._meta.label_lower, object_id=str(obj.pk or ""),
        object_repr=str(obj)[:300], before=before or {}, after=after or {}, reason=reason,
        public=public,
    )


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


def changelog(benchmark_slug: str):
    """A benchmark's public changelog: the events marked public, newest first. Events about
    private submissions are never marked public (see each service that records them)."""
    return (AuditEvent.objects.filter(benchmark_slug=benchmark_slug, public=True)
            .order_by("-created_at", "-id"))
