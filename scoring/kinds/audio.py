"""Checks of audio files that a kind's outputs are, with the limits passed in: a format the judge
decodes (WAV or FLAC), a sample rate, channels and a length within limits, decodable to its
real end (libsndfile stops at the length a WAV or FLAC header declares; FFmpeg's decoders in
PyAV read to the end) with no NaN. Plain Python with no Django import.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Protocol

import numpy as np
import soundfile

from scoring.kinds.files import raise_ours, why

# libsndfile's names: WAVEX is WAVE_FORMAT_EXTENSIBLE, which float and multichannel WAVs use.
AUDIO_FORMATS = {"WAV", "WAVEX", "FLAC"}
DEMUXERS = {"WAV": "wav", "WAVEX": "wav", "FLAC": "flac"}  # FFmpeg's name of each
# Decoded and declared lengths may differ by this much: a WAV's chunks after its audio (which
# decoding to the end reads as samples) or an odd byte of padding, never a lie worth telling.
LENGTH_SLACK_SECONDS = 0.01


class AudioLimits(Protocol):
    """What an output's checks read of the upload limits (submissions.validation.Limits)."""

    max_audio_seconds: float
    max_sample_rate: int  # Hz
    max_channels: int
    # Whose limit max_audio_seconds is, when it is not the site's upload limit (the judge's).
    audio_limit_source: str = ""
    # The judge's limit on one audio's float32 samples once decoded, and whose it is.
    max_decoded_bytes: int | None = None
    judge_source: str = ""


def audio_problem(path: Path, limits: AudioLimits) -> str | None:
    """None when `path` is usable output audio, else why not (the whole file is decoded)."""
    import av  # FFmpeg's decoders: only here, not in `score`'s start (about 35 ms)

    try:
        with soundfile.SoundFile(str(path)) as audio:
            problem = _header_problem(audio, limits)
            if problem:
                return problem
            declared, rate, container = audio.frames, audio.samplerate, audio.format
        if container in DEMUXERS and DEMUXERS[container] == "wav":
            problem = _wav_data_problem(path)
            if problem:
                return problem
    except (soundfile.LibsndfileError, RuntimeError, ValueError, OSError) as exc:
        raise_ours(exc)
        return f"not readable as WAV or FLAC audio ({why(exc)})"
    try:
        return _decoded_problem(path, container, declared, rate, limits)
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise_ours(exc)
        return f"not decodable to its end as {container} audio ({why(exc)})"


def _wav_data_problem(path: Path) -> str | None:
    """A WAV whose data chunk declares more bytes than the file holds after it: libsndfile
    and FFmpeg read what is there and say nothing, a stricter decoder (the judge's) may refuse
    it or wait for the rest. RF64 and other layouts are left to the decoded-length check."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:] != b"WAVE":
            return None
        offset = 12
        while offset + 8 <= size:
            handle.seek(offset)
            chunk, length = struct.unpack("<4sI", handle.read(8))
            if chunk == b"data":
                held = size - offset - 8
                if length > held:
                    return (f"its header declares {length:,} bytes of audio data but the file "
                            f"holds {held:,} (cut short?)")
                return None
            offset += 8 + length + (length & 1)  # chunks are padded to an even length
    return None


def _header_problem(audio: soundfile.SoundFile, limits: AudioLimits) -> str | None:
    if audio.format not in AUDIO_FORMATS:
        return f"{audio.format_info} audio; only WAV and FLAC are accepted"
    if audio.samplerate > limits.max_sample_rate:
        return (f"a sample rate of {audio.samplerate} Hz, above the limit of "
                f"{limits.max_sample_rate} Hz")
    if audio.channels > limits.max_channels:
        return f"{audio.channels} channels, above the limit of {limits.max_channels}"
    if audio.frames == 0:
        return "empty audio (no frames)"
    decoded = audio.frames * audio.channels * 4
    ceiling = getattr(limits, "max_decoded_bytes", None)
    if ceiling is not None and decoded > ceiling:
        return (f"{audio.frames / audio.samplerate:.2f} s at {audio.samplerate} Hz x "
                f"{audio.channels} channel(s) decodes to {decoded / 1024 ** 2:.1f} MiB of "
                f"samples, above the {ceiling / 1024 ** 2:.0f} MiB "
                f"{getattr(limits, 'judge_source', '') or 'the judge'} takes")
    return _length_problem(audio.frames, audio.samplerate, limits)


def _length_problem(frames: int, rate: int, limits: AudioLimits) -> str | None:
    seconds = frames / rate
    if seconds > limits.max_audio_seconds:
        source = f" ({limits.audio_limit_source})" if limits.audio_limit_source else ""
        return (f"{seconds:.2f} s long, above the limit of {limits.max_audio_seconds:g} s"
                f"{source}")
    return None


def _decoded_problem(path: Path, container: str, declared: int, rate: int,
                     limits: AudioLimits) -> str | None:
    """Decode to the file's real end, one packet at a time, ignoring the length its header
    declares (a WAV's data size, a FLAC's total samples), which libsndfile trusts and the
    judge's decoder may not: the length limit and the scan for NaN see every sample, and a
    file whose header lies about its length is refused."""
    import av

    options = {"ignore_length": "1"} if container.startswith("WAV") else {}
    decoded = 0
    with av.open(str(path), format=DEMUXERS[container], options=options) as media:
        for frame in media.decode(audio=0):
            decoded += frame.samples
            if decoded / rate > limits.max_audio_seconds:
                return (f"decodes to more than {limits.max_audio_seconds:g} s (the limit), "
                        f"though its header declares {declared / rate:.2f} s")
            samples = frame.to_ndarray()
            if samples.dtype.kind == "f" and not np.isfinite(samples).all():
                return "contains NaN or infinite samples"
    if abs(decoded - declared) > rate * LENGTH_SLACK_SECONDS:
        return (f"its header declares {declared} frames ({declared / rate:.2f} s) but it "
                f"decodes to {decoded} frames ({decoded / rate:.2f} s)")
    return None
