from django.urls import path

from config.signing import KEYS_PATH
from exports import views

app_name = "exports"

urlpatterns = [
    path("api/leaderboards/<slug:slug>/eee/<int:model_id>.json", views.RecordApi.as_view(),
         name="record"),
    path("api/leaderboards/<slug:slug>/eee.jsonl", views.RecordsApi.as_view(), name="records"),
    path("api/leaderboards/<slug:slug>/eval-results/<int:model_id>.yaml",
         views.EvalResultsApi.as_view(), name="eval-results"),
    path("api/leaderboards/<slug:slug>/eval-results.zip", views.EvalResultsZipApi.as_view(),
         name="eval-results-zip"),
    path(KEYS_PATH.lstrip("/"), views.SigningKeysApi.as_view(), name="signing-keys"),
]
