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
from config.admin import ReadOnlyAdmin
from scoring.admin import BoardAdmin


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


class ChallengeStateAdmin(ReadOnlyAdmin):
    """Staff look here; a challenge, its phases, tracks, boards, teams, entries and
    verifications change on the organizer pages and through `manage.py challenge_create`,
    `finalists` and `reveal`, which audit each change and raise the version of every board it
    touches. An edit here would skip both: a phase's reveal or freeze set by hand would leave
    the pages kept for its boards as they were (and a reveal must go through its one door,
    challenges.reveal)."""


class TeamStateAdmin(BoardAdmin):
    """Teams, their members and their track entries, which no organizer page edits: staff may
    rename a team, mend a membership or remove one, and each change raises the version of
    the challenge's boards, which name teams. They are made on the site; what they belong to
    (challenge, team, user, track) is not moved here."""

    def has_add_permission(self, request):
        return False

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields if f.is_relation]

    def boards(self, obj):
        challenge = obj.challenge_id if hasattr(obj, "challenge_id") else obj.team.challenge_id
        return list(PhaseBoard.objects.filter(phase__challenge_id=challenge)
                    .values_list("benchmark_id", flat=True).distinct())


@admin.register(Challenge)
class ChallengeAdmin(ChallengeStateAdmin):
    list_display = ["slug", "title", "time_zone"]
    inlines = [OrganizerInline]


@admin.register(Phase)
class PhaseAdmin(ChallengeStateAdmin):
    list_display = ["challenge", "slug", "kind", "opens_at", "closes_at", "shown", "frozen_at",
                    "revealed_at"]
    list_select_related = ["challenge"]


for model in (Track, PhaseBoard, Entry, Verification):
    admin.site.register(model, ChallengeStateAdmin)
for model in (Team, Membership, TrackEntry):
    admin.site.register(model, TeamStateAdmin)
