"""Upload validation of a submission (SPEC section 2), with no database access.

An upload is a predictions file (predictions.json or submission.jsonl) plus an archive (.zip or
.tar.gz) of the edited audio, or one archive holding both. The archive is listed and checked
whole, and the predictions read (beside it or from inside it), before anything is written; then
only the members the predictions name are extracted into `audio_dir`, counting the bytes
actually written since headers can lie. Every problem names the file and the entry, and the
sample id where there is one. Input audio always comes from the benchmark, never from here.

Zip bombs are refused from the headers: by the total and each output's declared size, and by
the compression ratio of the outputs taken together (unpacked bytes over compressed bytes; for
a .tar.gz, over the whole archive). Real WAV and FLAC deflate by well under 2:1, and a few
outputs of digital silence (about 1000:1) among real ones leave the whole far below the limit
(SUBMISSION_MAX_COMPRESSION_RATIO, 20 by default); outputs that unpack to less than
SUBMISSION_COMPRESSION_FLOOR_BYTES are never refused for their ratio. An upload made mostly of
silence can be sent as a zip that stores its members (`zip -0`): a ratio of 1.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from scoring.kinds.base import OutputFormat
from scoring.kinds.files import (
    Prediction,
    PredictionError,
    json_document,
    raise_ours,
    text_stream,
    utf8_problem,
    why,
)

# A real predictions file is a few MB; this only keeps a hostile one from filling memory.
MAX_PREDICTIONS_BYTES = 256 * 1024**2
CHUNK_BYTES = 1024**2
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
SHOWN = 5  # file names a message or the report lists before "..."
NOTHING_UPLOADED = ("nothing uploaded: send a predictions file and an archive of the edited "
                    "audio, or one archive holding both")


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


def limits_for(config) -> Limits:
    """The site's upload limits, narrowed to what the judge config's servers accept."""
    limits = limits_from_settings()
    if config is not None and config.max_audio_seconds < limits.max_audio_seconds:
        limits = dataclasses.replace(
            limits, max_audio_seconds=config.max_audio_seconds,
            audio_limit_source=f"the longest audio judge config {config.name} accepts")
    return limits


def limits_from_settings() -> Limits:
    return Limits(max_files=settings.SUBMISSION_MAX_FILES,
                  max_unpacked_bytes=settings.SUBMISSION_MAX_UNPACKED_BYTES,
                  max_audio_seconds=float(settings.SUBMISSION_MAX_AUDIO_SECONDS),
                  max_output_bytes=settings.SUBMISSION_MAX_OUTPUT_BYTES,
                  max_sample_rate=settings.SUBMISSION_MAX_SAMPLE_RATE,
                  max_channels=settings.SUBMISSION_MAX_CHANNELS,
                  max_ratio=float(settings.SUBMISSION_MAX_COMPRESSION_RATIO),
                  ratio_floor_bytes=settings.SUBMISSION_COMPRESSION_FLOOR_BYTES)


@dataclass
class ValidationResult:
    errors: list[str] = field(default_factory=list)  # any error rejects the whole submission
    outputs: dict[str, str] = field(default_factory=dict)  # key -> path relative to audio_dir
    missing: dict[str, str] = field(default_factory=dict)  # key -> why it has no output
    warnings: list[str] = field(default_factory=list)
    n_items: int = 0
    ignored: list[str] = field(default_factory=list)  # archive files no prediction names


    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def coverage(self) -> float:
        return len(self.outputs) / self.n_items if self.n_items else 0.0

    def report(self) -> dict:
        return {"errors": list(self.errors), "warnings": list(self.warnings),
                "missing": dict(self.missing), "n_items": self.n_items,
                "n_outputs": len(self.outputs), "coverage": self.coverage,
                "ignored": {"count": len(self.ignored), "first": self.ignored[:SHOWN]}}


def validate_upload(*, item_keys: list[str], predictions: Path | None, archive: Path | None,
                    audio_dir: Path, limits: Limits, outputs: OutputFormat) -> ValidationResult:
    """Check an upload of a kind whose outputs are files (`outputs`: its predictions reader and
    its check of one output), extracting into the empty folder `audio_dir` the archive's
    members that the predictions name, once every check that headers allow has passed."""
    result = ValidationResult(n_items=len(item_keys))
    if predictions is None and archive is None:
        result.errors.append(NOTHING_UPLOADED)
        return result
    # Faults of a predictions file beside the archive are listed after the archive's.
    faults: list[str] = []
    source = _Source(name=predictions.name, path=predictions) if predictions else None
    parsed = _read_responses(source, item_keys, outputs.entries, faults) if source \
        else None
    if archive is None:
        result.errors.extend(faults)
        if parsed is not None:
            _match_outputs(parsed, source, None, result)
            _summarise(item_keys, parsed, None, result)
        return result
    try:
        with _open_archive(archive) as reader:
            if reader is None:
                result.errors.append(f"{archive.name}: not a .zip or .tar.gz archive")
            else:
                _from_archive(reader, archive=archive, audio_dir=audio_dir, limits=limits,
                              item_keys=item_keys, source=source, parsed=parsed, result=result,
                              outputs=outputs)
    except _ArchiveRefused as exc:
        result.errors.append(f"{archive.name}: {exc}")
    except ARCHIVE_ERRORS as exc:
        raise_ours(exc)
        result.errors.append(f"{archive.name}: damaged archive: {why(exc)}")
    result.errors.extend(faults)
    return result


def _from_archive(reader, *, archive: Path, audio_dir: Path, limits: Limits,
                  item_keys: list[str], source: _Source | None,
                  parsed: list[Prediction] | None, result: ValidationResult,
                  outputs: OutputFormat) -> None:
    """List and check the archive, read the predictions from it when they are not beside it,
    check what the headers declare, then extract the named members and check their audio."""
    listing = _list_archive(reader, archive, limits, result.errors)
    if listing is None:
        return
    if source is None:
        source = _predictions_inside(listing, outputs.names, result.errors)
        if source is None:
            return
        parsed = _read_responses(source, item_keys, outputs.entries, result.errors, reader)
    if parsed is None:
        return
    _match_outputs(parsed, source, listing, result)
    if result.errors:
        return
    wanted = {*result.outputs.values(), source.member}
    chosen = [p for p in listing.files if p in wanted]  # in the archive's order
    result.errors.extend(_none_named(parsed, source, listing) if not result.outputs else
                         _declared_problems(parsed, source, listing, chosen, limits, result))
    if not result.errors:
        result.errors.extend(_extract(reader, [listing.files[p] for p in chosen], audio_dir,
                                      listing.name))
    if result.errors:
        return
    _check_outputs(parsed, source, audio_dir, outputs.check_file, limits, result)
    result.ignored = [p for p in listing.files if p not in wanted]
    _summarise(item_keys, parsed, listing, result)


# --- the archive ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    name: str  # as the archive stores it
    kind: str  # "file", "dir", "link", "special" or "encrypted"
    size: int  # declared unpacked size
    handle: object  # ZipInfo or TarInfo
    packed: int | None = None  # declared compressed size (zip); a tar.gz compresses as a whole


@dataclass(frozen=True)
class _Listing:
    name: str  # the archive's file name, for messages
    files: dict[str, _Entry]  # regular files by normalised path, in the archive's order
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

    def entries(self) -> Iterator[_Entry]:
        self.archive = zipfile.ZipFile(self.path)
        for info in self.archive.infolist():
            yield _Entry(info.filename, _zip_kind(info), info.file_size, info, info.compress_size)

    def open(self, entry: _Entry):
        return self.archive.open(entry.handle)

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()


class _ArchiveRefused(tarfile.ReadError):
    """An archive refused for its shape rather than for damage."""


class _BoundedTarInfo(tarfile.TarInfo):
    """Refuses an oversized metadata header, which tarfile would read into memory whole."""

    META_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, *tarfile.GNU_TYPES)

    def _proc_member(self, archive):  # the extension point tarfile documents for subclasses
        if self.type in self.META_TYPES and self.size > MAX_TAR_HEADER_BYTES:
            raise _ArchiveRefused(f"member {self.name!r}: a {self.size}-byte tar metadata "
                                  f"header, above the limit of {MAX_TAR_HEADER_BYTES}")
        return super()._proc_member(archive)


class _TarReader:
    """A gzip-compressed tar, listed lazily so that a listing can stop at the first excess."""

    declared_members = directory_bytes = 0  # unknown until listed

    def __init__(self, path: Path):
        self.archive = tarfile.open(path, mode="r:gz", tarinfo=_BoundedTarInfo)

    def entries(self) -> Iterator[_Entry]:
        while (info := self.archive.next()) is not None:
            yield _Entry(info.name, _tar_kind(info), info.size, info)

    def open(self, entry: _Entry):
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
    except _ArchiveRefused:
        raise
    except (tarfile.ReadError, EOFError, OSError, zlib.error) as exc:
        raise_ours(exc)
        return None  # gzip, but not a tar inside


@contextmanager
def _open_archive(path: Path):
    reader = _reader_for(path)
    try:
        yield reader
    finally:
        if reader is not None:
            reader.close()


def _list_archive(reader, archive: Path, limits: Limits, errors: list[str]) -> _Listing | None:
    """The archive's files, or None (with the errors added) when it is refused."""
    entries, problems = _list_entries(reader, archive.name, limits)
    errors.extend(problems)
    if problems:
        return None
    files = {p: e for e in entries if e.kind == "file" and (p := _member_path(e.name))}
    return _Listing(name=archive.name, files=files, wrapper=_wrapper(frozenset(files)),
                    archive_bytes=archive.stat().st_size)


