"""allauth's hooks: the client's address and the log-in counters come from config.throttle;
emails name the site from SITE_NAME and SITE_URL; a password changed or reset revokes the
account's API tokens; an address confirmed by one account is released by every other that
claimed it unconfirmed; a log-in provider without keys is not there."""

from typing import NamedTuple
from urllib.parse import urlsplit

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.account.utils import filter_users_by_email
from allauth.core import ratelimit
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialApp
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import Http404

from accounts import login_guard
from accounts.forms import address_taken
from accounts.password_changes import revoked_by_last_save
from config.throttle import client_ip, login_attempt, too_many_requests


def account_name(credentials: dict) -> str:
    """The username a log-in attempt is for: an attempt by email counts on the same counter
    as one by username when the email belongs to one account. (allauth passes an email both
    as "email" and as "username", in case a username looks like one.)"""
    email = credentials.get("email")
    if not email:
        return credentials.get("username", "")
    users = filter_users_by_email(email, is_active=True, prefer_verified=True)
    return users[0].get_username() if len(users) == 1 else email


class Site(NamedTuple):
    """What allauth's email templates read as `current_site`."""

    domain: str
    name: str


def current_site() -> Site:
    """The site as SITE_URL and SITE_NAME give it. django.contrib.sites is not installed, so
    allauth would otherwise take the Host of whatever request sent the email."""
    return Site(domain=urlsplit(settings.SITE_URL).netloc, name=settings.SITE_NAME)


def email_release(email_address: EmailAddress) -> None:
    """Once an address is confirmed, other accounts' unconfirmed claims to it go: one who
    added someone else's address cannot keep its owner from signing up or confirming it."""
    claims = EmailAddress.objects.filter(email__iexact=email_address.email, verified=False) \
        .exclude(user_id=email_address.user_id)
    users = list(claims.values_list("user_id", flat=True))
    claims.delete()
    get_user_model().objects.filter(pk__in=users, email__iexact=email_address.email) \
        .update(email="")


class AccountAdapter(DefaultAccountAdapter):
    def format_email_subject(self, subject: str) -> str:
        return f"[{settings.SITE_NAME}] {subject}"

    def send_mail(self, template_prefix: str, email: str, context: dict) -> None:
        super().send_mail(template_prefix, email, {"current_site": current_site(), **context})

    def get_client_ip(self, request):
        return client_ip(request)

    def save_user(self, request, user, form, commit=True):
        """A sign-up's confirmation link goes out even when another account's unconfirmed
        claim to the address spent allauth's per-address cooldown ("confirm_email")."""
        user = super().save_user(request, user, form, commit=commit)
        if user.email:
            ratelimit.clear(request, action="confirm_email", key=user.email.lower())
        return user

    def send_confirmation_mail(self, request, emailconfirmation, signup):
        """An address already another account's (accounts.forms.address_taken) gets allauth's
        "an account already exists" e-mail, not a link that would confirm it twice."""
        address = emailconfirmation.email_address
        if address_taken(address.email, but=address.user):
            self.send_account_already_exists_mail(address.email)
            return
        super().send_confirmation_mail(request, emailconfirmation, signup)

    def confirm_email(self, request, email_address):
        confirmed = super().confirm_email(request, email_address)
        if confirmed:
            email_release(email_address)
        return confirmed

    def set_password(self, user, password):
        """A password change or reset revokes the account's API tokens as any new password
        does (accounts.password_changes); here the author is told which, beside the email
        allauth sends (ACCOUNT_EMAIL_NOTIFICATIONS)."""
        super().set_password(user, password)
        revoked = revoked_by_last_save(user)
        if revoked and self.request is not None:
            messages.warning(self.request, f"Your password changed, so your API tokens were "
                             f"revoked: {', '.join(revoked)}. Make new ones on the API "
                             "tokens page.")

    def pre_authenticate(self, request, **credentials):
        """Count the attempt on the log-in counters that `POST /api/token/` shares, in place of
        allauth's own (ACCOUNT_RATE_LIMITS "login_failed" is off); past a limit the answer is
        the 429 page with Retry-After, and the password is not checked. Past the account's
        ceiling the owner goes on from where they are known (accounts.login_guard)."""
        account = account_name(credentials)
        limited = login_attempt(request, account)
        if limited and limited.account_wide:
            if not login_guard.known(request, account):
                raise ImmediateHttpResponse(login_guard.paused(request, account, limited))
        elif limited:
            raise ImmediateHttpResponse(too_many_requests(
                request, what="log-in attempts", rate=limited.rate,
                retry_after=limited.retry_after))


    def post_login(self, request, user, **kwargs):
        """This address and this browser are now known to be the account's owner's."""
        response = super().post_login(request, user, **kwargs)
        login_guard.remember(request, response, user.get_username())
        return response


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def get_provider(self, request, provider, client_id=None):
        """GitHub's and Hugging Face's pages exist only once their keys are set
        (SOCIALACCOUNT_PROVIDERS): before that they answer 404, not a server error."""
        try:
            return super().get_provider(request, provider, client_id=client_id)
        except SocialApp.DoesNotExist:
            raise Http404(f"log-in through {provider} is not set up here") from None
