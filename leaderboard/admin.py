from django.contrib import admin

from config.admin import name_column
from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring.admin import BoardAdmin
from scoring.models import Benchmark


class ReferenceFigureInline(admin.TabularInline):
    model = ReferenceFigure
    fields = ("dimension", "bucket", "values")
    extra = 0


@admin.register(ReferenceResult)
class ReferenceResultAdmin(BoardAdmin):
    """A paper's published figures (`manage.py load_reference_results`), shown as reported."""

    list_display = ("model_name", "benchmark_slug", "scope", "n_samples", "source", "loaded_at")
    list_filter = ("benchmark_slug",)
    search_fields = ("model", "source", "note")
    inlines = [ReferenceFigureInline]
    model_name = name_column("model", description="model")

    def boards(self, result):
        return list(Benchmark.objects.filter(slug=result.benchmark_slug)
                    .values_list("id", flat=True))
