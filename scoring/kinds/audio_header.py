"""The `score` command's check of an output file: there, readable as audio, not empty. It reads
the header alone. A PCM WAV (most systems' outputs) is read by the standard library's `wave`,
so that `score` does not import numpy and libsndfile (about 50 ms) before its first query;
anything else is read by libsndfile, as the judge's own checks read it. Both give the same
verdict on a PCM WAV (tests/scoring/test_audio_header.py holds them to it): the frame count is
the data chunk's, cut to the bytes the file holds, as libsndfile cuts it.
"""

from __future__ import annotations

import os
import wave
from pathlib import Path

EMPTY = "empty audio (no frames)"
PCM_WIDTHS = {1, 2, 3, 4}  # bytes per sample that libsndfile reads as PCM


def check_audio(path: Path) -> str | None:
    """None when the file is a readable, non-empty audio file, else why it is not."""
    if not path.is_file():
        return "file not found"
    frames = _pcm_wav_frames(path)
    if frames is None:
        return _libsndfile_problem(path)
    return EMPTY if frames == 0 else None


def _pcm_wav_frames(path: Path) -> int | None:
    """The frames of a plain PCM WAV that `wave` reads, or None to ask libsndfile."""
    try:
        with open(path, "rb") as file, wave.open(file) as audio:
            # wave stops at the data chunk's header: what follows is the audio.
            start = file.tell()
            width, channels = audio.getsampwidth(), audio.getnchannels()
            if width not in PCM_WIDTHS or channels < 1 or audio.getframerate() < 1:
                return None
            held = (os.fstat(file.fileno()).st_size - start) // (width * channels)
            return min(audio.getnframes(), held)
    except (wave.Error, EOFError, ValueError):  # not a PCM WAV: libsndfile says what it is
        return None


def _libsndfile_problem(path: Path) -> str | None:
    import soundfile

    try:
        info = soundfile.info(str(path))
    except Exception as exc:  # libsndfile's faults come as several exception types
        return f"unreadable audio: {str(exc).splitlines()[0][:200]}"
    return EMPTY if info.frames == 0 else None
