"""Endpoint state in the database: probe results, and staff's switch."""

from __future__ import annotations

import asyncio

from django.utils import timezone

from judge.models import Endpoint
from judge.probe import ProbeResult, probe_all


def endpoints_probe(*, base_urls: list[str], timeout: float,
                    api_key: str | None = None) -> list[Endpoint]:
    """Probe each server and store what was found, one row per base URL."""
    urls = list(dict.fromkeys(url.rstrip("/") for url in base_urls))
    if not urls:
        return []
    results = asyncio.run(probe_all(urls, timeout=timeout, api_key=api_key))
    return [endpoint_store_probe(result=result) for result in results]


def endpoint_store_probe(*, result: ProbeResult) -> Endpoint:
    endpoint, _ = Endpoint.objects.update_or_create(
        base_url=result.base_url,
        defaults={"last_probe_at": timezone.now(), "healthy": result.healthy,
                  "probe_latency_ms": result.latency_ms, "probe_error": result.error,
                  "running": result.running, "waiting": result.waiting,
                  "simulator": result.simulator,
                  "served_models": None if result.models is None else list(result.models)})
    return endpoint


def endpoint_set_enabled(*, base_url: str, enabled: bool, reason: str = "") -> tuple[
        Endpoint, bool]:
    """Take an endpoint out (enabled=False) or put it back; (endpoint, whether it changed).
    Locks the row, so call it inside a transaction."""
    base_url = base_url.rstrip("/")
    Endpoint.objects.get_or_create(base_url=base_url)
    endpoint = Endpoint.objects.select_for_update().get(base_url=base_url)
    if endpoint.enabled == enabled:
        return endpoint, False
    endpoint.enabled = enabled
    endpoint.enabled_changed_at = timezone.now()
    endpoint.disabled_reason = "" if enabled else reason
    endpoint.save(update_fields=["enabled", "enabled_changed_at", "disabled_reason"])
    return endpoint, True

