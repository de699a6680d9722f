from django.contrib.auth import views as auth_views
from django.urls import path

from config.throttle import limit_posts
from submissions import accounts

# Log-in attempts count per client address and per username; reset requests (each sends an
# email) per client address.
login_view = limit_posts(group="login", rate_setting="THROTTLE_LOGIN",
                         keys=("ip", "post:username"), what="log-in attempts")(
    auth_views.LoginView.as_view())
password_reset_view = limit_posts(group="password-reset", rate_setting="THROTTLE_LOGIN",
                                  keys=("ip",), what="password reset requests")(
    auth_views.PasswordResetView.as_view())

urlpatterns = [
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/login/", login_view, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password-reset/", password_reset_view, name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(),
         name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    path("accounts/tokens/", accounts.tokens, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", accounts.token_revoke, name="token_revoke"),
    path("api/token/", accounts.TokenObtainApi.as_view(), name="api_token"),
]
