"""Submission files in Django's default storage, and each machine's local copy of them.

With the filesystem storage (the default) the storage is MEDIA_ROOT itself: files are written
there and read in place, so web servers and workers share that folder. With another storage
(DEFAULT_STORAGE=s3) the storage holds every file an upload brings and every output that
validation unpacks; each process that needs one (a validating or scoring worker, the web's
audio player) reads a copy under its own MEDIA_ROOT, at the same path relative to it, fetched
on demand and checked against the size the storage reports or the sha256 the run recorded.
No machine then needs another's disk.

A run's `audio_root` says which: an absolute path is a folder read in place (the filesystem
storage, a benchmark's own audio); a relative one names a folder of the storage, and so its
copy under MEDIA_ROOT on every machine.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, storages

from scoring.kinds import file_sha256, get_kind
from scoring.kinds.files import resolve_audio


class MediaError(RuntimeError):
    """The storage could not give a file back as it was stored (our fault, not the author's)."""


def shared() -> bool:
    """Whether the default storage is MEDIA_ROOT itself, so files are read where they lie."""
    return isinstance(storages["default"], FileSystemStorage)


def stored_root(folder: Path) -> str:
    """What a run keeps as the folder of its outputs, `folder` (under MEDIA_ROOT)."""
    return str(folder) if shared() else storage_name(folder)


def in_storage(audio_root: str) -> bool:
    return bool(audio_root) and not Path(audio_root).is_absolute()


def local_root(audio_root: str) -> Path:
    """The folder on this machine where a run's outputs (or a benchmark's audio) are read."""
    return Path(settings.MEDIA_ROOT) / audio_root if in_storage(audio_root) else Path(audio_root)


def storage_name(path: Path) -> str:
    """A file's (or folder's) name in the storage: its path under MEDIA_ROOT."""
    return Path(path).relative_to(settings.MEDIA_ROOT).as_posix()


# --- writing ---------------------------------------------------------------------------


def file_save(content, path: Path) -> None:
    """Put `content` (a file object) in the storage as `path` (under MEDIA_ROOT), in place of
    what an earlier attempt (a validation cut short) left there: names come from ids."""
    name = storage_name(path)
    storage = storages["default"]
    storage.delete(name)
    saved = storage.save(name, File(content, name=path.name))
    if saved != name:  # the storage renamed it: another process wrote that name meanwhile
        storage.delete(saved)
        raise MediaError(f"{name}: the storage gained a file of that name while saving it")


def folder_save(folder: Path) -> None:
    """Put every file under `folder` in the storage, each at its own path; nothing to do when
    the storage is MEDIA_ROOT."""
    if shared():
        return
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        with path.open("rb") as handle:
            file_save(handle, path)


def file_delete(path: Path) -> None:
    """Delete a file here and, when the storage is elsewhere, there."""
    path.unlink(missing_ok=True)
    if not shared():
        storages["default"].delete(storage_name(path))


def folder_delete(folder: Path) -> None:
    """Delete a folder here and, when the storage is elsewhere, every file under its name."""
    shutil.rmtree(folder, ignore_errors=True)
    if not shared():
        for name in _names(storage_name(folder)):
            storages["default"].delete(name)


# --- reading ---------------------------------------------------------------------------


def folder_fetch(folder: Path) -> None:
    """Copy into `folder` every file the storage holds under its name, each checked by its
    size; a copy already there of the right size is kept. Nothing to do when the storage is
    MEDIA_ROOT."""
    if shared():
        return
    storage = storages["default"]
    for name in _names(storage_name(folder)):
        target = Path(settings.MEDIA_ROOT) / name
        size = storage.size(name)
        if not (target.is_file() and target.stat().st_size == size):
            _download(name, target, size=size)


def output_path(audio_root: str, relative: str, sha256: str | None) -> Path | None:
    """The local file of one of a run's outputs, fetched from the storage when this machine
    has no copy yet; None when the path leaves the run's folder or the storage has no such
    file. A copy is kept only once its sha256 matches the run's (when it has one)."""
    root = local_root(audio_root).resolve()
    path = resolve_audio(root, relative).resolve()
    if not path.is_relative_to(root):
        return None
    if in_storage(audio_root) and not path.is_file():
        name = storage_name(path)
        if not storages["default"].exists(name):
            return None
        _download(name, path, sha256=sha256)
    return path


def stored_file(path: Path) -> Path | None:
    """This machine's copy of the stored file `path` (under MEDIA_ROOT), fetched from the
    storage when there is none here yet; None when the storage has no such file. For files
    written once under names derived from ids (spectrogram images), so a copy is never stale."""
    if path.is_file():
        return path
    if shared():
        return None
    name = storage_name(path)
    if not storages["default"].exists(name):
        return None
    _download(name, path, size=storages["default"].size(name))
    return path


def outputs_fetch(run, keys: list[str]) -> None:
    """Make sure this machine has the outputs of items `keys` of `run` (a ScoringRun) when
    its folder is in the storage; MediaError naming the first that cannot be had."""
    if not in_storage(run.audio_root) or not get_kind(run.benchmark.kind).outputs.files:
        return  # read in place, or text that came inside the predictions file
    for key in keys:
        if key in run.outputs and output_path(run.audio_root, run.outputs[key],
                                              run.digests.get(key)) is None:
            raise MediaError(f"{run.audio_root}/{run.outputs[key]} (the output of {key}) "
                             "is not in the storage")


def _names(prefix: str) -> list[str]:
    """Every file name the storage holds under the folder `prefix`."""
    storage = storages["default"]
    try:
        folders, files = storage.listdir(prefix)
    except FileNotFoundError:
        return []
    names = [f"{prefix}/{name}" for name in files]
    for folder in folders:
        names.extend(_names(f"{prefix}/{folder}"))
    return names


def _download(name: str, target: Path, *, size: int | None = None,
              sha256: str | None = None) -> None:
    """Copy the stored file `name` to `target` through a temporary file beside it, renamed
    only once it checks out, so a copy that is there is always a whole one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f".{target.name}.{uuid.uuid4().hex}.part")
    try:
        with storages["default"].open(name, "rb") as source, part.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
        if size is not None and part.stat().st_size != size:
            raise MediaError(f"{name}: {part.stat().st_size} bytes came from the storage, "
                             f"which says it holds {size}")
        if sha256 is not None and file_sha256(part) != sha256:
            raise MediaError(f"{name}: the copy from the storage does not have the sha256 "
                             "recorded when it was stored")
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