def _list_entries(reader, name: str, limits: Limits) -> tuple[list[_Entry], list[str]]:
    """Every entry and every reason to refuse the archive, found before extracting anything."""
    entries: list[_Entry] = []
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


def _entry_problems(entry: _Entry, name: str, seen: set[str]) -> list[str]:
    where = f"{name}: member {entry.name!r}"
    path = _member_path(entry.name)
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


def _unsafe(path: str) -> bool:
    """Absolute (either convention), or with a '..' part: it could land outside the archive."""
    return ("\0" in path or path.startswith(("/", "\\")) or bool(re.match(r"[A-Za-z]:", path))
            or ".." in re.split(r"[/\\]", path))


def _member_path(name: str) -> str | None:
    """A member's normalised relative path; "" for the root itself; None when unsafe."""
    if _unsafe(name):
        return None
    normal = posixpath.normpath(name) if name else "."
    return "" if normal == "." else normal


def _wrapper(files: frozenset[str]) -> str | None:
    tops = {f.split("/", 1)[0] for f in files} - ARCHIVER_FOLDERS
    if len(tops) != 1:
        return None
    top = tops.pop()
    return top if top not in files else None


def _extract(reader, entries: list[_Entry], audio_dir: Path, name: str) -> list[str]:
    """Extract these members one at a time; stop at the first problem, returned as its
    message. A member cannot write more than its header declares."""
    root = audio_dir.resolve()
    for entry in entries:
        target = (root / _member_path(entry.name)).resolve()
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


