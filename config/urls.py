from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config.api_schema import SchemaView

# allauth's answer past one of its own rate limits (it looks for `handler429` here).
handler429 = "config.throttle.account_rate_limited"

# No pattern serves MEDIA_ROOT: uploads and audio go out only through access-checked views
# (tests/config/test_media_not_served.py).
urlpatterns = [
    # The admin has no log-in form of its own: it sends visitors to the site's, so every
    # password check goes through one form, its counters and its email rules.
    path("admin/login/", secure_admin_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # Swagger UI in the site's layout; its set-up script is a separate response
    # (?script), so the page needs no inline script under the Content-Security-Policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema",
                                                          template_name="api/docs.html"),
         name="api-docs"),
    path("accounts/", include("allauth.urls")),
    path("", include("accounts.urls")),
    path("", include("submissions.urls")),
    # Every staff page and action, under one prefix and one namespace (`staff:`); each app
    # lists those that change its models, and each view answers 404 to anyone but staff
    # (config.staff.staff_only; tests/test_staff_pages.py).
    path("staff/", include(([
        path("", include("submissions.staff_urls")),
        path("", include("scoring.staff_urls")),
        path("", include("audit.staff_urls")),
        path("", include("panel.staff_urls")),
    ], "staff"))),
    path("", include("panel.urls")),
    path("", include("exports.urls")),
    path("c/", include("challenges.urls")),
    path("", include("leaderboard.urls")),
]
