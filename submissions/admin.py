from django.contrib import admin
from django.db import models

from config.admin import ReadOnlyAdmin, name_column
from scoring.admin import BoardAdmin
from submissions.models import DeletedAttempt, ModelEntry, QuotaOverride, Submission
from submissions.selectors import boards_showing


@admin.register(ModelEntry)
class ModelEntryAdmin(BoardAdmin):
    list_display = ("shown_name", "owner", "shown_organisation", "parameters", "licence",
                    "open_weights", "created_at")
    list_filter = ("open_weights",)
    search_fields = ("name", "organisation", "owner__username")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    shown_name = name_column("name", description="name")
    shown_organisation = name_column("organisation", description="organisation")

    def boards(self, model):
        return boards_showing(model=model)


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    """Its state is the pipeline's, and visibility, moderation and deletion go through the
    staff pages, which record a reason in the audit log."""

    list_display = ("id", "model_name", "owner", "benchmark", "state", "public", "hidden",
                    "representative", "coverage", "created_at")
    list_filter = ("status", "public", "hidden", "representative")
    search_fields = ("=id", "model__name", "owner__username", "benchmark__slug")
    list_select_related = ("model", "owner", "benchmark", "current_run")
    date_hierarchy = "created_at"
    model_name = name_column("model.name", description="model")

    @admin.display(description="status")
    def state(self, submission):
        """As every page says it: its run's state once queued (a finished run's submission
        is finished, though its own column keeps "queued")."""
        return submission.state


@admin.register(QuotaOverride)
class QuotaOverrideAdmin(ReadOnlyAdmin):
    """Set on the staff quota page, which audits each change."""

    list_display = ("user", "per_day", "in_flight", "set_by", "updated_at")
    search_fields = ("user__username", "reason")
    list_select_related = ("user", "set_by")


@admin.register(DeletedAttempt)
class DeletedAttemptAdmin(ReadOnlyAdmin):
    """Written when staff delete a scored submission: its author's attempt count keeps it."""

    list_display = ("submission_id", "owner", "benchmark", "submitted_at", "deleted_at")
    search_fields = ("=submission_id", "owner__username", "benchmark__slug")
    list_select_related = ("owner", "benchmark")