def _extract_one(reader, entry: _Entry, target: Path, budget: int) -> int | None:
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


# --- the predictions file ------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    name: str  # for messages
    path: Path | None = None  # beside the archive
    entry: _Entry | None = None  # or inside it

    @property
    def member(self) -> str | None:
        """Its path inside the archive, when it came in one."""
        return _member_path(self.entry.name) if self.entry else None

    @property
    def folder(self) -> str | None:
        return posixpath.dirname(self.member) if self.member else None


def _predictions_inside(listing: _Listing, names: tuple[str, ...],
                        errors: list[str]) -> _Source | None:
    found = sorted(f for f in listing.files if posixpath.basename(f) in names)
    if len(found) == 1:
        return _Source(name=found[0], entry=listing.files[found[0]])
    if found:
        errors.append(f"{listing.name}: holds {len(found)} predictions files "
                      f"({', '.join(found)}): keep exactly one")
    else:
        errors.append(f"{listing.name}: holds no {' or '.join(names)}; put one in the "
                      "archive or upload it beside the archive")
    return None


def _prediction_place(source: _Source, prediction: Prediction) -> str:
    return f"{source.name} {prediction.where} (id {prediction.sample_id})"


def _archive_path(raw: str) -> str | None:
    """A prediction's path normalised inside the archive, or None when it points outside."""
    path = raw.removeprefix("file://")
    return None if _unsafe(path) else posixpath.normpath(path)


