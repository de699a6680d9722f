"""Writing the audit log: one append-only record per staff action."""

from __future__ import annotations

from audit.models import AuditEvent


def audit_record(*, actor, action: str, obj, before: dict | None = None,
                 after: dict | None = None, reason: str = "", benchmark_slug: str = "",
                 public: bool = False) -> AuditEvent:
    """Record a staff action on `obj` (a model instance). Call it inside the transaction that
    makes the change, so the record and the change land together or not at all. It only
    writes the record: a caller whose action changes what a board shows raises the board's
    version itself (scoring.boards.board_changed)."""
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_name=getattr(actor, "username", "") or "system",
        action=action, benchmark_slug=benchmark_slug,
        object_type=obj._meta.label_lower, object_id=str(obj.pk or ""),
        object_repr=str(obj)[:300], before=before or {}, after=after or {}, reason=reason,
        public=public,
    )
