"""MMAE submission files (SPEC section 2): predictions.json or submission.jsonl.

Plain Python, shared by the `score` command and the upload validation. Every fault names the
file and the line (JSONL) or entry (JSON array) it is on, and the sample id where there is one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from scoring.mmae import _content_parts, _show, audio_url_of


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
    where: str  # "line 3" or "entry 2", for messages


def _entries(text: str, name: str) -> list[tuple[str, object]]:
    """(place, decoded value) for each entry of a JSON array or a JSONL file."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PredictionError(
                [f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]
            ) from None
        return [(f"entry {i}", value) for i, value in enumerate(data)]
    entries = []
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            problems.append(f"{name} line {number}: invalid JSON at column {exc.colno}: {exc.msg}")
    if problems:
        raise PredictionError(problems)
    return entries


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


def parse_predictions(text: str, *, name: str, known_ids: set[str]) -> list[Prediction]:
    """Check a submission file's text against the benchmark's ids; raise naming every fault."""
    problems: list[str] = []
    predictions: list[Prediction] = []
    first_place: dict[str, str] = {}
    entries = _entries(text, name)
    if not entries:
        raise PredictionError([f"{name}: the file holds no predictions"])
    for place, value in entries:
        if not isinstance(value, dict):
            problems.append(f"{name} {place}: must be a JSON object, got {_show(value)}")
            continue
        sample_id = value.get("id")
        if not isinstance(sample_id, str) or not sample_id:
            problems.append(f"{name} {place}: 'id' must be a non-empty string, got "
                            f"{_show(sample_id)}")
            continue
        path, why = _output_path(value)
        if why:
            problems.append(f"{name} {place} (id {sample_id}): {why}")
            continue
        if sample_id not in known_ids:
            problems.append(f"{name} {place}: unknown id {sample_id!r} (not in the benchmark)")
            continue
        if sample_id in first_place:
            problems.append(f"{name} {place}: duplicate id {sample_id!r}, first on "
                            f"{first_place[sample_id]}")
            continue
        first_place[sample_id] = place
        predictions.append(Prediction(sample_id=sample_id, audio_path=path, where=place))
    if problems:
        raise PredictionError(problems)
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
