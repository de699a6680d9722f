"""Rate limits of the browser forms (log-in, upload), counted by django-ratelimit.

The API is limited by DRF's throttles instead (REST_FRAMEWORK in settings). Both answer 429
saying which limit was reached and when to try again.
"""

from functools import wraps

from django.conf import settings
from django.shortcuts import render
from django_ratelimit.core import get_usage

_PERIODS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def client_ip(request) -> str:
    """Behind the proxy (BEHIND_PROXY): the last address of X-Forwarded-For, which the proxy
    added; anything before it came from the client and may be forged."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    return forwarded.split(",")[-1].strip() or request.META["REMOTE_ADDR"]


def rate_text(rate: str) -> str:
    """`10/m` as `10 per minute`."""
    count, _, period = rate.partition("/")
    return f"{count} per {_PERIODS[period]}"


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


def too_many_requests(request, *, what: str, rate: str, retry_after: int):
    response = render(request, "429.html", {
        "what": what, "limit": rate_text(rate), "retry_after": retry_after,
    }, status=429)
    response["Retry-After"] = str(retry_after)
    return response