def _locate(path: str, source: _Source, listing: _Listing | None) -> str | None:
    """The archive file a prediction names: from the archive's root, from its one top-level
    folder, or from the predictions file's own folder, in that order."""
    if listing is None:
        return None
    bases = ["", listing.wrapper or "", source.folder or ""]
    found = (posixpath.normpath(posixpath.join(base, path)) for base in bases)
    return next((f for f in found if f in listing.files), None)


def _match_outputs(parsed: list[Prediction], source: _Source, listing: _Listing | None,
                   result: ValidationResult) -> None:
    for prediction in parsed:
        raw = prediction.audio_path
        path = _archive_path(raw)
        found = _locate(path, source, listing) if path is not None else None
        if path is None:
            result.errors.append(f"{_prediction_place(source, prediction)}: {raw!r}: paths "
                                 "outside the archive are not allowed")
        elif found:
            result.outputs[prediction.sample_id] = found
        else:
            result.missing[prediction.sample_id] = f"{raw}: file not in the archive"


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")


def _none_named(parsed: list[Prediction], source: _Source, listing: _Listing) -> list[str]:
    held = [f for f in listing.files if f != source.member]
    holds = _shown(held) + (f" ({len(held)} files)" if len(held) > SHOWN else "") if held \
        else "no other file"
    return [f"{listing.name}: holds none of the {len(parsed)} output files the predictions "
            f"name: they name {_shown([p.audio_path for p in parsed])}; the archive holds "
            f"{holds}"]


def _declared_problems(parsed: list[Prediction], source: _Source, listing: _Listing,
                       chosen: list[str], limits: Limits, result: ValidationResult) -> list[str]:
    """What the headers of the members to extract tell before a byte is written: outputs
    above the size limit, and a compression ratio no real audio has (see the module's doc)."""
    problems = []
    for prediction in parsed:
        relative = result.outputs.get(prediction.sample_id)
        size = listing.files[relative].size if relative else 0
        if size > limits.max_output_bytes:
            problems.append(f"{_prediction_place(source, prediction)}: {relative}: {size} "
                            f"bytes, above the limit of {limits.max_output_bytes} bytes")
    unpacked = sum(listing.files[p].size for p in chosen)
    packed = listing.packed_bytes(chosen)
    if unpacked > limits.ratio_floor_bytes and unpacked > limits.max_ratio * packed:
        problems.append(
            f"{listing.name}: its outputs unpack to {unpacked} bytes from {packed} compressed "
            f"bytes, {unpacked // max(packed, 1)} times as many, above the limit of "
            f"{limits.max_ratio:g} (a zip bomb, or mostly digital silence: store such files "
            "uncompressed, as zip -0 does)")
    return problems


# --- the audio files -----------------------------------------------------------------------


def _check_outputs(parsed: list[Prediction], source: _Source, audio_dir: Path, check,
                   limits: Limits, result: ValidationResult) -> None:
    for prediction in parsed:
        relative = result.outputs.get(prediction.sample_id)
        if relative is None:
            continue
        problem = check(audio_dir / relative, limits)
        if problem:
            result.errors.append(f"{_prediction_place(source, prediction)}: {relative}: "
                                 f"{problem}")


# --- summary -------------------------------------------------------------------------------


