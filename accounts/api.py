from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.throttle import AnonThrottle, LoginThrottle
from submissions.models import ApiToken


class TokenObtainApi(APIView):
    """POST username and password (form or JSON); answers a new personal token named "api"."""

    authentication_classes = []
    permission_classes = [AllowAny]
    # A password check: it counts on the log-in form's counters (config.throttle).
    throttle_classes = [AnonThrottle, LoginThrottle]

    InputSerializer = AuthTokenSerializer  # checks the pair with authenticate()

    @extend_schema(operation_id="token_create", request=AuthTokenSerializer,
                   responses=OpenApiTypes.OBJECT)
    def post(self, request):
        serializer = self.InputSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        _, key = ApiToken.issue(user=serializer.validated_data["user"], name="api")
        return Response({"token": key})
