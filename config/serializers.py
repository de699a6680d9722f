"""What every API module answers when it refuses: one errors body, described once for the
OpenAPI schema (the body itself is built by config.api's exception handler alone)."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorsSerializer(serializers.Serializer):
    """Every API error (config.api): each problem in words."""

    errors = serializers.ListField(child=serializers.CharField(),
                                   help_text="what is wrong, one message each")


def error_responses(*codes: int, described: dict[int, str] | None = None) -> dict:
    """The error responses an operation may give, for its `extend_schema(responses=...)`:
    each status code (those of `described` too) answered by ErrorsSerializer, with the
    description `described` gives it."""
    described = described or {}
    return {code: OpenApiResponse(ErrorsSerializer, description=described[code])
            if code in described else ErrorsSerializer for code in (*codes, *described)}
