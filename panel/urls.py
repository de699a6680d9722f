"""The panel's pages and API, under the addresses they had as part of the leaderboard (included
by config.urls), in their own namespace: `panel:judge`, `panel:api-panel-next`, ..."""

from django.urls import path

from panel import api, views

app_name = "panel"

urlpatterns = [
    path("b/<slug:slug>/panel/", views.panel, name="panel"),
    path("b/<slug:slug>/judge/", views.judge, name="judge"),
    path("panel/audio/<str:token>/", views.task_audio, name="task-audio"),
    path("api/panel/<slug:slug>/next/", api.PanelNextApi.as_view(), name="api-panel-next"),
    path("api/panel/<slug:slug>/tasks/<int:task>/", api.PanelAnswerApi.as_view(),
         name="api-panel-answer"),
    path("api/panel/<slug:slug>/items/<str:key>/", api.ItemPanelApi.as_view(),
         name="api-panel-item"),
    path("api/leaderboards/<slug:slug>/judge/", api.JudgeCardApi.as_view(),
         name="api-judge-card"),
    path("b/<slug:slug>/judge/models/<int:model_id>/", views.corrected_row,
         name="corrected"),
    path("api/leaderboards/<slug:slug>/judge/models/<int:model_id>/",
         api.CorrectedApi.as_view(), name="api-corrected"),
]
