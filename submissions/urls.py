from django.urls import path

from submissions import api, moderation_views, staff_api, views

app_name = "submissions"

urlpatterns = [
    path("submissions/", views.submission_list, name="list"),
    path("submit/", views.upload, name="upload"),
    path("m/<int:model_id>/family/", views.model_family_view, name="model-family"),
    path("review/<str:token>/", views.review_link, name="review"),
    path("submissions/<int:pk>/files/<str:name>", views.submission_file, name="file"),
    path("submissions/<int:pk>/cancel/", views.submission_cancel_view, name="cancel"),
    path("submissions/<int:pk>/visibility/", moderation_views.submission_visibility,
         name="visibility"),
    path("submissions/<int:pk>/representative/", moderation_views.submission_representative,
         name="representative"),
    path("api/submissions/", api.SubmissionListCreateApi.as_view(), name="api-list"),
    path("api/submissions/<int:pk>/", api.SubmissionDetailApi.as_view(), name="api-detail"),
    path("api/submissions/<int:pk>/signals/", api.SubmissionSignalsApi.as_view(),
         name="api-signals"),
    path("api/submissions/<int:pk>/files/<str:name>", api.SubmissionFileApi.as_view(),
         name="api-file"),
    path("api/submissions/<int:pk>/cancel/", api.SubmissionCancelApi.as_view(),
         name="api-cancel"),
    # The staff's API (submissions.staff_api): 403 for anyone but staff.
    path("api/submissions/<int:pk>/rescore/", staff_api.SubmissionRescoreApi.as_view(),
         name="api-rescore"),
    path("api/submissions/<int:pk>/hide/", staff_api.SubmissionHideApi.as_view(),
         name="api-hide"),
    path("api/submissions/<int:pk>/flag/", staff_api.SubmissionFlagApi.as_view(),
         name="api-flag"),
    path("api/submissions/<int:pk>/retry/", staff_api.SubmissionRetryApi.as_view(),
         name="api-retry"),
    path("api/submissions/<int:pk>/delete/", staff_api.SubmissionDeleteApi.as_view(),
         name="api-delete"),
    path("api/quotas/", staff_api.QuotaApi.as_view(), name="api-quotas"),
]
