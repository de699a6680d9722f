from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("submissions.account_urls")),
    path("", include("submissions.urls")),
    path("", include("leaderboard.urls")),
]
