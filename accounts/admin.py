from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff may rename or revoke a token. Keys are issued only to their owner (the tokens
    page, `POST /api/token/`), and only their hash is stored, which is never edited."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user",)
    fields = ("user", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False
