from django.urls import path

from leaderboard import api, views

app_name = "leaderboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.board, name="board"),
    path("api/leaderboards/<slug:slug>/", api.LeaderboardApi.as_view(), name="api-board"),
]
