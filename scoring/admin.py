from django.contrib import admin

from scoring.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: it is append-only (the database refuses changes too)."""

    list_display = ("created_at", "actor_name", "action", "benchmark_slug", "object_repr",
                    "public")
    list_filter = ("action", "public", "benchmark_slug")
    search_fields = ("actor_name", "object_repr", "object_id", "reason")
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
