"""MMAE submission files (SPEC section 2): predictions.json or submission.jsonl.

Plain Python, shared by the `score` command and the upload validation. Every fault names the
file and the line (JSONL) or entry (JSON array) it is on, and the sample id where there is one.
"""

from __future__ import annotations

import codecs
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from scoring import jsontext
from scoring.mmae import _content_parts, _show, audio_url_of

# Faults of one kind that a report lists; the rest are counted ("... and 99,950 more unknown
# ids"). SUBMISSION_REPORT_MAX_PER_KIND in the site's settings.
MAX_PER_KIND = 50
CHUNK_BYTES = 1024**2


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
            self.kept.append(message)

    def messages(self) -> list[str]:
        return self.kept + [f"... and {n - self.per_kind:,} more {kind}"
                            for kind, n in self.counts.items() if n > self.per_kind]


class PredictionError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:20]
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__("\n".join(shown) + more)


@dataclass(frozen=True)
class Prediction:
    sample_id: str
    audio_path: str
    where: str  # "line 3" or "entry 2" (both from 1), for messages


def _entries(text, name: str, problems: Problems) -> Iterator[tuple[str, object]]:
    """(place, decoded value) for each entry of a JSON array or a JSONL file, from its text
    or a text stream (read line by line: only a JSON array is read whole); faults of JSON
    syntax go to `problems`."""
    stream = io.StringIO(text, newline=None) if isinstance(text, str) else text
    if _first_character(stream) == "[":
        try:
            data = jsontext.loads(stream.read())
        except json.JSONDecodeError as exc:
            raise PredictionError(
                [f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
            ) from None
        yield from ((f"entry {i}", value) for i, value in enumerate(data, start=1))
        return
    for number, line in jsontext.lines(stream):
        try:
            yield f"line {number}", jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.add("lines of invalid JSON", f"{name} line {number}: invalid JSON at "
                         f"column {exc.colno}: {exc.msg}")


def _first_character(stream) -> str:
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


def utf8_problem(binary, name: str) -> str | None:
    """Why a binary file is not UTF-8 text (a byte-order mark allowed), read a chunk at a
    time; None when it is. The file is put back at its start."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    binary.seek(0)
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


def _output_path(entry: dict) -> tuple[str | None, str | None]:
    """The edited audio's path of one entry, or (None, why)."""
    if "audio_path" in entry:
        path = entry["audio_path"]
        if not isinstance(path, str) or not path.strip():
            return None, f"'audio_path' must be a non-empty string, got {_show(path)}"
        return path, None
    messages = entry.get("messages")
    if not isinstance(messages, list) or not messages:
        return None, "needs 'audio_path' (submission.jsonl) or 'messages' (predictions.json)"
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant":
        return None, "the last message must be the assistant's turn holding the edited audio"
    urls = [
        audio_url_of(part) for part in _content_parts(last) if part.get("type") == "audio"
    ]
    if len(urls) != 1 or urls[0] is None:
        return None, (
            f"the assistant turn must hold exactly one audio item, found {len(urls)}"
            if len(urls) != 1
            else "the assistant's audio item has no audio_url"
        )
    return urls[0], None


def parse_predictions(text, *, name: str, known_ids: set[str],
                      per_kind: int = MAX_PER_KIND) -> list[Prediction]:
    """Check a submission file's text (or text stream) against the benchmark's ids; raise
    naming its faults, the first `per_kind` of each kind and how many more."""
    problems = Problems(per_kind)
    predictions: list[Prediction] = []
    first_place: dict[str, str] = {}
    seen = 0
    for place, value in _entries(text, name, problems):
        seen += 1
        if not isinstance(value, dict):
            problems.add("entries that are not objects",
                         f"{name} {place}: must be a JSON object, got {_show(value)}")
            continue
        sample_id = value.get("id")
        if not isinstance(sample_id, str) or not sample_id:
            problems.add("entries without an id", f"{name} {place}: 'id' must be a non-empty "
                         f"string, got {_show(sample_id)}")
            continue
        path, why = _output_path(value)
        if why:
            problems.add("entries without an output",
                         f"{name} {place} (id {sample_id}): {why}")
            continue
        if sample_id not in known_ids:
            problems.add("unknown ids", f"{name} {place}: unknown id {sample_id!r} (not in the "
                         "benchmark)")
            continue
        if sample_id in first_place:
            problems.add("duplicate ids", f"{name} {place}: duplicate id {sample_id!r}, first "
                         f"on {first_place[sample_id]}")
            continue
        first_place[sample_id] = place
        predictions.append(Prediction(sample_id=sample_id, audio_path=path, where=place))
    if not seen and not problems:
        raise PredictionError([f"{name}: the file holds no predictions"])
    if problems:
        raise PredictionError(problems.messages())
    return predictions


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


def load_predictions(path, *, known_ids: set[str]) -> list[Prediction]:
    return parse_predictions(read_text(path), name=os.fspath(path), known_ids=known_ids)


def resolve_audio(root: Path, relative: str) -> Path:
    """A path from a metadata or submission file, relative to the audio root unless absolute."""
    if relative.startswith("file://"):
        relative = relative[len("file://"):]
    path = Path(relative)
    return path if path.is_absolute() else root / path


def check_audio(path: Path) -> str | None:
    """None when the file is a readable, non-empty audio file, else why it is not."""
    import soundfile

    if not path.is_file():
        return "file not found"
    try:
        info = soundfile.info(str(path))
    except Exception as exc:  # libsndfile's faults come as several exception types
        return f"unreadable audio: {str(exc).splitlines()[0][:200]}"
    if info.frames == 0:
        return "empty audio (no frames)"
    return None
