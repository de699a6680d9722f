"""The spectrogram images' encoding, side by side: the palette PNG the worker writes
(scoring.spectrograms: a byte a pixel, one table for the scale and the axes' greys) against an
RGB PNG of the very same pixels (three bytes a pixel, as the images were drawn before
2026-12-07), at the same zlib level.

For a 0.5 s tone (the demo's items), 5 s of a tone over noise and 60 s of noise, each drawn as
a spectrogram and as its difference from a copy with its middle third changed: the time of
each encoding (the best of --rounds, CPU seconds) and its bytes, then the ratio palette / RGB.
The whole drawing (spectrogram_png, difference_png) is timed too, the encoding being most of
it.

    .venv/bin/python bench/spectrogram_png.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scoring.spectrograms import difference_png, spectrogram, spectrogram_png  # noqa: E402

RATE = 16000


def audio(seconds: float, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """A tone over noise, and the same with its middle third another tone."""
    rng = np.random.default_rng(7)
    t = np.arange(int(seconds * RATE)) / RATE
    source = 0.3 * np.sin(2 * np.pi * 440 * t * (1 + 0.2 * np.sin(t))) \
        + noise * rng.standard_normal(len(t))
    output = source.copy()
    third = len(t) // 3
    output[third:2 * third] = 0.3 * np.sin(2 * np.pi * 2000 * t[third:2 * third]) \
        + noise * rng.standard_normal(third)
    return source, output


def best(rounds: int, work, *args) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        work(*args)
        times.append(time.process_time() - started)
    return min(times)


def encoded(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False, compress_level=6)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    cases = [("0.5 s tone", 0.5, 0.0), ("5 s tone over noise", 5.0, 0.05),
             ("60 s of noise", 60.0, 0.3)]
    print(f"{'audio':22} {'image':11} {'draw ms':>8} {'P ms':>6} {'RGB ms':>7} {'ratio':>6} "
          f"{'P KiB':>6} {'RGB KiB':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as folder:
        for label, seconds, noise in cases:
            source, output = audio(seconds, noise)
            soundfile.write(Path(folder) / "in.wav", source, RATE)
            soundfile.write(Path(folder) / "out.wav", output, RATE)
            after, before = spectrogram(Path(folder) / "out.wav"), \
                spectrogram(Path(folder) / "in.wav")
            for name, draw, given in (("spectrogram", spectrogram_png, (after,)),
                                      ("difference", difference_png, (after, before))):
                drawing = best(args.rounds, draw, *given)
                palette = Image.open(io.BytesIO(draw(*given)))
                palette.load()
                rgb = palette.convert("RGB")
                p_time = best(args.rounds, encoded, palette)
                rgb_time = best(args.rounds, encoded, rgb)
                p_bytes, rgb_bytes = len(encoded(palette)), len(encoded(rgb))
                print(f"{label:22} {name:11} {drawing * 1000:8.1f} {p_time * 1000:6.1f} "
                      f"{rgb_time * 1000:7.1f} {p_time / rgb_time:6.2f} {p_bytes / 1024:6.1f} "
                      f"{rgb_bytes / 1024:8.1f} {p_bytes / rgb_bytes:6.2f}")


if __name__ == "__main__":
    main()
