"""Reads of endpoint state."""

from __future__ import annotations

from judge.models import Endpoint


def disabled_base_urls(base_urls: list[str]) -> set[str]:
    """Those of `base_urls` (without a trailing slash) that staff have taken out."""
    wanted = {url.rstrip("/") for url in base_urls}
    return set(Endpoint.objects.filter(base_url__in=wanted, enabled=False)
               .values_list("base_url", flat=True))


def endpoints_by_url(base_urls: list[str]) -> dict[str, Endpoint]:
    """The stored state of each of `base_urls` that has a row (probed or switched)."""
    wanted = {url.rstrip("/") for url in base_urls}
    return {e.base_url: e for e in Endpoint.objects.filter(base_url__in=wanted)}
