"""What every kind's files share: reading benchmark and predictions files as people send them
(UTF-8 with or without a byte-order mark, JSON or JSONL, a bounded nesting depth), reports of
their faults kept to a bounded size, and where a file a benchmark names lives.

Plain Python with no Django import. Every fault names the file and the line (JSONL) or entry
(JSON array) it is on.
"""

from __future__ import annotations

import codecs
import errno
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from config import jsontext
from config.text import bounded


class FileFaults(ValueError):
    """A file with faults; `problems` lists every fault found, each naming its place (the
    message shows the first 20)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:20]
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__("\n".join(shown) + more)


class MetaError(FileFaults):
    """A malformed metadata file."""


class ReplyError(ValueError):
    """A judge reply that does not hold a usable answer."""


# Faults of one kind that a report lists; the rest are counted ("... and 99,950 more unknown
# ids"). SUBMISSION_REPORT_MAX_PER_KIND in the site's settings.
MAX_PER_KIND = 50
CHUNK_BYTES = 1024**2
# A predictions line holds one id and its output's path (or answer): 64 KiB is far more than
# any needs, and a longer line is refused before it is parsed or held whole. A JSON array is
# read whole, so the document is bounded instead.
MAX_LINE_CHARS = 64 * 1024
MAX_DOCUMENT_CHARS = 64 * 1024**2


@dataclass
class Problems:
    """A file's faults as they are found, kept to the first `per_kind` of each kind and
    counted past that, so that a file of a million bad lines holds no million messages."""

    per_kind: int = MAX_PER_KIND
    kept: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # kind (a plural noun) -> how many

    def __bool__(self) -> bool:
        return bool(self.counts)

    def add(self, kind: str, message: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.counts[kind] <= self.per_kind:
            self.kept.append(bounded(message))

    def messages(self) -> list[str]:
        return self.kept + [f"... and {n - self.per_kind:,} more {kind}"
                            for kind, n in self.counts.items() if n > self.per_kind]


class PredictionError(FileFaults):
    """A malformed predictions file."""


@dataclass(frozen=True)
class Prediction:
    sample_id: str
    audio_path: str
    where: str  # "line 3" or "entry 2" (both from 1), for messages


def entries(text, name: str, problems: Problems) -> Iterator[tuple[str, object]]:
    """(place, decoded value) for each entry of a JSON array or a JSONL file, from its text
    or a text stream (read line by line: only a JSON array is read whole); faults of JSON
    syntax go to `problems`."""
    stream = io.StringIO(text, newline=None) if isinstance(text, str) else text
    if first_character(stream) == "[":
        document = stream.read(MAX_DOCUMENT_CHARS + 1)
        if len(document) > MAX_DOCUMENT_CHARS:
            raise PredictionError([f"{name}: over {MAX_DOCUMENT_CHARS:,} characters; a JSON "
                                   f"array of predictions is at most that (or use JSONL)"])
        try:
            data = jsontext.loads(document)
        except json.JSONDecodeError as exc:
            raise PredictionError(
                [f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
            ) from None
        yield from ((f"entry {i}", value) for i, value in enumerate(data, start=1))
        return
    for number, line, length in jsontext.bounded_lines(stream, MAX_LINE_CHARS):
        if line is None:
            problems.add("lines over the size limit", f"{name} line {number}: {length:,} "
                         f"characters; a line holds at most {MAX_LINE_CHARS:,}")
            continue
        try:
            yield f"line {number}", jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.add("lines of invalid JSON", f"{name} line {number}: invalid JSON at "
                         f"column {exc.colno}: {exc.msg}")


def first_character(stream) -> str:
    """The stream's first character that is not white space ("" if none), the stream then
    put back at its start."""
    while (character := stream.read(1)) and character.isspace():
        pass
    stream.seek(0)
    return character


@contextmanager
def text_stream(binary) -> Iterator[io.TextIOWrapper]:
    """A binary file read as UTF-8 text (a byte-order mark allowed), lines ending as Python's
    text files end them; the binary file is left open, back at its start."""
    binary.seek(0)
    stream = io.TextIOWrapper(binary, encoding="utf-8-sig", newline=None)
    try:
        yield stream
    finally:
        stream.detach()
        binary.seek(0)


# What a file that is no text often is, by its first bytes: a wrong file given, said as such.
KNOWN_BINARIES = ((b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
                  (b"GIF8", "a GIF image"), (b"%PDF-", "a PDF document"),
                  (b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip file"),
                  (b"RIFF", "a RIFF file (a WAV audio?)"), (b"fLaC", "a FLAC audio file"),
                  (b"ID3", "an MP3 audio file"), (b"OggS", "an Ogg file"),
                  (b"\x7fELF", "a program"), (b"PAR1", "a Parquet file"))


def utf8_problem(binary, name: str) -> str | None:
    """Why a binary file is not UTF-8 text (a byte-order mark allowed), read a chunk at a
    time; None when it is. A file that starts as a known binary kind is named as one. The
    file is put back at its start."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    binary.seek(0)
    head = binary.read(16)
    binary.seek(0)
    kind = next((what for magic, what in KNOWN_BINARIES if head.startswith(magic)), None)
    if kind is not None:
        return f"{name}: {kind}, not a text file of predictions (JSON or JSONL)"
    try:
        while chunk := binary.read(CHUNK_BYTES):
            held = len(decoder.getstate()[0])
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                at = offset - held + exc.start
                return f"{name}: not UTF-8 text ({exc.reason} at byte {at})"
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            at = offset - len(exc.object) + exc.start
            return f"{name}: not UTF-8 text ({exc.reason} at byte {at})"
        return None
    finally:
        binary.seek(0)


