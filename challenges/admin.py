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
    model = Organizer
    fk_name = "challenge"
    extra = 0
    raw_id_fields = ["user", "granted_by"]


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
