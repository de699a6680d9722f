"""An account's log-in ceiling that never locks its owner out.

config.throttle.login_attempt counts each account's attempts from one client address
(THROTTLE_LOGIN) and the addresses that tried it (THROTTLE_LOGIN_ACCOUNT, each address once a
period, so one address at its own rate never reaches it). Past the ceiling a password is
checked only from where the owner is known: an address the account logged in from in the
last KNOWN_DAYS, a browser holding this site's signed `known_login` cookie for the account,
or an address the owner let in from an e-mailed link. From anywhere else the attempt is not
checked; the account's verified addresses get that link (at most once in MAIL_GAP_SECONDS),
and the page says so without saying whether the account exists.
"""

import hashlib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.cache import cache
from django.shortcuts import render
from django.urls import reverse

from config.throttle import Limited, client_network, rate_text

KNOWN_DAYS = 30
COOKIE = "known_login"
LINK_HOURS = 24
MAIL_GAP_SECONDS = 600
_SALT = "accounts.login_guard"


def _known_key(account: str, network: str) -> str:
    digest = hashlib.sha256(f"{account.strip().lower()} {network}".encode()).hexdigest()
    return f"login:known:{digest}"


def _cookie_accounts(request) -> list[str]:
    value = request.get_signed_cookie(COOKIE, default="", salt=_SALT,
                                      max_age=KNOWN_DAYS * 86400)
    return [name for name in value.split("\n") if name]


def known(request, account: str) -> bool:
    """Whether the owner of `account` is known to be here: by address or by browser."""
    account = account.strip().lower()
    return bool(cache.get(_known_key(account, client_network(request)))) \
        or account in _cookie_accounts(request)


def remember_address(request, account: str) -> None:
    cache.set(_known_key(account, client_network(request)), 1, KNOWN_DAYS * 86400)


def remember(request, response, account: str) -> None:
    """After a log-in: this address, and this browser (on `response`), are the owner's."""
    remember_address(request, account)
    if response is None:
        return
    names = [name for name in _cookie_accounts(request) if name != account.lower()]
    names = ([account.lower()] + names)[:5]
    response.set_signed_cookie(COOKIE, "\n".join(names), salt=_SALT,
                               max_age=KNOWN_DAYS * 86400, httponly=True, samesite="Lax",
                               secure=settings.SESSION_COOKIE_SECURE)


def _owner(account: str):
    users = get_user_model().objects.filter(username__iexact=account.strip(), is_active=True)
    return users.first()


def send_link(request, account: str) -> None:
    """E-mail the account's verified addresses a link that lets this address in, unless one
    went out in the last MAIL_GAP_SECONDS. Nothing happens for an unknown account."""
    from allauth.account.adapter import get_adapter
    from allauth.account.models import EmailAddress

    user = _owner(account)
    if user is None:
        return
    if not cache.add(f"login:link-sent:{user.pk}", 1, MAIL_GAP_SECONDS):
        return
    network = client_network(request)
    token = signing.dumps({"u": user.pk, "a": network}, salt=_SALT)
    url = settings.SITE_URL.rstrip("/") + reverse("accounts:login-approve", args=[token])
    context = {"user": user, "address": network, "approve_url": url, "hours": LINK_HOURS}
    for email in EmailAddress.objects.filter(user=user, verified=True) \
            .values_list("email", flat=True):
        get_adapter(request).send_mail("account/email/login_approve", email, context)


def paused(request, account: str, limited: Limited):
    """The answer past the account's ceiling from where its owner is not known."""
    send_link(request, account)
    response = render(request, "account/login_paused.html", {
        "hours": LINK_HOURS, "limit": rate_text(limited.rate)}, status=429)
    response["Retry-After"] = str(limited.retry_after)
    return response


PAUSED_TEXT = ("This account has had sign-in attempts from too many places. If it is yours, "
               "a link that lets this address sign in was e-mailed to its verified address.")


def approve(request, token: str):
    """The e-mailed link: the address it names may sign in, and so may this browser."""
    try:
        value = signing.loads(token, salt=_SALT, max_age=LINK_HOURS * 3600)
        user = get_user_model().objects.get(pk=value["u"], is_active=True)
    except (signing.BadSignature, get_user_model().DoesNotExist, KeyError, TypeError):
        return render(request, "account/login_approved.html", {"valid": False}, status=400)
    cache.set(_known_key(user.get_username(), value["a"]), 1, KNOWN_DAYS * 86400)
    response = render(request, "account/login_approved.html",
                      {"valid": True, "address": value["a"], "username": user.get_username()})
    remember(request, response, user.get_username())
    return response
