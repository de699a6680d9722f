"""Rate limits: who the client is, the log-in counters, and the 429 answer.

Every limiter takes the client's address from `client_ip`: django-ratelimit on the upload
form (RATELIMIT_IP_META_KEY), DRF's throttles on the API (the classes below), and allauth's
rate limits on the account pages (accounts.adapter). Log-in attempts count in one place,
`login_attempt`, whichever door they come through: the log-in form (which the admin's log-in
redirects to) and `POST /api/token/`; accounts.login_guard decides what the account's
ceiling means for its owner. All answer 429 saying which limit was reached and, where
it is known, when to try again (Retry-After).
"""

import ipaddress
from functools import wraps
from typing import NamedTuple

from django.conf import settings
from django.shortcuts import render
from django_ratelimit.core import get_usage
from rest_framework import throttling

_PERIODS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _ip(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address, networks) -> bool:
    return any(address in network for network in networks)


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, unless that is one of TRUSTED_PROXIES; then the
    right-most X-Forwarded-For address that is not one of them.

    Each trusted proxy appends the address it got the request from, so the entries right of
    the first untrusted one were written by trusted proxies and the ones left of it by the
    client, who may write anything there. A header from any other peer is ignored. An entry
    that is not an address stops the walk at the last proxy that is known.
    """
    trusted = settings.TRUSTED_PROXIES
    address = request.META.get("REMOTE_ADDR", "")
    peer = _ip(address)
    if peer is None or not _trusted(peer, trusted):
        return address
    hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
            if hop.strip()]
    for hop in reversed(hops):
        hop_ip = _ip(hop)
        if hop_ip is None:
            break
        address = str(hop_ip)
        if not _trusted(hop_ip, trusted):
            break
    return address


def client_network(request) -> str:
    """The client's address, IPv6 as its /64 (as django-ratelimit and allauth count it): one
    host often holds a whole /64 and could otherwise rotate through it."""
    address = client_ip(request)
    if ":" in address:
        return str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return address


class _ClientAddress:
    """DRF's throttles, counting anonymous callers by `client_ip` (not by NUM_PROXIES)."""

    def get_ident(self, request):
        return client_network(request)


class _AtomicCount(throttling.SimpleRateThrottle):
    """DRF's rate throttles counted on django-ratelimit's fixed-window counter: one atomic
    increment per request (an ADD, then Redis INCR, on a key that expires with its window).
    DRF's own keep a list of request times that concurrent requests read and write back
    whole, so one overwrites another's and far more requests than the rate get through."""

    def allow_request(self, request, view):
        self.limited = None
        key = self.get_cache_key(request, view) if self.rate else None
        if key is not None:
            self.limited = _count(request, group=f"api:{self.scope}", key=key, rate=self.rate)
        return self.limited is None

    def wait(self):
        return self.limited.retry_after


class AnonThrottle(_ClientAddress, throttling.AnonRateThrottle, _AtomicCount):
    pass


class UserThrottle(_ClientAddress, throttling.UserRateThrottle, _AtomicCount):
    pass


class ScopedThrottle(_ClientAddress, throttling.ScopedRateThrottle, _AtomicCount):
    pass


def rate_text(rate: str) -> str:
    """`10/m` as `10 per minute`."""
    count, _, period = rate.partition("/")
    return f"{count} per {_PERIODS[period]}"


def rate_seconds(rate: str) -> int:
    """The period of a rate such as `10/m`, in seconds."""
    return _SECONDS[rate.partition("/")[2]]


class Limited(NamedTuple):
    rate: str
    retry_after: int
    account_wide: bool = False  # the account's ceiling, not this address's own rate


def _count(request, *, group: str, key: str, rate: str | None) -> Limited | None:
    usage = get_usage(request, group=group, key=lambda _group, _request: key, rate=rate,
                      increment=True)
    if usage is not None and usage["should_limit"]:
        return Limited(rate, max(usage["time_left"], 1))
    return None


def _peek(request, *, group: str, key: str, rate: str | None) -> Limited | None:
    """Whether the counter is past its rate, without counting this request (a count at the
    rate itself is not past it: the next one would be)."""
    usage = get_usage(request, group=group, key=lambda _group, _request: key, rate=rate)
    if usage is not None and usage["count"] >= usage["limit"]:
        return Limited(rate, max(usage["time_left"], 1))
    return None