def _summarise(item_keys: list[str], parsed: list[Prediction], listing: _Listing | None,
               result: ValidationResult) -> None:
    predicted = {p.sample_id for p in parsed}
    why = {**result.missing, **{k: "no prediction" for k in item_keys if k not in predicted}}
    result.missing = {k: why[k] for k in item_keys if k in why}
    result.outputs = {k: result.outputs[k] for k in item_keys if k in result.outputs}
    if listing is None:
        result.warnings.append(f"no archive uploaded: none of the {len(parsed)} predictions "
                               "has its audio, so every item counts as missing")
    elif result.ignored:
        result.warnings.append(f"{listing.name}: {len(result.ignored)} file(s) not named by "
                               f"any prediction were ignored ({_shown(result.ignored)})")
    if result.missing:
        result.warnings.append(f"{len(result.missing)} of {result.n_items} items have no "
                               "output and will score 0 on every rubric")


# --- text predictions (kinds judged on text, e.g. AIR-Bench) --------------------------------


def validate_responses(*, item_keys: list[str], predictions: Path | None, archive: Path | None,
                       parse) -> ValidationResult:
    """Check a predictions file of text responses with the kind's `parse(text, name=,
    known_ids=)` -> {key: response}; there is no audio to check. Items without a response
    are missing."""
    result = ValidationResult(n_items=len(item_keys))
    if archive is not None:
        result.errors.append(f"{archive.name}: this benchmark takes a predictions file of text "
                             "responses only, no archive")
    if predictions is None:
        result.errors.append("no predictions file uploaded")
        return result
    responses = _read_responses(_Source(name=predictions.name, path=predictions), item_keys,
                                parse, result.errors)
    if responses is None or result.errors:
        return result
    result.outputs = {k: responses[k] for k in item_keys if k in responses}
    result.missing = {k: "no prediction" for k in item_keys if k not in responses}
    if result.missing:
        result.warnings.append(f"{len(result.missing)} of {result.n_items} items have no "
                               "response and count as unanswered")
    return result


def _read_responses(source: _Source, item_keys: list[str], parse, errors: list[str],
                    reader=None):
    """`parse` of a predictions file's UTF-8 text (a BOM allowed), beside the archive or read
    from it by `reader` without writing it out, streamed a line at a time (JSONL); None with
    `errors` told why when it is too large, unreadable or malformed."""
    try:
        with _predictions_file(source, reader) as binary:
            problem = predictions_problem(binary, source.name, _size(source))
            if problem:
                errors.append(problem)
                return None
            with text_stream(binary) as text:
                return parse(text, name=source.name, known_ids=set(item_keys),
                             per_kind=settings.SUBMISSION_REPORT_MAX_PER_KIND)
    except OSError as exc:
        raise_ours(exc)
        errors.append(f"{source.name}: cannot be read: {why(exc)}")
    except PredictionError as exc:
        errors.extend(exc.problems)
    return None


def predictions_problem(binary, name: str, size: int) -> str | None:
    """What refuses a predictions file before it is parsed: its size (one JSON document is
    read whole, so it has the lower limit), or text that is not UTF-8."""
    if size > MAX_PREDICTIONS_BYTES:
        return f"{name}: larger than {MAX_PREDICTIONS_BYTES} bytes"
    limit = settings.SUBMISSION_MAX_PREDICTIONS_BYTES
    if size > limit and json_document(binary):
        return (f"{name}: a JSON document of {size} bytes, above the limit of {limit} for "
                "one read whole: send it as JSONL (submission.jsonl, one prediction a line), "
                "which is read a line at a time")
    return utf8_problem(binary, name)


def _size(source: _Source) -> int:
    return source.path.stat().st_size if source.path is not None else source.entry.size


@contextmanager
def _predictions_file(source: _Source, reader):
    """The predictions file opened for reading in binary (a member of an archive yields no
    more than its header declares)."""
    if source.path is not None:
        with open(source.path, "rb") as handle:
            yield handle
        return
    with reader.open(source.entry) as handle:
        yield handle
