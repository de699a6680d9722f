"""Typed readers for settings taken from the environment.

Each reader fails loudly with the variable's name and the offending value, so a typo in a
deployment stops the process at start-up instead of surfacing later as odd behaviour.
"""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from judge import base_urls

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None,
              maximum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if value != value or (minimum is not None and value < minimum) or \
            (maximum is not None and value > maximum):
        raise ImproperlyConfigured(f"{name}={raw!r} is outside [{minimum}, {maximum}]")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip().lower() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


_PERIODS = {"s": "s", "sec": "s", "second": "s", "m": "m", "min": "m", "minute": "m",
            "h": "h", "hour": "h", "d": "d", "day": "d"}


def env_rate(name: str, default: str) -> str | None:
    """A request rate such as `10/m` or `20/hour` (s, m, h, d), as both DRF's throttles and
    django-ratelimit read it; `off` (or empty) means no limit and gives None."""
    raw = os.environ.get(name, default).strip()
    if raw.lower() in ("", "off", "none"):
        return None
    count, _, period = raw.partition("/")
    unit = _PERIODS.get(period.strip().lower())
    if not count.strip().isdigit() or int(count) < 1 or unit is None:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a rate such as 10/m or 20/hour "
                                   "(a count over s, m, h or d; or off)")
    return f"{int(count)}/{unit}"


def env_list(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [part.strip() for part in raw.split(",") if part.strip()]


def env_networks(name: str, default: str = "") -> tuple:
    """Comma-separated IP addresses or CIDR ranges (`10.0.0.5, 172.18.0.0/16`) as networks."""
    networks = []
    for part in env_list(name, default):
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {part!r} is not an IP address or a CIDR range "
                                       "such as 10.0.0.5 or 172.18.0.0/16") from None
    return tuple(networks)


def env_secret_pair(id_name: str, secret_name: str) -> tuple[str, str] | None:
    """An OAuth client's id and secret: both set, or neither (None: the feature is off)."""
    client_id, secret = env_str(id_name, "").strip(), env_str(secret_name, "").strip()
    if bool(client_id) != bool(secret):
        missing = secret_name if client_id else id_name
        raise ImproperlyConfigured(f"{missing} is missing: set both {id_name} and "
                                   f"{secret_name}, or neither")
    return (client_id, secret) if client_id else None


def parse_base_urls(raw: str, *, name: str = "JUDGE_BASE_URLS") -> list[str]:
    """judge.base_urls.parse_base_urls, a bad URL being a bad setting."""
    try:
        return base_urls.parse_base_urls(raw, name=name)
    except base_urls.BaseUrlError as exc:
        raise ImproperlyConfigured(str(exc)) from None
