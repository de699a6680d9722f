"""Staff pages that change the leaderboard's own models: the listening panel's raters. Under
/staff/ (config.urls)."""

from django.urls import path

from leaderboard.panel import views as panel_views

urlpatterns = [
    path("panel/raters/", panel_views.staff_raters, name="panel-raters"),
    path("panel/raters/<int:user_id>/remove/", panel_views.staff_rater_remove,
         name="panel-rater-remove"),
]
