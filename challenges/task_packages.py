"""The task package of a phase board: what a participant needs to make their outputs, and
nothing of how they are judged.

A zip of `README.txt` (the challenge, phase, track, its rules and attestations, the dates and
the upload's format), `items.jsonl` (one line per item: its id, its instruction, its turns
with only their text and input audio, the paths of its input audio in the package, and the
item dimensions the phase releases, `Phase.released_dimensions`) and `inputs/<id>/inputN.<ext>`
(the input audio, in the order the instruction names them: `<audio input1>` is input1).

Never in it: rubric texts (scoring.Criterion), their choices, verdicts, judge replies, and any
other field of an item's stored content (MMAE's tags included): the turns are rebuilt from
their text and audio parts only. Built once per benchmark and what goes in it (a digest of the
benchmark's file, the released dimensions and the README), kept under MEDIA_ROOT, and sent
from there."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tempfile
import zipfile
from pathlib import Path

from django.conf import settings

from challenges.models import PhaseBoard
from scoring import media
from scoring.kinds import get_kind
from scoring.kinds.base import ItemRows
from scoring.kinds.files import resolve_audio
from scoring.models import Item

FORMAT = 1  # raised when what goes in a package changes, so that none built before is sent
FOLDER = "challenges/task-packages"
ROLES = ("system", "user", "assistant")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "item"


def _audio_url(part: dict) -> str | None:
    url = part.get("audio_url")
    if isinstance(url, dict):
        url = url.get("url")
    return url if isinstance(url, str) and url else None


def _parts(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content or [] if isinstance(part, dict)]


def _turns(content: dict, inputs: dict[str, str]) -> list[dict]:
    """An item's turns with their text and input audio only (audio at its package path)."""
    turns = []
    for message in content.get("messages") or []:
        if not isinstance(message, dict) or message.get("role", "user") not in ROLES:
            continue
        parts = []
        for part in _parts(message):
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append({"type": "text", "text": part["text"]})
            elif part.get("type") == "audio" and _audio_url(part) in inputs:
                parts.append({"type": "audio", "audio_url": inputs[_audio_url(part)]})
        turns.append({"role": message.get("role", "user"), "content": parts})
    return turns


def item_line(item: Item, kind, released: list[str]) -> tuple[dict, list[tuple[str, str]]]:
    """An item as items.jsonl gives it, and its input audio: [(stored path, package path)]."""
    folder = f"inputs/{_safe(item.key)}"
    inputs: dict[str, str] = {}
    for number, path in enumerate(item.media, start=1):
        inputs.setdefault(path, f"{folder}/input{number}{Path(path).suffix.lower() or '.wav'}")
    rows = ItemRows(key=item.key, dimensions=item.dimensions, content=item.content,
                    media=item.media, criteria=[])  # the instruction needs no rubric
    line = {"id": item.key, "instruction": "\n".join(kind.item_text(rows)),
            "input_audio": list(inputs.values())}
    if "messages" in item.content:
        line["messages"] = _turns(item.content, inputs)
    dimensions = {key: item.dimensions[key] for key in released if key in item.dimensions}
    if dimensions:
        line["dimensions"] = dimensions
    return line, list(inputs.items())


def readme(board: PhaseBoard) -> str:
    phase, track, challenge = board.phase, board.track, board.phase.challenge
    lines = [f"{challenge.title}: {phase.name}, {track.name} track", "",
             f"Opens {phase.opens_at:%Y-%m-%d %H:%M:%S} UTC, closes "
             f"{phase.closes_at:%Y-%m-%d %H:%M:%S} UTC (organizers' time zone: "
             f"{challenge.time_zone}).",
             f"{board.benchmark.n_items} items.", ""]
    if track.rules.strip():
        lines += ["Rules of the track:", track.rules.strip(), ""]
    if track.attestations:
        lines += ["Your team attested:", *[f"- {a}" for a in track.attestations], ""]
    lines += [
        "Files:",
        "- items.jsonl: one item a line: id, instruction, messages (the turns, their text and",
        "  input audio only), input_audio (paths in this package)"
        + (", dimensions" if phase.released_dimensions else "") + ".",
        "- inputs/<id>/inputN.<ext>: the input audio; <audio inputN> in an instruction is",
        "  inputN.",
        "",
        "Upload a JSONL manifest, one line per item:",
        '  {"id": "<id>", "audio_path": "audio/<id>.wav"}',
        "with a .zip or .tar.gz of the output audio (or one archive holding both), on the",
        "track's upload page or through the API (your team's page lists both).",
        "An item without an output scores 0.",
    ]
    return "\n".join(lines) + "\n"


def _digest(board: PhaseBoard, text: str) -> str:
    parts = json.dumps([FORMAT, board.benchmark.sha256, board.benchmark.pk,
                        sorted(board.phase.released_dimensions or []), text])
    return hashlib.sha256(parts.encode()).hexdigest()[:24]


def package_path(board: PhaseBoard) -> Path:
    """The board's task package, built the first time it is asked for (one builder at a time;
    the others wait for its file)."""
    text = readme(board)
    folder = Path(settings.MEDIA_ROOT) / FOLDER
    path = folder / f"{board.benchmark.pk}-{_digest(board, text)}.zip"
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{board.benchmark.pk}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            _build(board, text, path)
    return path


def _build(board: PhaseBoard, text: str, path: Path) -> None:
    benchmark = board.benchmark
    kind = get_kind(benchmark.kind)
    released = [d for d in board.phase.released_dimensions or [] if d in kind.dimension_keys]
    root = media.local_root(benchmark.audio_root) if benchmark.audio_root else None
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out, zipfile.ZipFile(out, "w") as package:
            package.writestr("README.txt", text, compress_type=zipfile.ZIP_DEFLATED)
            lines, audio = [], []
            # The items' own fields only: their criteria (the rubrics) are never read here.
            for item in Item.objects.filter(benchmark=benchmark).order_by("position") \
                    .only("key", "dimensions", "content", "media"):
                line, files = item_line(item, kind, released)
                lines.append(json.dumps(line, ensure_ascii=False))
                audio.extend(files)
            package.writestr("items.jsonl", "\n".join(lines) + "\n",
                             compress_type=zipfile.ZIP_DEFLATED)
            if root is not None:
                for stored, inside in audio:
                    package.write(resolve_audio(root, stored), inside,
                                  compress_type=zipfile.ZIP_STORED)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
