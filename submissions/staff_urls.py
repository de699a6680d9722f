"""Staff pages that change submissions: moderation, quotas, rescoring and the judge config a
board is scored under (it moves submissions to their runs under it). Under /staff/
(config.urls)."""

from django.urls import path

from submissions import moderation_views, rescore_views

urlpatterns = [
    path("submissions/", moderation_views.staff_submissions, name="submissions"),
    path("submissions/<int:pk>/", moderation_views.staff_submission, name="submission"),
    path("submissions/<int:pk>/hide/", moderation_views.staff_hide, name="hide"),
    path("submissions/<int:pk>/flag/", moderation_views.staff_flag, name="flag"),
    path("submissions/<int:pk>/delete/", moderation_views.staff_delete, name="delete"),
    path("submissions/<int:pk>/retry/", moderation_views.staff_retry, name="retry"),
    path("quotas/", moderation_views.staff_quotas, name="quotas"),
    path("rescore/", rescore_views.rescore, name="rescore"),
    path("rescore/current-config/", rescore_views.current_config, name="current-config"),
]
