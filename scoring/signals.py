"""Objective signals of an audio file, measured before anyone trusts a judge's word about it:
integrated loudness (ITU-R BS.1770-4, LUFS), true peak (dBTP, 4x oversampled), the share of
clipped samples, the share of silent frames, its length, rate and channels.

The file is read in blocks (soundfile), so a worker holds a few seconds of it whatever its
length. Loudness is pyloudnorm's measurement made block by block: its K-weighting filters
(pyloudnorm.Meter's, run with their state carried from block to block by scipy's lfilter), its
400 ms gating blocks with 75% overlap at the very sample bounds it uses, its channel gains and
its two gates; `tests/scoring/test_signals.py` checks it against pyloudnorm on whole signals.
No Django here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soundfile

# pyloudnorm and scipy.signal are imported where a file is measured, in a worker: at the top
# they cost every process of the site 0.9 s at start (python -X importtime manage.py check,
# 2026-12-06), and only a worker measuring a file uses them.

BLOCK_FRAMES = 2**16  # frames read at once: 1.4 s at 48 kHz
# A sample at digital full scale is clipped: at least (2^15 - 1) / 2^15, the largest positive
# value of 16-bit audio, so that a clipped 16-bit, 24-bit or float file all count.
CLIP_LEVEL = 1.0 - 2.0**-15
SILENT_DBFS = -60.0  # a frame whose RMS (over every channel) is below this is silent
FRAME_SECONDS = 0.01  # frames of 10 ms for silence
OVERSAMPLE = 4  # true peak: BS.1770-4 Annex 2 oversamples 4 times
_MARGIN = 64  # samples of context either side of a block when oversampling it


@dataclass(frozen=True)
class Signals:
    lufs: float | None  # None: silent throughout (pyloudnorm says -inf), or under 0.4 s
    true_peak_dbtp: float | None  # None: digital silence
    clipped_share: float
    silent_share: float
    seconds: float
    sample_rate: int
    channels: int

    def as_dict(self) -> dict:
        return asdict(self)


def _dbfs(value: float) -> float | None:
    return 20.0 * math.log10(value) if value > 0 else None


class _Loudness:
    """BS.1770-4 integrated loudness, fed block by block (pyloudnorm's algorithm)."""

    def __init__(self, rate: int, channels: int, frames: int):
        import pyloudnorm

        self.meter = pyloudnorm.Meter(rate)
        self.rate, self.channels = rate, channels
        self.stages = list(self.meter._filters.values())
        self.state = [[lfilter_zi_zero(stage) for _ in range(channels)] for stage in self.stages]
        block, step = self.meter.block_size, 1.0 - self.meter.overlap
        seconds = frames / rate
        count = int(np.round((seconds - block) / (block * step))) + 1 if seconds >= block else 0
        j = np.arange(count)
        # pyloudnorm's bounds, computed as it computes them
        self.lower = np.array([int(block * (i * step) * rate) for i in j], dtype=np.int64)
        self.upper = np.array([int(block * (i * step + 1) * rate) for i in j], dtype=np.int64)
        self.bounds = np.unique(np.concatenate([self.lower, self.upper]))
        self.at_bound = np.zeros((len(self.bounds), channels))  # cumulative squares there
        self.done = 0  # frames seen
        self.total = np.zeros(channels)  # squares so far
        self.block = block

    def add(self, data: np.ndarray) -> None:
        from scipy.signal import lfilter

        weighted = np.empty_like(data)
        for c in range(self.channels):
            x = data[:, c]
            for s, stage in enumerate(self.stages):
                y, self.state[s][c] = lfilter(stage.b, stage.a, x, zi=self.state[s][c])
                x = stage.passband_gain * y
            weighted[:, c] = x
        cumulative = self.total + np.cumsum(weighted**2, axis=0)
        start, end = self.done, self.done + len(data)
        # a bound b is the squares of samples [0, b): the cumulative sum at index b - 1
        chosen = (self.bounds > start) & (self.bounds <= end)
        self.at_bound[chosen] = cumulative[self.bounds[chosen] - start - 1]
        self.total = cumulative[-1] if len(data) else self.total
        self.done = end

    def integrated(self) -> float | None:
        if not len(self.lower):
            return None
        index = {b: i for i, b in enumerate(self.bounds)}
        at = lambda b: self.at_bound[index[b]] if b > 0 else np.zeros(self.channels)  # noqa: E731
        z = np.array([(at(u) - at(lo)) for lo, u in zip(self.lower, self.upper, strict=True)])
        z = z / (self.block * self.rate)  # (blocks, channels) mean squares
        gains = np.array([1.0, 1.0, 1.0, 1.41, 1.41][:self.channels])
        with np.errstate(divide="ignore"):
            loudness = -0.691 + 10.0 * np.log10(z @ gains)
        above = loudness >= -70.0
        if not above.any():
            return None
        relative = -0.691 + 10.0 * np.log10(z[above].mean(axis=0) @ gains) - 10.0
        gated = (loudness > relative) & (loudness > -70.0)
        if not gated.any():
            return None
        with np.errstate(divide="ignore"):
            value = -0.691 + 10.0 * np.log10(z[gated].mean(axis=0) @ gains)
        return float(value) if np.isfinite(value) else None


def lfilter_zi_zero(stage) -> np.ndarray:
    """A filter's state before any sample: at rest (the signal starts from silence)."""
    return np.zeros(max(len(stage.a), len(stage.b)) - 1)


def measure(path: Path | str) -> Signals:
    """The file's signals, reading it block by block; ValueError if it is no sound file."""
    from scipy.signal import resample_poly

    try:
        sound = soundfile.SoundFile(str(path))
    except (soundfile.LibsndfileError, RuntimeError) as exc:
        raise ValueError(f"{Path(path).name}: not a readable sound file ({exc})") from None
    with sound:
        rate, channels, frames = sound.samplerate, sound.channels, sound.frames
        loudness = _Loudness(rate, channels, frames)
        frame = max(1, round(FRAME_SECONDS * rate))
        peak = true_peak = 0.0
        clipped = 0
        silent = frames_counted = 0
        carry = np.zeros((0, channels))  # samples of an unfinished silence frame
        floor = 10.0 ** (SILENT_DBFS / 20.0)
        # True peak: each block is oversampled with _MARGIN samples of its neighbours on both
        # sides (so no block edge rings), one block behind the reading.
        before = np.zeros((0, channels))  # the tail of the block before `pending`
        pending = None

        def oversampled_peak(block: np.ndarray, after: np.ndarray) -> float:
            context = np.concatenate([before, block, after])
            up = resample_poly(context, OVERSAMPLE, 1, axis=0)
            start = len(before) * OVERSAMPLE
            return float(np.abs(up[start:start + len(block) * OVERSAMPLE]).max(initial=0.0))

        for block in sound.blocks(blocksize=BLOCK_FRAMES, dtype="float64", always_2d=True):
            loudness.add(block)
            magnitude = np.abs(block)
            peak = max(peak, float(magnitude.max(initial=0.0)))
            clipped += int(np.count_nonzero(magnitude >= CLIP_LEVEL))
            if pending is not None:
                true_peak = max(true_peak, oversampled_peak(pending, block[:_MARGIN]))
                before = pending[-_MARGIN:]
            pending = block
            # silence: whole 10 ms frames, the last partial one too
            joined = np.concatenate([carry, block])
            whole = len(joined) // frame * frame
            if whole:
                energy = (joined[:whole] ** 2).reshape(-1, frame, channels).mean(axis=(1, 2))
                silent += int(np.count_nonzero(energy < floor**2))
                frames_counted += len(energy)
            carry = joined[whole:]
        if pending is not None:
            true_peak = max(true_peak, oversampled_peak(pending, np.zeros((0, channels))))
        if len(carry):
            silent += int(np.mean(carry**2) < floor**2)
            frames_counted += 1
    return Signals(
        lufs=None if (value := loudness.integrated()) is None else round(value, 3),
        true_peak_dbtp=None if (db := _dbfs(max(true_peak, peak))) is None else round(db, 3),
        clipped_share=round(clipped / (frames * channels), 6) if frames else 0.0,
        silent_share=round(silent / frames_counted, 6) if frames_counted else 1.0,
        seconds=round(frames / rate, 6) if rate else 0.0,
        sample_rate=rate, channels=channels)
