from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiToken
from config.serializers import ErrorsSerializer
from config.throttle import AnonThrottle, LoginThrottle


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

    @extend_schema(operation_id="token_create", request=AuthTokenSerializer,
                   responses={200: OutputSerializer, 400: ErrorsSerializer,
                              429: ErrorsSerializer})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        _, key = ApiToken.issue(user=serializer.validated_data["user"], name="api")
        return Response(self.OutputSerializer({"token": key}).data)
