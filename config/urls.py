from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.throttle import limit_posts

# No pattern serves MEDIA_ROOT: uploads and audio go out only through access-checked views
# (tests/config/test_media_not_served.py).
urlpatterns = [
    # The admin's log-in form counts against the same limit as the site's.
    path("admin/login/", limit_posts(group="login", rate_setting="THROTTLE_LOGIN",
                                     keys=("ip", "post:username"),
                                     what="log-in attempts")(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI in the site's layout; its set-up script is a separate response
    # (?script), so the page needs no inline script under the Content-Security-Policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema",
                                                          template_name="api/docs.html"),
         name="api-docs"),
    path("", include("submissions.account_urls")),
    path("", include("submissions.urls")),
    path("", include("scoring.urls")),
    path("", include("leaderboard.urls")),
]
