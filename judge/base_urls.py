"""Judge base URLs as a setting or an option gives them. Plain Python: the `score` command
imports it without Django (settings read it through config.env, which raises Django's
ImproperlyConfigured instead, as for any bad setting)."""

from __future__ import annotations

from urllib.parse import urlsplit


class BaseUrlError(ValueError):
    """A base URL that cannot be used; the message names the option and the URL."""


def parse_base_urls(raw: str, *, name: str = "JUDGE_BASE_URLS") -> list[str]:
    """Split a comma-separated list of judge base URLs, checking each one."""
    urls = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        parts = urlsplit(part)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BaseUrlError(
                f"{name}: {part!r} is not an http(s) URL such as http://127.0.0.1:8001"
            )
        try:
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            raise BaseUrlError(f"{name}: {part!r} has an invalid port") from None
        urls.append(part.rstrip("/"))
    if len(set(urls)) != len(urls):
        raise BaseUrlError(f"{name}: the same URL is listed twice in {raw!r}")
    return urls
