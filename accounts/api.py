from drf_spectacular.utils import extend_schema
from rest_framework import serializers, throttling
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import login_guard
from accounts.models import ApiToken
from config.serializers import ErrorsSerializer
from config.throttle import AnonThrottle, login_attempt


class LoginThrottle(throttling.BaseThrottle):
    """The API's password check on the log-in form's counters (config.throttle); past the
    account's ceiling, only from where its owner is known (accounts.login_guard)."""

    def allow_request(self, request, view):
        account = str(request.data.get("username", ""))
        self.limited = login_attempt(request, account)
        if self.limited and self.limited.account_wide:
            if login_guard.known(request, account):
                self.limited = None
            else:
                login_guard.send_link(request, account)
                request.login_paused = True
        return self.limited is None

    def wait(self):
        return self.limited.retry_after


class LoginPaused(Throttled):
    default_detail = login_guard.PAUSED_TEXT


class TokenObtainApi(APIView):
    """POST username and password (form or JSON); answers a new personal token named "api"."""

    authentication_classes = []
    permission_classes = [AllowAny]
    # A password check: it counts on the log-in form's counters (config.throttle).
    throttle_classes = [AnonThrottle, LoginThrottle]

    InputSerializer = AuthTokenSerializer  # checks the pair with authenticate()

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField(help_text="send it as `Authorization: Token KEY`; it "
                                      "is shown only this once")

    def throttled(self, request, wait):
        raise (LoginPaused if getattr(request, "login_paused", False) else Throttled)(wait)

    @extend_schema(operation_id="token_create", request=AuthTokenSerializer,
                   responses={200: OutputSerializer, 400: ErrorsSerializer,
                              429: ErrorsSerializer})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        login_guard.remember_address(request, user.get_username())
        _, key = ApiToken.issue(user=user, name="api")
        return Response(self.OutputSerializer({"token": key}).data)
