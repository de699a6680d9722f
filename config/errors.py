"""The one error a service raises when it refuses an operation (bad input, or a state that
forbids it); nothing has been changed. Pages show it as form errors, the API answers it as
`{"errors": [...]}` (config.api), commands print it."""

from __future__ import annotations

import errno

from django.core.exceptions import ValidationError

from config.text import bounded


class ServiceError(ValidationError):
    """`problems`: each reason, in words an author or staff member acts on, or a dict of them
    by the form field they concern ("__all__" for none), so that a page shows each beside its
    field. `code` says why: "invalid" (the input; HTTP 400), "conflict" (the object's state;
    409) or "quota" (a limit of the caller's; 429), with `retry_after`, the seconds until
    the caller may try again where that is known (the API's Retry-After)."""

    STATUS = {"invalid": 400, "conflict": 409, "quota": 429}

    def __init__(self, problems: str | list[str] | dict[str, list[str]], *,
                 code: str = "invalid", retry_after: int | None = None):
        if code not in self.STATUS:
            raise ValueError(f"unknown ServiceError code {code!r}")
        if isinstance(problems, dict):
            problems = {field: [bounded(str(p)) for p in found]
                        for field, found in problems.items() if found}
        elif isinstance(problems, str):
            problems = [bounded(problems)]
        else:
            problems = [bounded(str(p)) for p in problems]
        super().__init__(problems if isinstance(problems, dict) else list(problems))
        self.code = code
        self.retry_after = retry_after

    @property
    def problems(self) -> list[str]:
        return self.messages

    @property
    def status(self) -> int:
        return self.STATUS[self.code]

    def __str__(self) -> str:
        return "; ".join(self.messages)


# A full disk (or quota) is our failure, never the author's: 503 with this Retry-After.
STORAGE_FULL_RETRY_SECONDS = 600
STORAGE_FULL = ("our storage is full, on our side and not in your upload: nothing of it was "
                "kept; try again later")


def storage_full(exc: BaseException) -> bool:
    """Whether `exc` is a disk or quota that is full (ENOSPC, EDQUOT)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
