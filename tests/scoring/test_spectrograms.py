"""Spectrogram images (scoring.spectrograms): the fixed scale, the difference view, and a 300 s
48 kHz stereo output's time and memory."""

import io
import time
import tracemalloc

import numpy as np
import pytest
import soundfile
from PIL import Image

from scoring import spectrograms
from scoring.spectrograms import (
    BANDS,
    FLOOR_DB,
    HEIGHT,
    LEFT,
    STEPS,
    WIDTH,
    difference_png,
    spectrogram,
    spectrogram_png,
)

RATE = 16000


def tone(seconds: float, hz: float, amplitude: float = 0.5, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return amplitude * np.sin(2 * np.pi * hz * t)


def edited(seconds: float = 6.0) -> tuple[np.ndarray, np.ndarray]:
    """An input tone, and an output where the middle third is another tone."""
    source = tone(seconds, 440)
    output = source.copy()
    third = len(source) // 3
    output[third:2 * third] = tone(seconds, 2000)[third:2 * third]
    return source, output


def body(png: bytes) -> np.ndarray:
    """The image's spectrogram area (without its axes), as grey levels."""
    image = Image.open(io.BytesIO(png)).convert("L")
    return np.asarray(image, dtype=np.float64)[:HEIGHT, LEFT:LEFT + WIDTH]


def test_levels_are_dbfs_on_a_fixed_scale(tmp_path):
    loud, soft = tmp_path / "loud.wav", tmp_path / "soft.wav"
    soundfile.write(loud, tone(2, 1000, amplitude=1.0), RATE)
    soundfile.write(soft, tone(2, 1000, amplitude=0.01), RATE)
    a, b = spectrogram(loud), spectrogram(soft)
    assert a.db.shape == b.db.shape == (BANDS, WIDTH)
    assert a.db.max() == pytest.approx(0, abs=0.5)  # a full-scale sine is 0 dBFS
    assert b.db.max() == pytest.approx(-40, abs=0.5)  # the same scale: 40 dB below
    assert a.db.min() == FLOOR_DB
    assert a.seconds == pytest.approx(2.0)


def test_the_same_level_is_the_same_colour_in_two_files(tmp_path):
    """An input at 16 kHz and an output at 48 kHz, stereo: the same bands and colours."""
    source, output = tmp_path / "in.wav", tmp_path / "out.wav"
    soundfile.write(source, tone(2, 1000), RATE)
    stereo = tone(2, 1000, rate=48000)
    soundfile.write(output, np.stack([stereo, stereo], axis=1), 48000)
    a, b = body(spectrogram_png(spectrogram(source))), body(spectrogram_png(spectrogram(output)))
    row = np.unravel_index(np.argmax(a[:, WIDTH // 2]), a.shape)[0]
    assert abs(a[row, WIDTH // 2] - b[row, WIDTH // 2]) <= 3


def test_images_are_palette_pngs_of_the_scale_and_the_axes_greys(tmp_path):
    """A byte a pixel: the spectrogram's pixels are entries of the fixed scale (the same
    level, the same entry, in any file) and the axes' are greys; the difference's pixels are
    black where nothing changed, else warm or cold."""
    source, output = edited()
    soundfile.write(tmp_path / "in.wav", source, RATE)
    soundfile.write(tmp_path / "out.wav", output, RATE)
    spec, before = spectrogram(tmp_path / "out.wav"), spectrogram(tmp_path / "in.wav")
    for png, table in ((spectrogram_png(spec), spectrograms.LEVELS),
                       (difference_png(spec, before), spectrograms.CHANGES)):
        image = Image.open(io.BytesIO(png))
        assert image.mode == "P"
        pixels = np.asarray(image)
        colours = np.asarray(image.getpalette()[:256 * 3], dtype=np.uint8).reshape(256, 3)
        assert (colours[:STEPS] == table).all()
        assert (pixels[:HEIGHT, LEFT:] < STEPS).all()
        axes = np.concatenate([pixels[HEIGHT:].ravel(), pixels[:, :LEFT].ravel()])
        assert (axes >= STEPS).all()
        grey = colours[STEPS:]
        assert (grey[:, 0] == grey[:, 1]).all() and (grey[:, 1] == grey[:, 2]).all()
    change = np.asarray(Image.open(io.BytesIO(difference_png(spec, before))))[:HEIGHT, LEFT:]
    third = WIDTH // 3
    assert (spectrograms.CHANGES[0] == 0).all()
    assert (change[:, :third - 10] == 0).mean() > 0.99  # unchanged: entry 0, black
    assert spectrograms.CHANGES[change[:, third + 10:2 * third - 10]].max() > 200  # the edit


def test_short_and_empty_audio_fill_every_column(tmp_path):
    short, empty = tmp_path / "short.wav", tmp_path / "empty.wav"
    soundfile.write(short, tone(0.01, 1000), RATE)
    soundfile.write(empty, np.zeros(0), RATE)
    assert (spectrogram(short).db.max(axis=0) > FLOOR_DB).all()
    assert (spectrogram(empty).db == FLOOR_DB).all()
    Image.open(io.BytesIO(spectrogram_png(spectrogram(empty)))).verify()


def test_the_difference_shows_where_the_edit_happened(tmp_path):
    source, output = edited()
    soundfile.write(tmp_path / "in.wav", source, RATE)
    soundfile.write(tmp_path / "out.flac", output, RATE, format="FLAC")
    png = difference_png(spectrogram(tmp_path / "out.flac"), spectrogram(tmp_path / "in.wav"))
    grey = body(png)
    third = WIDTH // 3
    margin = 10  # the frames that straddle the edit's edges
    middle = grey[:, third + margin:2 * third - margin].mean()
    before, after = grey[:, :third - margin].mean(), grey[:, 2 * third + margin:].mean()
    assert middle > 5 * max(before, after)
    assert max(before, after) < 2  # unchanged audio is black


def test_no_difference_unless_the_lengths_match(tmp_path):
    source, output = edited()
    soundfile.write(tmp_path / "in.wav", source, RATE)
    soundfile.write(tmp_path / "same.wav", output[:len(source) - 16], RATE)  # 1 ms shorter
    soundfile.write(tmp_path / "longer.wav", np.concatenate([output, np.zeros(RATE)]), RATE)
    source_spec = spectrogram(tmp_path / "in.wav")
    assert difference_png(spectrogram(tmp_path / "same.wav"), source_spec) is not None
    assert difference_png(spectrogram(tmp_path / "longer.wav"), source_spec) is None


def test_the_time_axis_is_labelled_in_seconds(tmp_path):
    soundfile.write(tmp_path / "a.wav", tone(6, 440), RATE)
    image = Image.open(io.BytesIO(spectrogram_png(spectrogram(tmp_path / "a.wav"))))
    assert image.size == (LEFT + WIDTH, HEIGHT + spectrograms.BOTTOM)
    axis = np.asarray(image.convert("L"))[HEIGHT + 3:, LEFT:]
    assert (axis < 200).any(axis=0).sum() > 40  # ink of the tick labels under the image
    # The labels' glyphs stand at least 13 px tall (a page halves the image: 6 px or more).
    inked = np.flatnonzero((axis < 160).any(axis=1))
    assert inked.max() - inked.min() + 1 >= 13, inked
    assert spectrograms._label(0) == "0s" and spectrograms._label(2.5) == "2.5s"
    assert spectrograms._label(90) == "1:30"


@pytest.mark.slow
def test_a_300_s_48_khz_stereo_output_takes_seconds_and_less_memory_than_itself(tmp_path):
    """What bench/spectrogram.py prints, bounded: CPU seconds and traced allocations."""
    path = tmp_path / "long.wav"
    rng = np.random.default_rng(1)
    with soundfile.SoundFile(path, "w", samplerate=48000, channels=2, subtype="PCM_16") as out:
        for _ in range(30):
            out.write((0.1 * rng.standard_normal((480000, 2))).astype(np.float32))
    size = path.stat().st_size
    tracemalloc.start()
    started = time.process_time()
    png = spectrogram_png(spectrogram(path))
    cpu = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    Image.open(io.BytesIO(png)).verify()
    assert cpu < 5, f"{cpu:.2f} s of CPU"
    assert peak < size / 4, f"{peak / 2**20:.1f} MB for {size / 2**20:.1f} MB of audio"
