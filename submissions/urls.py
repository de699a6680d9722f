from django.urls import path

from submissions import api, views

app_name = "submissions"

urlpatterns = [
    path("submissions/", views.submission_list, name="list"),
    path("submit/", views.upload, name="upload"),
    path("submissions/<int:pk>/", views.submission_detail, name="detail"),
    path("submissions/<int:pk>/progress/", views.submission_progress, name="progress"),
    path("submissions/<int:pk>/files/<str:name>", views.submission_file, name="file"),
    path("submissions/<int:pk>/cancel/", views.submission_cancel_view, name="cancel"),
    path("api/submissions/", api.SubmissionListCreateApi.as_view(), name="api-list"),
    path("api/submissions/<int:pk>/", api.SubmissionDetailApi.as_view(), name="api-detail"),
    path("api/submissions/<int:pk>/files/<str:name>", api.SubmissionFileApi.as_view(),
         name="api-file"),
    path("api/submissions/<int:pk>/cancel/", api.SubmissionCancelApi.as_view(),
         name="api-cancel"),
]
