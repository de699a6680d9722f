"""Upload temporaries: Django streams a large upload to a file in FILE_UPLOAD_TEMP_DIR (under
MEDIA_ROOT by default) and deletes it when the request ends; a web process killed mid-upload
leaves it there, so a periodic sweep deletes the ones that have not been written to for
UPLOAD_TEMP_MAX_AGE_SECONDS."""

import logging
import os
import re
import time

from django.conf import settings

log = logging.getLogger(__name__)

# tempfile's names as TemporaryUploadedFile asks for them: tmpXXXXXXXX.upload[.ext]
TEMPORARY_NAME = re.compile(r"tmp\w+\.upload(\.[^/]*)?")


def sweep_temporaries(now: float | None = None) -> int:
    """Delete the upload temporaries unchanged for UPLOAD_TEMP_MAX_AGE_SECONDS; how many.
    Only tempfile's names, only plain files: the folder may be shared with other things."""
    cutoff = (time.time() if now is None else now) - settings.UPLOAD_TEMP_MAX_AGE_SECONDS
    try:
        entries = list(os.scandir(settings.FILE_UPLOAD_TEMP_DIR))
    except FileNotFoundError:
        return 0
    swept = 0
    for entry in entries:
        if (TEMPORARY_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue  # its request ended meanwhile and deleted it
            swept += 1
            log.info("deleted the upload temporary %s, left by a killed web process", entry.name)
    return swept
