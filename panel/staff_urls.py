"""Staff pages that change the panel's own models: its raters. Under /staff/ (config.urls)."""

from django.urls import path

from panel import views

urlpatterns = [
    path("panel/raters/", views.staff_raters, name="panel-raters"),
    path("panel/raters/<int:user_id>/remove/", views.staff_rater_remove,
         name="panel-rater-remove"),
]
