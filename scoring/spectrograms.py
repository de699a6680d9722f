"""Spectrogram images of audio files: pure (numpy, soundfile and Pillow; no Django).

A mel spectrogram of the mono mix, read in blocks (soundfile.blocks) so that memory stays a
few megabytes whatever the audio's length: each block's frames are windowed, transformed
(numpy's real FFT), projected on mel bands and summed into a fixed number of columns by
their time, so a 300 s file and a 3 s one make images of the same width. Levels are in dB
relative to a full-scale sine on a FIXED scale (FLOOR_DB..0 dBFS), and the bands span the
same 0..MAX_HZ whatever the sample rate, so an item's input and its outputs can be compared
by eye. The difference image is output minus input, in dB, on black (no change) with warm
colours for energy added and cold ones for energy removed: it shows where an edit happened.

The pick, by speed: numpy's FFT and a mel projection are all the transform needs (scipy, or
librosa with scipy, numba and more, would add dependencies for it), and Pillow draws the
image with its axes in 26 ms where matplotlib (Agg) takes 164 ms a figure after a 1.7 s
import (measured 2026-12-02 on a 128 x 800 image, both warm); Pillow's default font draws
the labels, so no font file is needed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
from PIL import Image, ImageDraw, ImageFont

WIDTH = 800  # columns of the spectrogram, whatever the audio's length
BANDS = 128  # mel bands, 0..MAX_HZ
MAX_HZ = 16_000.0
FLOOR_DB = -100.0  # the colour scale: FLOOR_DB..0 dBFS
DIFF_DB = 40.0  # the difference image's scale: -DIFF_DB..+DIFF_DB
SAME_LENGTH_SECONDS = 0.005  # an output this close to its input's length gets a difference
HEIGHT = 200  # pixels of the spectrogram itself
# The axes' labels: pages show the image at about half its width (a phone, the explorer's
# column), so they are drawn at FONT_PX, about 10 px there (the default bitmap font
# read as about 5 px).
FONT_PX = 20
LEFT, BOTTOM = 56, 26  # margins of the frequency and time axes
BLOCK_FRAMES = 1 << 16  # samples read at a time, per channel


@dataclass(frozen=True)
class Spectrogram:
    db: np.ndarray  # BANDS x WIDTH, float32, lowest band first, clipped to FLOOR_DB..0
    seconds: float
    sample_rate: int


def same_length(a: Spectrogram, b: Spectrogram) -> bool:
    return abs(a.seconds - b.seconds) <= SAME_LENGTH_SECONDS


# --- the transform -------------------------------------------------------------------------


def _mel(hz):
    return 2595.0 * np.log10(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def _hz(mel):
    return 700.0 * (10.0 ** (np.asarray(mel, dtype=np.float64) / 2595.0) - 1.0)


def _mel_matrix(sample_rate: int, n_fft: int) -> np.ndarray:
    """bins x BANDS triangular filters of peak 1, evenly spaced in mel over 0..MAX_HZ; bands
    past the Nyquist frequency stay empty (drawn at the floor)."""
    edges = _hz(np.linspace(0.0, _mel(MAX_HZ), BANDS + 2))
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs[None, :] - lower) / (centre - lower)
    falling = (upper - freqs[None, :]) / (upper - centre)
    return np.maximum(0.0, np.minimum(rising, falling)).T


class _Bands:
    """The mel filters applied through their non-zero weights alone (about 1% of bins x
    bands, each bin in at most two bands): a dense matrix product costs ten times the FFT
    with this machine's BLAS settings."""

    def __init__(self, matrix: np.ndarray):
        band, bins = np.nonzero(matrix.T)  # in band order
        self.bins, self.weights = bins, matrix[bins, band]
        self.used = np.unique(band)
        self.starts = np.searchsorted(band, self.used)

    def __call__(self, power: np.ndarray) -> np.ndarray:
        """frames x bins of power -> frames x BANDS."""
        out = np.zeros((len(power), BANDS))
        if len(self.bins):
            out[:, self.used] = np.add.reduceat(power[:, self.bins] * self.weights,
                                                self.starts, axis=1)
        return out


def _fft_size(sample_rate: int) -> int:
    """About 64 ms: bins narrow enough for the lowest mel bands at 48 kHz (11.7 Hz)."""
    return 1 << max(8, int(np.ceil(np.log2(sample_rate / 16))))


