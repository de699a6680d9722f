"""ApiTokenAuthentication: `Authorization: Token KEY` against the stored hashes."""

from datetime import timedelta

import pytest
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from accounts.auth import ApiTokenAuthentication
from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


class WhoAmI(APIView):
    """A stand-in for the API's views: the project's default authentication and permission."""

    def get(self, request):
        return Response({"username": request.user.username})


def authenticate(key):
    request = APIRequestFactory().get("/api/", HTTP_AUTHORIZATION=f"Token {key}")
    return ApiTokenAuthentication().authenticate(request)


def test_a_token_authenticates_its_user_and_records_the_use(author):
    token, key = ApiToken.issue(user=author, name="ci")
    user, auth = authenticate(key)
    assert user == author and auth.pk == token.pk
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_use_is_recorded_at_most_once_a_minute(author):
    token, key = ApiToken.issue(user=author, name="ci")
    authenticate(key)
    token.refresh_from_db()
    first = token.last_used_at
    authenticate(key)
    token.refresh_from_db()
    assert token.last_used_at == first

    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    authenticate(key)
    token.refresh_from_db()
    assert token.last_used_at > first


def test_requests_without_a_token_header_are_left_to_other_schemes():
    request = APIRequestFactory().get("/api/")
    assert ApiTokenAuthentication().authenticate(request) is None


def test_an_unknown_key_is_refused(author):
    with pytest.raises(AuthenticationFailed, match="Invalid token"):
        authenticate("0" * 40)


def test_a_revoked_token_is_refused(author):
    token, key = ApiToken.issue(user=author, name="ci")
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=token.created_at)
    with pytest.raises(AuthenticationFailed, match="revoked"):
        authenticate(key)


def test_an_inactive_users_token_is_refused(author):
    _, key = ApiToken.issue(user=author, name="ci")
    author.is_active = False
    author.save()
    with pytest.raises(AuthenticationFailed, match="inactive"):
        authenticate(key)


def test_a_view_answers_a_valid_token_and_refuses_a_revoked_one_with_401(author):
    token, key = ApiToken.issue(user=author, name="ci")
    request = APIRequestFactory().get("/api/", HTTP_AUTHORIZATION=f"Token {key}")
    response = WhoAmI.as_view()(request)
    assert response.status_code == 200 and response.data == {"username": "author"}

    ApiToken.objects.filter(pk=token.pk).update(revoked_at=token.created_at)
    request = APIRequestFactory().get("/api/", HTTP_AUTHORIZATION=f"Token {key}")
    response = WhoAmI.as_view()(request)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
