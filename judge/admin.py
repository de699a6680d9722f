from django.contrib import admin

from judge.models import Endpoint


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    """The probe writes health and load; taking an endpoint out (with a reason, audited) is the
    fleet page's, so nothing here is edited by hand."""

    list_display = ("base_url", "enabled", "healthy", "running", "waiting", "probe_latency_ms",
                    "last_probe_at")
    list_filter = ("enabled", "healthy")
    search_fields = ("base_url",)
    readonly_fields = ("base_url", "enabled", "enabled_changed_at", "disabled_reason",
                       "last_probe_at", "healthy", "probe_latency_ms", "probe_error", "running",
                       "waiting")

    def has_add_permission(self, request):
        return False