def spectrogram(path: Path | str) -> Spectrogram:
    """The mel spectrogram of a WAV or FLAC file's mono mix, pooled to WIDTH columns."""
    info = soundfile.info(str(path))
    rate, total = int(info.samplerate), int(info.frames)
    n_fft = _fft_size(rate)
    # frames overlap by 3/4 when that still gives few per column, else by half: long audio
    # then costs half the transforms, and every sample still falls in two windows
    hop = n_fft // 4 if total < 8 * WIDTH * (n_fft // 4) else n_fft // 2
    window = np.hanning(n_fft)
    reference = _sine_energy(window, rate, n_fft)
    mel = _Bands(_mel_matrix(rate, n_fft))
    power = np.zeros((WIDTH, BANDS), dtype=np.float64)
    counts = np.zeros(WIDTH, dtype=np.int64)
    seconds = total / rate if rate else 0.0
    scale = WIDTH / max(seconds, 1e-9)
    carry = np.zeros(0)
    start = 0  # sample index of carry[0]

    def consume(samples: np.ndarray, final: bool) -> np.ndarray:
        nonlocal start
        if final:  # the last frames reach past the end: pad them with silence
            samples = np.concatenate([samples, np.zeros(n_fft)])
        n = (len(samples) - n_fft) // hop + 1 if len(samples) >= n_fft else 0
        if final and total:
            n = min(n, max(0, -(-(total - start) // hop)))  # frames that start before the end
        if n > 0:
            frames = np.lib.stride_tricks.sliding_window_view(samples, n_fft)[::hop][:n]
            # float64: numpy's FFT of doubles is faster than of singles (measured, numpy 2.4)
            spectra = np.fft.rfft(frames * window, axis=1)
            bands = mel(spectra.real**2 + spectra.imag**2)
            centres = (start + np.arange(n) * hop + n_fft / 2) / rate
            columns = np.clip((centres * scale).astype(np.int64), 0, WIDTH - 1)
            # columns never decrease: sum each one's run of frames at once
            used, first = np.unique(columns, return_index=True)
            power[used] += np.add.reduceat(bands, first, axis=0)
            counts[used] += np.diff(np.append(first, n))
        start += n * hop
        return samples[n * hop:] if not final else np.zeros(0)

    if total:
        for block in soundfile.blocks(str(path), blocksize=BLOCK_FRAMES, dtype="float32",
                                      always_2d=True):
            carry = consume(np.concatenate([carry, _mono(block)]), final=False)
        consume(carry, final=True)
    filled = np.flatnonzero(counts)
    if len(filled) == 0:
        db = np.full((BANDS, WIDTH), FLOOR_DB, dtype=np.float32)
    else:
        # a column no frame's centre fell in (audio shorter than WIDTH frames) takes the
        # nearest column that has one
        nearest = filled[np.clip(np.searchsorted(filled, np.arange(WIDTH)), 0, len(filled) - 1)]
        before = filled[np.clip(np.searchsorted(filled, np.arange(WIDTH)) - 1, 0,
                                len(filled) - 1)]
        pick = np.where(np.abs(before - np.arange(WIDTH)) < np.abs(nearest - np.arange(WIDTH)),
                        before, nearest)
        mean = power[pick] / counts[pick][:, None]
        db = 10.0 * np.log10(np.maximum(mean / reference, 1e-30))
        db = np.clip(db, FLOOR_DB, 0.0).T.astype(np.float32)
    return Spectrogram(db=db, seconds=seconds, sample_rate=rate)


def _mono(block: np.ndarray) -> np.ndarray:
    """The mean of the channels (a sum per channel: numpy's mean along a short axis is slow)."""
    mono = block[:, 0].astype(np.float64)
    for channel in range(1, block.shape[1]):
        mono += block[:, channel]
    return mono / block.shape[1] if block.shape[1] > 1 else mono


def _sine_energy(window: np.ndarray, rate: int, n_fft: int) -> float:
    """The largest mel band's energy for a full-scale sine at 1 kHz: 0 dBFS."""
    t = np.arange(n_fft) / rate
    spectrum = np.fft.rfft(np.sin(2 * np.pi * 1000.0 * t) * window)
    bands = _Bands(_mel_matrix(rate, n_fft))((spectrum.real**2 + spectrum.imag**2)[None, :])
    return float(bands.max())


# --- the images ----------------------------------------------------------------------------


# The images are palette PNGs, a byte a pixel: the scale's colours and the axes' greys in one
# table of 256. Against RGB PNGs of the same pixels they encode in 0.17-0.39 of the time and
# weigh 0.40-0.73 of the bytes (`bench/spectrogram_png.py`, 2026-12-07); the encoding was most
# of a drawing's time.
STEPS = 240  # entries of the colour scale; the other 16 are the axes' greys
GREYS = 256 - STEPS
HALF = (STEPS - 1) // 2  # the difference's steps each way: 0 is black, no change


def _palette(stops: list[tuple[float, tuple[int, int, int]]], n: int) -> np.ndarray:
    """An n x 3 colour table through `stops` (position 0..1, RGB)."""
    at = np.linspace(0.0, 1.0, n)
    where = [p for p, _ in stops]
    return np.stack([np.interp(at, where, [c[i] for _, c in stops]) for i in range(3)],
                    axis=1).round().astype(np.uint8)


AXIS, INK = 255, 60  # grey levels: the axes' background and their ink
# the axes' table, INK..AXIS: the labels' anti-aliased edges take the nearest
AXIS_GREYS = np.repeat(np.linspace(INK, AXIS, GREYS).round().astype(np.uint8)[:, None], 3,
                       axis=1)
# dark to bright, so that the level reads in grey too (after matplotlib's "magma")
LEVELS = _palette([(0.0, (0, 0, 4)), (0.25, (80, 18, 123)), (0.5, (183, 55, 121)),
                   (0.75, (252, 137, 97)), (1.0, (252, 253, 191))], STEPS)
# black for no change: the brighter, the larger the change; warm added, cold removed
_ADDED = [(0.0, (0, 0, 0)), (0.5, (200, 40, 20)), (1.0, (255, 230, 120))]
_REMOVED = [(0.0, (0, 0, 0)), (0.5, (20, 70, 200)), (1.0, (140, 230, 255))]
CHANGES = np.concatenate([_palette(_ADDED, HALF + 1), _palette(_REMOVED, HALF + 1)[1:],
                          np.zeros((STEPS - 1 - 2 * HALF, 3), dtype=np.uint8)])
LEVELS_TABLE = np.concatenate([LEVELS, AXIS_GREYS]).ravel().tolist()
CHANGES_TABLE = np.concatenate([CHANGES, AXIS_GREYS]).ravel().tolist()


def _tick_step(seconds: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if seconds / step <= 8:
            return float(step)
    return 7200.0


def _label(t: float) -> str:
    if t >= 60:
        return f"{int(t // 60)}:{int(round(t % 60)):02d}"
    return f"{t:g}s"


def _frame(index: np.ndarray, table: list[int], seconds: float) -> bytes:
    """The spectrogram's entries of `table` (BANDS x WIDTH, below STEPS, rows lowest band
    first) with its axes, as a palette PNG's bytes."""
    body = Image.fromarray(np.ascontiguousarray(index[::-1]), "L").resize(
        (WIDTH, HEIGHT), Image.Resampling.NEAREST)
    axes = Image.new("L", (LEFT + WIDTH, HEIGHT + BOTTOM), AXIS)
    draw = ImageDraw.Draw(axes)
    font = ImageFont.load_default(size=FONT_PX)
    step = _tick_step(seconds)
    t = 0.0
    while t <= seconds + 1e-9:
        x = LEFT + min(WIDTH - 1, round(t / max(seconds, 1e-9) * WIDTH))
        draw.line([(x, HEIGHT), (x, HEIGHT + 3)], fill=INK)
        text = _label(t)
        width = draw.textlength(text, font=font)
        draw.text((min(max(x - width / 2, 0), LEFT + WIDTH - width), HEIGHT + 3), text,
                  fill=INK, font=font)
        t = round(t + step, 6)
    top = float(_mel(MAX_HZ))
    for hz, text in ((250, "250"), (1000, "1k"), (4000, "4k"), (16000, "16k")):
        y = HEIGHT - 1 - round(float(_mel(hz)) / top * (HEIGHT - 1))
        draw.line([(LEFT - 3, y), (LEFT - 1, y)], fill=INK)
        draw.text((LEFT - 5 - draw.textlength(text, font=font), max(0, y - FONT_PX // 2 - 2)),
                  text, fill=INK, font=font)
    grey = np.asarray(axes, dtype=np.float32)
    step = np.clip(np.round((grey - INK) / (AXIS - INK) * (GREYS - 1)), 0, GREYS - 1)
    pixels = (STEPS + step).astype(np.uint8)
    pixels[:HEIGHT, LEFT:] = np.asarray(body)
    image = Image.fromarray(pixels, "P")
    image.putpalette(table)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()


def spectrogram_png(spec: Spectrogram) -> bytes:
    """The spectrogram on the fixed FLOOR_DB..0 dBFS scale, with its time axis."""
    index = np.round((spec.db - FLOOR_DB) / -FLOOR_DB * (STEPS - 1)).astype(np.uint8)
    return _frame(index, LEVELS_TABLE, spec.seconds)


def difference(output: Spectrogram, source: Spectrogram) -> np.ndarray | None:
    """Output minus input in dB (BANDS x WIDTH), or None unless they have the same length."""
    if not same_length(output, source):
        return None
    return output.db - source.db


def difference_png(output: Spectrogram, source: Spectrogram) -> bytes | None:
    """Where the output differs from its input, or None unless they have the same length."""
    change = difference(output, source)
    if change is None:
        return None
    step = np.round(np.clip(np.abs(change) / DIFF_DB, 0.0, 1.0) * HALF).astype(np.uint8)
    index = np.where((change >= 0) | (step == 0), step, HALF + step).astype(np.uint8)
    return _frame(index, CHANGES_TABLE, output.seconds)