def json_document(binary) -> bool:
    """Whether a binary predictions file is one JSON document (an array), which is read whole,
    rather than JSONL, which is read a line at a time. The file is put back at its start."""
    binary.seek(0)
    first = b""
    while not first and (chunk := binary.read(CHUNK_BYTES)):
        first = chunk.removeprefix(codecs.BOM_UTF8 if binary.tell() == len(chunk) else b"") \
            .lstrip(b" \t\r\n\f\v")[:1]
    binary.seek(0)
    return first == b"["


def read_text(path) -> str:
    """A predictions file's UTF-8 text (a byte-order mark allowed); PredictionError when it
    cannot be read."""
    name = os.fspath(path)
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise PredictionError([f"{name}: cannot be read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise PredictionError([f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) \
            from None


def resolve_audio(root: Path, relative: str) -> Path:
    """A path from a metadata or submission file, relative to the audio root unless absolute."""
    if relative.startswith("file://"):
        relative = relative[len("file://"):]
    path = Path(relative)
    return path if path.is_absolute() else root / path




# OSErrors of our own disk or process (a full disk, an I/O error, too many open files), never
# of the upload: raised, so that validation is retried and the upload is not rejected for them.
OUR_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EACCES,
                        errno.EPERM, errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def raise_ours(exc: BaseException) -> None:
    """Raise `exc` again when it is a fault of ours (OUR_ERRNOS), not of the upload."""
    if isinstance(exc, OSError) and exc.errno in OUR_ERRNOS:
        raise exc


def why(exc: BaseException) -> str:
    """An exception's reason without file-system paths, which are not the author's business."""
    text = getattr(exc, "strerror", None) or getattr(exc, "error_string", None) or str(exc)
    return str(text).splitlines()[0][:200] if text else type(exc).__name__


def read_json(path) -> object:
    """A benchmark file's JSON; a file that cannot be read or parsed raises MetaError naming
    the problem (syntax errors by line and column)."""
    name = str(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return jsontext.loads(handle.read())
    except OSError as exc:
        raise MetaError([f"{name}: cannot be read: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise MetaError([f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except json.JSONDecodeError as exc:
        raise MetaError(
            [f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
        ) from None


def show(value) -> str:
    """A value as a message quotes it: JSON, cut to 60 characters."""
    text = json.dumps(value, ensure_ascii=False) if value is not None else "nothing"
    return text if len(text) <= 60 else text[:57] + "..."


def keys_instead(entry: dict, key: str) -> str:
    """What a message adds where an entry lacks `key` altogether: the keys it has, which name
    the mistake (another benchmark's format, a misspelling); nothing where it has the key."""
    if key in entry:
        return ""
    if not entry:
        return " (an empty object)"
    shown = ", ".join(show(k) for k in list(entry)[:6])
    return f" (its keys: {shown}{', ...' if len(entry) > 6 else ''})"
