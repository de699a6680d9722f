from django.urls import path

from accounts import api, login_guard, views

app_name = "accounts"

urlpatterns = [
    path("accounts/tokens/", views.tokens, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("accounts/login/approve/<str:token>/", login_guard.approve, name="login-approve"),
    path("api/token/", api.TokenObtainApi.as_view(), name="api-token"),
]
