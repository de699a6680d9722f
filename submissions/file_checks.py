"""Which file went in which field, told from its name and first bytes before anything is
stored: an archive chosen as the predictions file, a file that is no archive chosen as the
output audio, and files above the size limits. The form, the API and the service share these
checks; the upload page's script (static/js/upload.js) makes the same ones before the upload
starts, from what `page_limits` gives it, but the server's stay the ones that count."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from scoring.kinds import get_kind
from scoring.models import Benchmark
from submissions.validation import MAX_PREDICTIONS_BYTES

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
PREDICTIONS_SUFFIXES = (".json", ".jsonl")
# A zip opens with a member's local header (an empty one with its end record), a .tar.gz with
# gzip's magic number: the readers of submissions.archives go by the same bytes.
ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b")
ARCHIVE_IN_PREDICTIONS = "this is an archive: choose it under Output audio"


def _head(upload: UploadedFile) -> bytes:
    """The file's first bytes, leaving it where it was for whoever reads it next."""
    handle = upload.file
    position = handle.tell()
    handle.seek(0)
    try:
        return handle.read(4)
    finally:
        handle.seek(position)


def _name(upload: UploadedFile) -> str:
    return Path(upload.name or "").name


def is_archive(upload: UploadedFile) -> bool:
    """An archive by its name or by its first bytes (a renamed one is still one)."""
    return _name(upload).lower().endswith(ARCHIVE_SUFFIXES) \
        or _head(upload).startswith(ARCHIVE_MAGIC)


def _size_problem(upload: UploadedFile, limit: int, what: str = "") -> str | None:
    if upload.size <= limit:
        return None
    return f"{_name(upload)}: {upload.size} bytes is above the limit of {limit}{what}"


def predictions_file_problems(upload: UploadedFile,
                              benchmark: Benchmark | None = None) -> list[str]:
    """Why the file cannot be the predictions file: an archive (whose place is the output
    audio, or nowhere for a benchmark whose outputs are text), or too large."""
    if is_archive(upload):
        if benchmark is not None and not get_kind(benchmark.kind).outputs.files:
            return [f"this is an archive: {benchmark.slug} takes "
                    f"{get_kind(benchmark.kind).outputs.help}, no archive"]
        return [ARCHIVE_IN_PREDICTIONS]
    problems = [_size_problem(upload, settings.SUBMISSION_MAX_UPLOAD_BYTES),
                _size_problem(upload, MAX_PREDICTIONS_BYTES, " for a predictions file")]
    return [p for p in problems if p][:1]


def takes_archive(benchmark: Benchmark | None) -> bool:
    """Whether the benchmark takes an archive of output files (unknown: assume it does); one
    that does not refuses any archive itself (submissions.services._kind_problems)."""
    return benchmark is None or get_kind(benchmark.kind).outputs.files


def archive_file_problems(upload: UploadedFile) -> list[str]:
    """Why the file cannot be the archive of output audio: it is none (by its first bytes,
    which the archive readers go by), or too large."""
    if not _head(upload).startswith(ARCHIVE_MAGIC):
        hint = " (a predictions file goes under Predictions)" \
            if _name(upload).lower().endswith(PREDICTIONS_SUFFIXES) else ""
        return [f"{_name(upload)} is not an archive: Output audio takes a .zip or .tar.gz of "
                f"the output files{hint}"]
    problem = _size_problem(upload, settings.SUBMISSION_MAX_UPLOAD_BYTES)
    return [problem] if problem else []


def page_limits() -> dict:
    """What the upload page's script checks before an upload starts, as the checks above."""
    return {
        "archive_suffixes": " ".join(ARCHIVE_SUFFIXES),
        "predictions_suffixes": " ".join(PREDICTIONS_SUFFIXES),
        "predictions_bytes": min(settings.SUBMISSION_MAX_UPLOAD_BYTES, MAX_PREDICTIONS_BYTES),
        "audio_bytes": settings.SUBMISSION_MAX_UPLOAD_BYTES,
        "archive_message": ARCHIVE_IN_PREDICTIONS,
    }
