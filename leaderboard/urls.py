from django.urls import path

from leaderboard.api import views as api
from leaderboard.pages import (
    badges,
    explorer,
    history_views,
    item_views,
    media_views,
    picker_views,
    views,
)

app_name = "leaderboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.board, name="board"),
    path("b/<slug:slug>/cite/", history_views.board_cite, name="board-cite"),
    path("b/<slug:slug>/badge/<int:model_id>.svg", badges.model_badge, name="model-badge"),
    path("b/<slug:slug>/v/<int:version>/", history_views.board_snapshot, name="board-snapshot"),
    path("b/<slug:slug>/v/<int:version>/snapshot.json", history_views.board_snapshot_json,
         name="board-snapshot-json"),
    path("b/<slug:slug>/v/<int:version>/items.parquet", history_views.board_snapshot_items,
         name="board-snapshot-items"),
    path("b/<slug:slug>/changelog/", history_views.changelog, name="changelog"),
    path("submissions/<int:pk>/", views.submission_status, name="submission-status"),
    path("submissions/<int:pk>/progress/", views.submission_progress,
         name="submission-progress"),
    path("api/leaderboards/<slug:slug>/", api.LeaderboardApi.as_view(), name="api-board"),
    path("api/leaderboards/<slug:slug>/items/", api.LeaderboardItemsApi.as_view(),
         name="api-board-items"),
    path("api/benchmarks/", api.BenchmarkListApi.as_view(), name="api-benchmarks"),
    path("api/models/<int:model_id>/", api.ModelApi.as_view(), name="api-model"),
    path("api/submissions/<int:pk>/slices/", api.SubmissionSlicesApi.as_view(),
         name="api-submission-slices"),
    path("s/<int:pk>/", explorer.submission_page, name="submission"),
    path("s/<int:pk>/samples/", explorer.submission_samples, name="submission-samples"),
    path("s/<int:pk>/samples/<str:item_key>/rubrics/", explorer.submission_rubrics,
         name="submission-rubrics"),
    path("s/<int:pk>/audio/<str:item_key>/<str:which>", explorer.submission_audio,
         name="submission-audio"),
    path("s/<int:pk>/spectrogram/<str:item_key>/<str:which>.png",
         media_views.submission_spectrogram, name="submission-spectrogram"),
    path("b/<slug:slug>/pivot/", views.pivot, name="pivot"),
    path("b/<slug:slug>/compare/", views.compare, name="compare"),
    path("b/<slug:slug>/compare/items/", item_views.compare_items, name="compare-items"),
    path("b/<slug:slug>/compare/models/", picker_views.compare_models, name="compare-models"),
    path("b/<slug:slug>/i/<str:key>/", item_views.item, name="item"),
    path("b/<slug:slug>/scoring/", views.scoring, name="scoring"),
    path("m/<int:model_id>/", views.model, name="model"),
    path("static-plotly-<str:version>.js", views.plotly_js, name="plotly-js"),
]
