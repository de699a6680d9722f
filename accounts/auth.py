from datetime import timedelta

from allauth.account import app_settings
from allauth.account.app_settings import LoginMethod
from allauth.account.auth_backends import AuthenticationBackend
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from accounts.models import ApiToken
from config.throttle import bad_token, bad_token_limited

# Recording every use would write a row per API request; once a minute is precise enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token KEY` against ApiToken, which stores only a hash of each key."""

    keyword = "Token"
    model = ApiToken

    def authenticate(self, request):
        """Refused tokens count against the client's address (config.throttle.bad_token):
        past the limit the answer is 429, and no token is looked up."""
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            return None  # no token: the session, or an anonymous caller
        limited = bad_token_limited(request)
        if limited:
            raise Throttled(limited.retry_after)
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            limited = bad_token(request)
            if limited:
                raise Throttled(limited.retry_after) from None
            raise

    def authenticate_credentials(self, key):
        try:
            token = ApiToken.objects.select_related("user").get(key_hash=ApiToken.hash_key(key))
        except ApiToken.DoesNotExist:
            raise AuthenticationFailed("Invalid token.") from None
        if not token.active:
            raise AuthenticationFailed("Token revoked.")
        if not token.user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        record_use(token)
        return token.user, token


def record_use(token: ApiToken) -> None:
    """Set last_used_at unless it was set within the last minute (one conditional UPDATE)."""
    now = timezone.now()
    stale = Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    if ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now):
        token.last_used_at = now


class EmailConfirmedBackend(AuthenticationBackend):
    """allauth's log-in by username or email, where an email opens only the accounts that
    confirmed it (and one made without allauth, holding its address on the user row alone):
    an address someone added to their account without owning it is no way in. (Where
    ACCOUNT_EMAIL_VERIFICATION is "none" nothing is confirmed, and any holder may.)"""

    def _authenticate_by_email(self, email, password):
        if app_settings.EMAIL_VERIFICATION == app_settings.EmailVerificationMethod.NONE:
            return super()._authenticate_by_email(email, password)  # nothing is confirmed
        if not email or LoginMethod.EMAIL not in app_settings.LOGIN_METHODS:
            return None
        email = email.strip().lower()
        users = [address.user for address in EmailAddress.objects.filter(
            email__iexact=email, verified=True).select_related("user")]
        users += get_user_model().objects.filter(email__iexact=email) \
            .exclude(emailaddress__email__iexact=email)
        for user in users:
            if self._check_password(user, password):
                return user
        return None
