"""The API's one exception handler: every error body is `{"errors": [...]}`."""

from rest_framework.views import exception_handler


def _messages(detail) -> list[str]:
    if isinstance(detail, dict):
        return [f"{field}: {message}" if field not in ("detail", "non_field_errors")
                else str(message)
                for field, value in detail.items() for message in _messages(value)]
    if isinstance(detail, list):
        return [m for item in detail for m in _messages(item)]
    return [str(detail)]


def errors_exception_handler(exc, context):
    response = exception_handler(exc, context)
    if response is not None:
        response.data = {"errors": _messages(response.data)}
    return response