def bad_token_limited(request) -> Limited | None:
    """Whether the client's address is past THROTTLE_API_ANON in tokens that were refused
    (counted by `bad_token`): then the API answers 429 before looking any token up."""
    return _peek(request, group="api:bad-token", key=client_network(request),
                 rate=settings.THROTTLE_API_ANON)


def bad_token(request) -> Limited | None:
    """Count one refused token (unknown or revoked) against the client's address; a
    request with a wrong token reaches no throttle, which runs after authentication."""
    return _count(request, group="api:bad-token", key=client_network(request),
                  rate=settings.THROTTLE_API_ANON)


def login_attempt(request, account: str) -> Limited | None:
    """Count one log-in attempt at `account` (a username) and say whether it is over a limit.

    Two counters: THROTTLE_LOGIN for the account from this client address, and
    THROTTLE_LOGIN_ACCOUNT for the addresses that tried the account, each counted once a
    period: one address at its own rate never reaches that ceiling, however long it guesses.
    Past the ceiling the answer is `account_wide`, and accounts.login_guard lets the owner in
    from where they are known (or from an e-mailed link) and nobody else.
    """
    account = account.strip().lower()
    if not account:
        return None  # nothing to guess at: the form or serializer refuses it
    address = client_network(request)
    limited = _count(request, group="login:account-address", key=f"{account} {address}",
                     rate=settings.THROTTLE_LOGIN)
    if limited:
        return limited
    ceiling = settings.THROTTLE_LOGIN_ACCOUNT
    if not ceiling:
        return None
    first = get_usage(request, group="login:account-seen", key=lambda *_: f"{account} {address}",
                      rate=f"1/{ceiling.partition('/')[2]}", increment=True)
    counter = _count if first is None or first["count"] == 1 else _peek
    limited = counter(request, group="login:account", key=account, rate=ceiling)
    return limited._replace(account_wide=True) if limited else None


def limit_posts(*, group: str, rate_setting: str, keys: tuple[str, ...], what: str):
    """Count a view's POSTs against the rate in settings.<rate_setting> (read on each request,
    `None` for no limit), once under each django-ratelimit key ("ip", "user",
    "post:username"); past the limit the answer is the 429 page, and the view is not run."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            rate = getattr(settings, rate_setting)
            for key in keys:
                usage = get_usage(request, group=f"{group}:{key}", key=key, rate=rate,
                                  method="POST", increment=True)
                if usage is not None and usage["should_limit"]:
                    return too_many_requests(request, what=what, rate=rate,
                                             retry_after=max(usage["time_left"], 1))
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def too_many_requests(request, *, what: str, rate: str | None, retry_after: int | None,
                      upper_bound: bool = False):
    """The 429 page; `upper_bound` when the wait is the longest it can be, not the exact one."""
    response = render(request, "429.html", {
        "what": what, "limit": rate_text(rate) if rate else None, "retry_after": retry_after,
        "upper_bound": upper_bound,
    }, status=429)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


# allauth's pages that it limits itself (ACCOUNT_RATE_LIMITS), by URL name: what is counted
# and the setting of its rate.
_ACCOUNT_LIMITS = {
    "account_signup": ("sign-ups", "THROTTLE_SIGNUP"),
    "account_reset_password": ("password reset requests", "THROTTLE_PASSWORD_RESET"),
    "account_login": ("log-in attempts", "THROTTLE_LOGIN_ADDRESS"),
}


def account_rate_limited(request):
    """allauth's answer past one of its own limits (settings.ACCOUNT_RATE_LIMITS).

    allauth counts in a sliding window and does not say when its oldest count expires; the
    whole period is the longest wait, and is what Retry-After says.
    """
    match = request.resolver_match
    what, setting = _ACCOUNT_LIMITS.get(match.url_name if match else "", ("requests", None))
    rate = getattr(settings, setting) if setting else None
    return too_many_requests(request, what=what, rate=rate,
                             retry_after=rate_seconds(rate) if rate else None, upper_bound=True)
