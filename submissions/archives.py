"""Reading an uploaded archive (.zip or .tar.gz) safely, with no database access: its members
listed and checked whole from the headers before a byte is written (kinds, names that would
leave the folder, encrypted members, links, counts and sizes within the upload limits), then
only the members asked for extracted, counting the bytes actually written since headers can
lie."""

from __future__ import annotations

import posixpath
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scoring.kinds.files import (
    CHUNK_BYTES,
    raise_ours,
    why,
)

# Tar metadata headers (long names, pax records) hold a few KB; tarfile reads them whole.
MAX_TAR_HEADER_BYTES = 1024**2


# A zip's directory takes 46 bytes per member plus its name and extras: generous room for both.
DIRECTORY_BYTES_PER_MEMBER = 4096


# Folders that archivers add on their own; they do not count against a top-level wrapper.
ARCHIVER_FOLDERS = {"__MACOSX"}


# What a damaged archive raises. Not RuntimeError: zipfile raises it for encrypted members,
# which are refused before any is read, so one is a fault of ours.
ARCHIVE_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, tarfile.TarError, EOFError,
                  zlib.error, OSError, NotImplementedError, ValueError)


@dataclass(frozen=True)
class Limits:
    max_files: int  # members in the archive
    max_unpacked_bytes: int  # total bytes once unpacked
    max_audio_seconds: float
    max_output_bytes: int  # each output file
    max_sample_rate: int  # Hz
    max_channels: int
    max_ratio: float  # unpacked over compressed bytes of what is extracted
    ratio_floor_bytes: int  # what unpacks to no more than this is never refused for its ratio
    # Whose limit max_audio_seconds is, when it is not the site's upload limit (the judge's).
    audio_limit_source: str = ""
    # The judge config's (vLLM's) limits on one audio: its float32 samples once decoded
    # (frames x channels x 4 bytes; None: no such limit), and whose the file size limit is.
    max_decoded_bytes: int | None = None
    judge_source: str = ""


@dataclass(frozen=True)
class Entry:
    name: str  # as the archive stores it
    kind: str  # "file", "dir", "link", "special" or "encrypted"
    size: int  # declared unpacked size
    handle: object  # ZipInfo or TarInfo
    packed: int | None = None  # declared compressed size (zip); a tar.gz compresses as a whole


@dataclass(frozen=True)
class Listing:
    name: str  # the archive's file name, for messages
    files: dict[str, Entry]  # regular files by normalised path, in the archive's order
    wrapper: str | None  # the one top-level folder every member sits under, if any
    archive_bytes: int  # the archive's own size

    def packed_bytes(self, paths: list[str]) -> int:
        """What `paths` take compressed: their own sizes in a zip, the whole of a tar.gz."""
        sizes = [self.files[p].packed for p in paths]
        return self.archive_bytes if None in sizes else sum(sizes)


class _ZipReader:
    """A zip whose member count is read from its end record before the central directory is
    parsed, since a hostile directory of millions of entries would fill memory."""

    def __init__(self, path: Path):
        self.path = path
        self.archive: zipfile.ZipFile | None = None
        with open(path, "rb") as handle:
            end = zipfile._EndRecData(handle)  # the stdlib's own reader of that record
        self.declared_members = end[zipfile._ECD_ENTRIES_TOTAL] if end else 0
        self.directory_bytes = end[zipfile._ECD_SIZE] if end else 0

    def entries(self) -> Iterator[Entry]:
        self.archive = zipfile.ZipFile(self.path)
        for info in self.archive.infolist():
            yield Entry(info.filename, _zip_kind(info), info.file_size, info, info.compress_size)

    def open(self, entry: Entry):
        return self.archive.open(entry.handle)

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


class ArchiveRefused(tarfile.ReadError):
    """An archive refused for its shape rather than for damage."""


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses an oversized metadata header, which tarfile would read into memory whole."""

    META_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, *tarfile.GNU_TYPES)

    def _proc_member(self, archive):  # the extension point tarfile documents for subclasses
        if self.type in self.META_TYPES and self.size > MAX_TAR_HEADER_BYTES:
            raise ArchiveRefused(f"member {self.name!r}: a {self.size}-byte tar metadata "
                                  f"header, above the limit of {MAX_TAR_HEADER_BYTES}")
        return super()._proc_member(archive)


class _TarReader:
    """A gzip-compressed tar, listed lazily so that a listing can stop at the first excess."""

    declared_members = directory_bytes = 0  # unknown until listed

    def __init__(self, path: Path):
        self.archive = tarfile.open(path, mode="r:gz", tarinfo=_BoundedTarInfo)

    def entries(self) -> Iterator[Entry]:
        while (info := self.archive.next()) is not None:
            yield Entry(info.name, _tar_kind(info), info.size, info)

    def open(self, entry: Entry):
        return self.archive.extractfile(entry.handle)

    def close(self) -> None:
        self.archive.close()


def _zip_kind(info: zipfile.ZipInfo) -> str:
    # Unix-made zips (create_system 3) keep the file type in the high bits; 0 means none given.
    kind = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
    if info.flag_bits & 0x1:
        return "encrypted"
    if info.is_dir() or kind == stat.S_IFDIR:
        return "dir"
    if kind == stat.S_IFLNK:
        return "link"
    return "file" if kind in (0, stat.S_IFREG) else "special"


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    return "link" if info.issym() or info.islnk() else "special"


def _reader_for(path: Path):
    """A reader chosen by the file's content (never its extension), or None."""
    if zipfile.is_zipfile(path):
        return _ZipReader(path)
    with open(path, "rb") as handle:
        if handle.read(2) != b"\x1f\x8b":  # gzip's magic number
            return None
    try:
        return _TarReader(path)
    except ArchiveRefused:
        raise
    except (tarfile.ReadError, EOFError, OSError, zlib.error) as exc:
        raise_ours(exc)
        return None  # gzip, but not a tar inside


