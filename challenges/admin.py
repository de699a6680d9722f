from django.contrib import admin

from challenges.models import (
    Challenge,
    Entry,
    Membership,
    Organizer,
    Phase,
    PhaseBoard,
    Team,
    Track,
    TrackEntry,
    Verification,
)


class OrganizerInline(admin.TabularInline):
    """Read only: organizers are granted and removed on the challenge's organizer pages (or
    `manage.py organizer`), which audit each change."""

    model = Organizer
    fk_name = "challenge"
    extra = 0
    fields = readonly_fields = ["user", "granted_by", "granted_at"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "time_zone"]
    inlines = [OrganizerInline]


@admin.register(Phase)
class PhaseAdmin(admin.ModelAdmin):
    list_display = ["challenge", "slug", "kind", "opens_at", "closes_at", "shown", "frozen_at",
                    "revealed_at"]


for model in (Track, PhaseBoard, Team, Membership, TrackEntry, Entry, Verification):
    admin.site.register(model)
