"""What every app's admin shares."""

from django.contrib import admin
from django.utils.html import format_html

LIST_NAME_CHARS = 40  # a change list's cell of a name (up to 200 characters) is cut to this


def cut_name(text: str, limit: int = LIST_NAME_CHARS):
    """A name for a change list: cut short with an ellipsis, whole in its title (hover)."""
    shown = text if len(text) <= limit else text[:limit - 1] + "…"
    return format_html('<span class="cut-name" title="{}">{}</span>', text, shown)


def name_column(field: str, *, description: str, ordering: str | None = None):
    """A list_display callable showing `field` (dotted through relations) cut short."""
    def shown(self, obj):
        value = obj
        for part in field.split("."):
            value = getattr(value, part)
        return cut_name(str(value))

    return admin.display(description=description,
                         ordering=ordering or field.replace(".", "__"))(shown)


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
