"""Where the spectrogram images of a benchmark's inputs and a submission's outputs are kept,
and their drawing (scoring.spectrograms does the arithmetic), once per audio.

They live in the default storage beside the audio they show, at names derived from ids and
item keys (never from an upload's paths):

- an input's: `benchmarks/<benchmark id>/spectrograms/<item>/input<N>.png`;
- an output's: `<folder>/<item>/output.png`, and `<folder>/<item>/diff.png` when the output
  has the length of one of the item's inputs (the first such), where `<folder>` is the
  submission's `spectrograms/` beside its `audio/`.

Each folder's `drawn.json`, written once every image of it is, says which images exist:
until it is there the pages say "spectrogram being drawn". Drawing is idempotent: a folder
with its `drawn.json` is left alone, and an image already stored is not drawn again (a
drawing cut short resumes where it stopped; an output's image is written after its
difference, so that an output's image that is there means its difference was decided).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from pathlib import Path

import soundfile
from django.conf import settings
from django.core.files.storage import storages

from scoring import media
from scoring.kinds import get_kind
from scoring.kinds.files import resolve_audio
from scoring.spectrograms import (
    SAME_LENGTH_SECONDS,
    Spectrogram,
    difference_png,
    spectrogram,
    spectrogram_png,
)

log = logging.getLogger(__name__)

MANIFEST = "drawn.json"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def key_folder(key: str) -> str:
    """An item's folder name: its key when that is a plain file name, else a hash of it."""
    if _PLAIN_KEY.fullmatch(key) and ".." not in key:
        return key
    return "k-" + hashlib.sha256(key.encode()).hexdigest()[:32]


def inputs_folder(benchmark) -> Path:
    return Path(settings.MEDIA_ROOT) / "benchmarks" / str(benchmark.pk) / "spectrograms"


def image_path(folder: Path, key: str, which: str) -> Path:
    """`which`: "output", "diff" or "input<N>"."""
    return folder / key_folder(key) / f"{which}.png"


def drawn(folder: Path) -> dict | None:
    """What the folder's drawing left ({item key: ...}), or None while it is not finished."""
    path = media.stored_file(folder / MANIFEST)
    if path is None:
        return None
    return json.loads(path.read_text())


def image_file(folder: Path, key: str, which: str) -> Path | None:
    """This machine's copy of a stored image, or None when there is none (yet)."""
    return media.stored_file(image_path(folder, key, which))


def _exists(path: Path) -> bool:
    return storages["default"].exists(media.storage_name(path))


def _save(data: bytes, path: Path) -> None:
    media.file_save(io.BytesIO(data), path)


def _draw(audio: Path) -> Spectrogram | None:
    try:
        return spectrogram(audio)
    except (soundfile.LibsndfileError, RuntimeError, ValueError) as exc:
        log.warning("%s: no spectrogram: %s", audio, exc)
        return None


def draw_inputs(benchmark) -> int:
    """Draw every input audio of a benchmark not drawn yet; the number of images drawn."""
    folder = inputs_folder(benchmark)
    if not benchmark.audio_root or drawn(folder) is not None:
        return 0
    root = Path(benchmark.audio_root).resolve()
    found, count = {}, 0
    for key, paths in benchmark.items.order_by("position").values_list("key", "media"):
        numbers = []
        for number, relative in enumerate(paths, start=1):
            target = image_path(folder, key, f"input{number}")
            audio = resolve_audio(root, relative).resolve()
            if _exists(target):
                numbers.append(number)
                continue
            if not (audio.is_relative_to(root) and audio.is_file()):
                continue
            spec = _draw(audio)
            if spec is not None:
                _save(spectrogram_png(spec), target)
                numbers.append(number)
                count += 1
        found[key] = numbers
    _save(json.dumps(found).encode(), folder / MANIFEST)
    return count


def draw_outputs(*, run, benchmark, folder: Path) -> int:
    """Draw every output audio of a run not drawn yet into `folder`, each with its difference
    from the first of its item's inputs of the same length; the number of outputs drawn."""
    if not get_kind(benchmark.kind).outputs.files or drawn(folder) is not None:
        return 0
    root = Path(benchmark.audio_root).resolve() if benchmark.audio_root else None
    media_of = dict(benchmark.items.values_list("key", "media"))
    found, count = {}, 0
    for key in sorted(run.outputs):
        target = image_path(folder, key, "output")
        if _exists(target):
            found[key] = {"diff": _exists(image_path(folder, key, "diff"))}
            continue
        audio = media.output_path(run.audio_root, run.outputs[key], run.digests.get(key))
        spec = None if audio is None or not audio.is_file() else _draw(audio)
        if spec is None:
            continue
        diff = _difference(spec, root, media_of.get(key, []))
        if diff is not None:
            _save(diff, image_path(folder, key, "diff"))
        _save(spectrogram_png(spec), target)
        found[key] = {"diff": diff is not None}
        count += 1
    _save(json.dumps(found).encode(), folder / MANIFEST)
    return count


def _difference(output: Spectrogram, root: Path | None, inputs: list[str]) -> bytes | None:
    """The difference from the first input of the output's length, or None."""
    if root is None:
        return None
    for relative in inputs:
        audio = resolve_audio(root, relative).resolve()
        if not (audio.is_relative_to(root) and audio.is_file()):
            continue
        try:
            info = soundfile.info(str(audio))
        except (soundfile.LibsndfileError, RuntimeError) as exc:
            log.warning("%s: not compared: %s", audio, exc)
            continue
        if abs(info.frames / info.samplerate - output.seconds) > SAME_LENGTH_SECONDS:
            continue
        source = _draw(audio)
        if source is not None:
            return difference_png(output, source)
    return None
