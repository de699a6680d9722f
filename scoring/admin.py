from django.contrib import admin

from config.admin import ReadOnlyAdmin
from scoring.boards import board_changed
from scoring.models import (
    Answer,
    Benchmark,
    Criterion,
    Item,
    ItemResult,
    JudgeConfig,
    RunBatch,
    ScoringRun,
    SliceResult,
)


class BoardAdmin(admin.ModelAdmin):
    """The admin of something boards show (a model's details, a benchmark's title, reported
    results): a change or a deletion made here raises the version of every board it touches,
    before and after (scoring.boards.board_changed), as the site's own workflows do, so that
    nothing kept for a board's state shows it as it was. `boards(obj)` names those boards'
    benchmark ids."""

    def boards(self, obj) -> list[int]:
        return []

    def save_model(self, request, obj, form, change):
        before = self.boards(type(obj)._default_manager.get(pk=obj.pk)) if change else []
        super().save_model(request, obj, form, change)  # inlines, saved next, commit with it
        board_changed(*{*before, *self.boards(obj)})

    def delete_model(self, request, obj):
        touched = self.boards(obj)
        super().delete_model(request, obj)
        board_changed(*touched)

    def delete_queryset(self, request, queryset):
        touched = {pk for obj in queryset for pk in self.boards(obj)}
        super().delete_queryset(request, queryset)
        board_changed(*touched)


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    """New configs and changes to one go through the staff pages, which keep the verdict
    fields fixed once a run has used them and audit each change; here only notes change."""

    list_display = ("name", "judge_model", "rounds", "seed", "max_attempts", "created_at")
    search_fields = ("name", "judge_model")
    readonly_fields = ("name", "judge_model", "base_urls", "prompt_sha256", "rounds", "sampling",
                       "seed", "max_attempts", "created_by", "created_at")

    def has_add_permission(self, request):
        return False


@admin.register(Benchmark)
class BenchmarkAdmin(BoardAdmin):
    """A version is what its imported file says (its sha256), and its judge config changes
    through the audited staff page: only the title is edited here."""

    list_display = ("slug", "version", "kind", "title", "n_items", "n_criteria", "synthetic",
                    "judge_config", "imported_at")
    list_filter = ("kind", "synthetic")
    search_fields = ("slug", "title")
    list_select_related = ("judge_config",)
    # Hidden rubrics are the import's and open only through the reveal (challenges.reveal);
    # the board's version moves only with what the board shows (scoring.boards).
    readonly_fields = ("slug", "kind", "version", "sha256", "source_name", "audio_root",
                       "synthetic", "n_items", "n_criteria", "imported_at", "judge_config",
                       "rubrics_hidden", "board_version", "board_changed_at")

    def has_add_permission(self, request):
        return False  # `manage.py import_mmae` / `import_airbench`

    def boards(self, benchmark):
        return [benchmark.pk]


@admin.register(Item)
class ItemAdmin(ReadOnlyAdmin):
    """Imported with its benchmark version: a change would part it from the file's sha256."""

    list_display = ("key", "benchmark", "position")
    list_filter = ("benchmark__kind",)
    search_fields = ("key", "benchmark__slug")
    list_select_related = ("benchmark",)


@admin.register(Criterion)
class CriterionAdmin(ReadOnlyAdmin):
    """Imported with its item; answers are cached under it, so it never changes in place."""

    list_display = ("__str__", "category", "item")
    search_fields = ("item__key", "category", "question")
    list_select_related = ("item",)


@admin.register(ScoringRun)
class ScoringRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "benchmark", "purpose", "label", "status", "judge_config",
                    "simulated", "total_queries", "created_at")
    list_filter = ("status", "purpose", "simulated")
    search_fields = ("=id", "label", "benchmark__slug", "judge_config__name")
    list_select_related = ("benchmark", "judge_config")
    date_hierarchy = "created_at"
    # A full-size run's outputs and digests are thousands of entries each.
    exclude = ("outputs", "digests")


class RunRowsAdmin(ReadOnlyAdmin):
    """Rows a run produces, found by the run's id."""

    search_fields = ("=run__id",)
    list_select_related = ("run", "run__benchmark")


@admin.register(RunBatch)
class RunBatchAdmin(RunRowsAdmin):
    list_display = ("__str__", "run", "status", "claims", "claimed_at", "heartbeat_at")
    list_filter = ("status",)


@admin.register(Answer)
class AnswerAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "round", "choice", "score", "cached", "endpoint", "attempts",
                    "latency_ms", "answered_at")
    list_filter = ("cached", "round")
    search_fields = ("=run__id", "endpoint")
    # Millions of rows: the changelist does not count them all.
    show_full_result_count = False


@admin.register(ItemResult)
class ItemResultAdmin(RunRowsAdmin):
    list_display = ("__str__", "run", "passed", "score", "missing")
    list_filter = ("missing",)
    search_fields = ("=run__id", "item__key")
    show_full_result_count = False


@admin.register(SliceResult)
class SliceResultAdmin(RunRowsAdmin):
    list_display = ("__str__", "run", "n", "values")
    list_filter = ("dimension",)
    search_fields = ("=run__id", "bucket")
