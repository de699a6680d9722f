from django.urls import path

from accounts import api, views

app_name = "accounts"

urlpatterns = [
    path("accounts/tokens/", views.tokens, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("api/token/", api.TokenObtainApi.as_view(), name="api-token"),
]
