"""Time and peak memory of drawing one output's spectrogram: a 300 s 48 kHz stereo WAV.

Writes the WAV (16-bit PCM: a tone sweep over noise, written in blocks) in a temporary
folder, then draws its spectrogram and PNG as the worker does (scoring.spectrograms), and
prints the seconds, the peak of Python's allocations during a second drawing (tracemalloc,
which numpy's arrays report to), and the peak RSS (getrusage's ru_maxrss) of a fresh process
drawing it beside one drawing a 1 s file, each against the audio's size on disk. With
--diff it also draws the difference from a file of the same length, as the worker does for
an output as long as its input (two spectrograms).

    .venv/bin/python bench/spectrogram.py [--seconds 300 --rate 48000 --channels 2] [--diff]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.spectrograms import (  # noqa: E402
    difference_png,
    spectrogram,
    spectrogram_png,
)

MB = 1024**2


def write_wav(path: Path, seconds: float, rate: int, channels: int) -> None:
    rng = np.random.default_rng(7)
    total, block = int(seconds * rate), rate * 10
    with soundfile.SoundFile(str(path), "w", samplerate=rate, channels=channels,
                             subtype="PCM_16") as out:
        for start in range(0, total, block):
            t = np.arange(start, min(total, start + block)) / rate
            tone = 0.3 * np.sin(2 * np.pi * (200 + 30 * t) * t)
            noise = 0.01 * rng.standard_normal((len(t), channels))
            out.write((tone[:, None] + noise).astype(np.float32))


def _draw(audio: Path, diff: bool) -> tuple[bytes, bytes | None]:
    spec = spectrogram(audio)
    return spectrogram_png(spec), difference_png(spectrogram(audio), spec) if diff else None


def _peak_rss(audio: Path, diff: bool) -> int:
    """Peak RSS (bytes) of a fresh process that imports the module and draws `audio`."""
    code = ("import sys, resource; from pathlib import Path; sys.path[:0] = sys.argv[1:2]; "
            "import spectrogram as bench; bench._draw(Path(sys.argv[2]), sys.argv[3] == '1'); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(audio),
                          "1" if diff else "0"], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--rate", type=int, default=48000)
    parser.add_argument("--channels", type=int, default=2)
    parser.add_argument("--diff", action="store_true",
                        help="also draw the difference from an input of the same length")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        audio, warm = Path(folder) / "output.wav", Path(folder) / "warm.wav"
        write_wav(audio, args.seconds, args.rate, args.channels)
        write_wav(warm, 1.0, args.rate, args.channels)
        size = audio.stat().st_size
        _draw(warm, args.diff)  # imports and first calls, outside the figures
        started = time.perf_counter()
        png, diff_png = _draw(audio, args.diff)
        seconds = time.perf_counter() - started
        tracemalloc.start()  # a second drawing: tracemalloc slows allocations down
        _draw(audio, args.diff)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss, rss_short = _peak_rss(audio, args.diff), _peak_rss(warm, args.diff)
    what = "spectrogram + PNG" + (" and its difference (2 spectrograms, 2 PNGs)"
                                  if args.diff else "")
    print(f"audio: {args.seconds:g} s, {args.rate} Hz, {args.channels} channel(s), "
          f"{size / MB:.1f} MB on disk")
    print(f"{what}: {seconds:.2f} s ({len(png) / 1024:.0f} KiB PNG"
          + (f", difference {len(diff_png) / 1024:.0f} KiB" if diff_png else "") + ")")
    print(f"peak of allocations (tracemalloc): {peak / MB:.1f} MB = "
          f"{peak / size:.3f} x the audio's size")
    print(f"peak RSS of a fresh process drawing it: {rss / MB:.1f} MB ({rss_short / MB:.1f} MB "
          f"for a 1 s file: {(rss - rss_short) / MB:+.1f} MB = "
          f"{(rss - rss_short) / size:.3f} x the audio's size)")


if __name__ == "__main__":
    main()
