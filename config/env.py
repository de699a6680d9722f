"""Typed readers for settings taken from the environment.

Each reader fails loudly with the variable's name and the offending value, so a typo in a
deployment stops the process at start-up instead of surfacing later as odd behaviour.
"""

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

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


def env_list(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [part.strip() for part in raw.split(",") if part.strip()]


def parse_base_urls(raw: str, *, name: str = "JUDGE_BASE_URLS") -> list[str]:
    """Split a comma-separated list of judge base URLs, checking each one."""
    urls = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        parts = urlsplit(part)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ImproperlyConfigured(
                f"{name}: {part!r} is not an http(s) URL such as http://127.0.0.1:8001"
            )
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {part!r} has an invalid port") from None
        urls.append(part.rstrip("/"))
    if len(set(urls)) != len(urls):
        raise ImproperlyConfigured(f"{name}: the same URL is listed twice in {raw!r}")
    return urls
