"""Account pages (sign-up, API tokens) and the API's token endpoint.

Log-in, log-out and password reset are Django's own views (see account_urls.py).
"""

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from submissions.forms_accounts import SignUpForm, TokenCreateForm
from submissions.models import ApiToken


def signup(request):
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        return redirect(settings.LOGIN_REDIRECT_URL)
    return render(request, "registration/signup.html", {"form": form})


@login_required
def tokens(request):
    form = TokenCreateForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        # The key is rendered in this response and nowhere else: only its hash is stored.
        _, new_key = ApiToken.issue(user=request.user, name=form.cleaned_data["name"])
        form = TokenCreateForm()
    context = {"form": form, "new_key": new_key, "tokens": request.user.api_tokens.all()}
    return render(request, "accounts/tokens.html", context)


@login_required
@require_POST
def token_revoke(request, pk):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=timezone.now())
    return redirect("tokens")


class TokenObtainApi(APIView):
    """POST username and password (form or JSON); answers a new personal token named "api"."""

    authentication_classes = []
    permission_classes = [AllowAny]
    # A password check: limited like the log-in form (THROTTLE_LOGIN, per client address).
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "login"

    InputSerializer = AuthTokenSerializer  # checks the pair with authenticate()

    @extend_schema(operation_id="token_create", request=AuthTokenSerializer,
                   responses=OpenApiTypes.OBJECT)
    def post(self, request):
        serializer = self.InputSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        _, key = ApiToken.issue(user=serializer.validated_data["user"], name="api")
        return Response({"token": key})
