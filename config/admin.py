"""What every app's admin shares."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """State the platform owns (scoring runs and what they produce, the audit log): staff may
    look, never add, change or delete, so that the workflows writing it keep their invariants
    and their audit records."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