@contextmanager
def open_archive(path: Path):
    reader = _reader_for(path)
    try:
        yield reader
    finally:
        if reader is not None:
            reader.close()


def list_archive(reader, archive: Path, limits: Limits, errors: list[str]) -> Listing | None:
    """The archive's files, or None (with the errors added) when it is refused."""
    entries, problems = _list_entries(reader, archive.name, limits)
    errors.extend(problems)
    if problems:
        return None
    files = {p: e for e in entries if e.kind == "file" and (p := member_path(e.name))}
    return Listing(name=archive.name, files=files, wrapper=_wrapper(frozenset(files)),
                    archive_bytes=archive.stat().st_size)


def _list_entries(reader, name: str, limits: Limits) -> tuple[list[Entry], list[str]]:
    """Every entry and every reason to refuse the archive, found before extracting anything."""
    entries: list[Entry] = []
    problems: list[str] = []
    seen: set[str] = set()
    declared = 0
    if excess := _declared_excess(reader, name, limits):
        return entries, [excess]
    for entry in reader.entries():
        entries.append(entry)
        declared += max(entry.size, 0)
        if len(entries) > limits.max_files:
            return entries, [_too_many(name, limits)]
        if declared > limits.max_unpacked_bytes:
            return entries, [_too_big(name, limits)]
        problems.extend(_entry_problems(entry, name, seen))
    return entries, problems


def _declared_excess(reader, name: str, limits: Limits) -> str | None:
    """A zip's end record, read before its directory is loaded into memory."""
    if reader.declared_members > limits.max_files:
        return _too_many(name, limits)
    if reader.directory_bytes > max(2**20, limits.max_files * DIRECTORY_BYTES_PER_MEMBER):
        return (f"{name}: its directory of members is {reader.directory_bytes} bytes, too "
                f"large for {limits.max_files} members (the limit)")
    return None


def _too_many(name: str, limits: Limits) -> str:
    return f"{name}: more than {limits.max_files} members (the limit)"


def _too_big(name: str, limits: Limits) -> str:
    return f"{name}: unpacks to more than {limits.max_unpacked_bytes} bytes (the limit)"


def _entry_problems(entry: Entry, name: str, seen: set[str]) -> list[str]:
    where = f"{name}: member {entry.name!r}"
    path = member_path(entry.name)
    if path is None:
        return [f"{where}: absolute paths and '..' are not allowed in an archive"]
    if entry.kind == "link":
        return [f"{where}: links (symbolic or hard) are not allowed in an archive"]
    if entry.kind == "special":
        return [f"{where}: devices and fifos are not allowed in an archive"]
    if entry.kind == "encrypted":
        return [f"{where}: encrypted members are not supported"]
    if entry.kind == "file" and path in seen:
        return [f"{where}: appears more than once"]
    seen.add(path)
    return []


def unsafe(path: str) -> bool:
    """Absolute (either convention), or with a '..' part: it could land outside the archive."""
    return ("\0" in path or path.startswith(("/", "\\")) or bool(re.match(r"[A-Za-z]:", path))
            or ".." in re.split(r"[/\\]", path))


def member_path(name: str) -> str | None:
    """A member's normalised relative path; "" for the root itself; None when unsafe."""
    if unsafe(name):
        return None
    normal = posixpath.normpath(name) if name else "."
    return "" if normal == "." else normal


def _wrapper(files: frozenset[str]) -> str | None:
    tops = {f.split("/", 1)[0] for f in files} - ARCHIVER_FOLDERS
    if len(tops) != 1:
        return None
    top = tops.pop()
    return top if top not in files else None


def extract(reader, entries: list[Entry], audio_dir: Path, name: str) -> list[str]:
    """Extract these members one at a time; stop at the first problem, returned as its
    message. A member cannot write more than its header declares."""
    root = audio_dir.resolve()
    for entry in entries:
        target = (root / member_path(entry.name)).resolve()
        if target == root or not target.is_relative_to(root):
            return [f"{name}: member {entry.name!r}: points outside the archive"]
        try:
            written = _extract_one(reader, entry, target, entry.size)
        except OSError as exc:
            raise_ours(exc)
            return [f"{name}: member {entry.name!r}: cannot be extracted: {why(exc)}"]
        if written is None:
            return [f"{name}: member {entry.name!r} unpacks to more than the {entry.size} "
                    "bytes its header declares"]
    return []


def _extract_one(reader, entry: Entry, target: Path, budget: int) -> int | None:
    """Bytes written for one member, or None (and no file) when it goes over `budget`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with reader.open(entry) as source, open(target, "xb") as sink:
        written = _copy_limited(source, sink, budget)
    if written is None:
        target.unlink()
    return written


def _copy_limited(source, sink, budget: int) -> int | None:
    """Copy in chunks; None as soon as more than `budget` bytes come out of `source`."""
    written = 0
    while chunk := source.read(CHUNK_BYTES):
        written += len(chunk)
        if written > budget:
            return None
        sink.write(chunk)
    return written
