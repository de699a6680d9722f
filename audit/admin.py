from django.contrib import admin

from audit.models import AuditEvent
from config.admin import ReadOnlyAdmin, name_column


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """The audit log, read-only: it is append-only (the database refuses changes too)."""

    list_display = ("created_at", "actor_name", "action", "benchmark_slug", "object_shown",
                    "public")
    list_filter = ("action", "public", "benchmark_slug")
    search_fields = ("actor_name", "object_repr", "object_id", "reason")
    date_hierarchy = "created_at"
    object_shown = name_column("object_repr", description="object")
