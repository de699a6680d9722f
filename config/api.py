"""The API's one exception handler: every error body is `{"errors": [...]}`, a failure of
our own (an exception no view expected) included, never Django's HTML error page. Views raise
(a ServiceError, DRF's NotFound or PermissionDenied, BrokerUnavailable); only this module
builds the body, which config.serializers.ErrorsSerializer describes."""

import logging
import math

from rest_framework.exceptions import Throttled
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from config.celery import BrokerUnavailable
from config.errors import STORAGE_FULL, STORAGE_FULL_RETRY_SECONDS, ServiceError, storage_full

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal error on our side, not in your request: try again later"


def _messages(detail) -> list[str]:
    if isinstance(detail, dict):
        return [f"{field}: {message}" if field not in ("detail", "non_field_errors")
                else str(message)
                for field, value in detail.items() for message in _messages(value)]
    if isinstance(detail, list):
        return [m for item in detail for m in _messages(item)]
    return [str(detail)]


def errors_exception_handler(exc, context):
    response = _errors_response(exc, context)
    request = context.get("request")
    renderer = getattr(request, "accepted_renderer", None)
    if response is not None and renderer is not None and renderer.format == "csv":
        # An error is never a download: `{"errors": [...]}` as JSON, which a browser shows,
        # not a one-column CSV it would save as a file.
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
    return response


def _errors_response(exc, context):
    if isinstance(exc, ServiceError):  # a service refused: 400, 409 or 429 by its code
        return Response({"errors": exc.problems}, status=exc.status, headers={
            "Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None)
    if isinstance(exc, BrokerUnavailable):  # nothing can be queued now, nothing was stored
        return Response({"errors": [str(exc)]}, status=503,
                        headers={"Retry-After": str(exc.retry_after)})
    if storage_full(exc):  # our disk, not the caller's request: nothing was stored
        log.error("storage full", exc_info=exc)
        set_rollback()
        return Response({"errors": [STORAGE_FULL]}, status=503,
                        headers={"Retry-After": str(STORAGE_FULL_RETRY_SECONDS)})
    response = exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        log.error("API %s %s failed", getattr(request, "method", "?"),
                  getattr(request, "path", "?"), exc_info=exc)
        set_rollback()
        return Response({"errors": [INTERNAL_ERROR]}, status=500)
    if isinstance(exc, Throttled):
        # DRF has already set Retry-After from the same wait.
        wait = "a moment" if exc.wait is None else f"{max(math.ceil(exc.wait), 1)} seconds"
        said = f"Too many requests: try again in {wait}."
        # A subclass explains itself (accounts.api.LoginPaused).
        explained = type(exc) is not Throttled
        response.data = {"errors": [str(type(exc).default_detail) if explained else said]}
    else:
        response.data = {"errors": _messages(response.data)}
    return response
