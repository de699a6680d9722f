from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

# allauth's answer past one of its own rate limits (it looks for `handler429` here).
handler429 = "config.throttle.account_rate_limited"

# No pattern serves MEDIA_ROOT: uploads and audio go out only through access-checked views
# (tests/config/test_media_not_served.py).
urlpatterns = [
    # The admin has no log-in form of its own: it sends visitors to the site's, so every
    # password check goes through one form, its counters and its email rules.
    path("admin/login/", secure_admin_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularRedocView.as_view(url_name="schema"), name="api-docs"),
    path("accounts/", include("allauth.urls")),
    path("", include("accounts.urls")),
    path("", include("submissions.urls")),
    path("", include("scoring.urls")),
    path("", include("leaderboard.urls")),
]
