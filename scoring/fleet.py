"""The judge fleet as staff run it: probing every endpoint of every judge config, and taking
an endpoint out of service or putting it back (audited)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from audit.models import AuditEvent
from audit.services import audit_record
from config.errors import ServiceError
from judge.models import Endpoint
from judge.services import endpoint_set_enabled, endpoints_probe
from scoring.models import JudgeConfig


class EndpointError(ServiceError):
    """An endpoint change refused (config.errors.ServiceError)."""


def fleet_base_urls() -> list[str]:
    """Every base URL of every judge config, each once, in config order."""
    urls: dict[str, None] = {}
    for base_urls in JudgeConfig.objects.order_by("name").values_list("base_urls", flat=True):
        urls.update((url.rstrip("/"), None) for url in base_urls)
    return list(urls)


def fleet_probe() -> list[Endpoint]:
    """Probe every endpoint of every judge config and store what each answered."""
    return endpoints_probe(base_urls=fleet_base_urls(), timeout=settings.FLEET_PROBE_TIMEOUT,
                           api_key=settings.JUDGE_API_KEY or None)


def _set_enabled(*, actor, base_url: str, enabled: bool, reason: str) -> Endpoint:
    base_url = base_url.rstrip("/")
    if base_url not in fleet_base_urls():
        raise EndpointError(f"{base_url} is not an endpoint of any judge config")
    with transaction.atomic():
        endpoint, changed = endpoint_set_enabled(base_url=base_url, enabled=enabled,
                                                 reason=reason)
        if not changed:
            raise EndpointError(f"{base_url} is already {'in' if enabled else 'out of'} "
                                "service")
        audit_record(actor=actor, action=AuditEvent.Action.ENDPOINT, obj=endpoint,
                     before={"enabled": not enabled}, after={"enabled": enabled},
                     reason=reason)
    return endpoint


def endpoint_take_out(*, actor, base_url: str, reason: str) -> Endpoint:
    """Stop sending new judge queries to `base_url`. Batches being scored when it is taken
    out stop using it within a heartbeat."""
    if not reason.strip():
        raise EndpointError("say why the endpoint is taken out")
    return _set_enabled(actor=actor, base_url=base_url, enabled=False, reason=reason.strip())


def endpoint_put_back(*, actor, base_url: str, reason: str = "") -> Endpoint:
    return _set_enabled(actor=actor, base_url=base_url, enabled=True, reason=reason.strip())
