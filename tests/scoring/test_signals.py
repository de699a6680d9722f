"""Each output's signal card against independent computations: pyloudnorm on the whole signal
for loudness, and plain numpy (and scipy's FFT resampling for the true peak) on synthesised
audio of known loudness, clipping and silence; WAV and FLAC, mono and stereo, 16 to 48 kHz, up
to 300 s, in bounded memory."""

import tracemalloc

import numpy as np
import pytest
import soundfile

from scoring.signals import measure


def synthesised(path, *, rate, channels, seconds, fmt, amplitude=0.3, clip_gain=1.0,
                silence=0.0, seed=0):
    """A tone with a little noise, driven into clipping by `clip_gain` (clipped at full
    scale), followed by `silence` seconds of digital silence."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(rate * seconds)) / rate
    tone = amplitude * np.sin(2 * np.pi * 997 * t) + 0.02 * rng.standard_normal(t.size)
    tone = np.clip(clip_gain * tone, -1.0, 1.0)
    signal = np.concatenate([tone, np.zeros(int(rate * silence))])
    if channels == 2:
        signal = np.stack([signal, 0.7 * signal], axis=1)
    soundfile.write(path, signal, rate, format=fmt, subtype="PCM_16")
    return path


def expected(path):
    """The card computed from the whole signal, independently. (pyloudnorm and scipy.signal
    are imported here, as scoring.signals imports them: at module level they cost every test
    process a second of collection.)"""
    import pyloudnorm
    from scipy.signal import resample

    data, rate = soundfile.read(str(path), always_2d=True)
    frames, channels = data.shape
    lufs = pyloudnorm.Meter(rate).integrated_loudness(data[:, 0] if channels == 1 else data)
    frame = round(0.01 * rate)
    whole = frames // frame * frame
    energy = (data[:whole] ** 2).reshape(-1, frame, channels).mean(axis=(1, 2))
    silent = np.count_nonzero(energy < 10 ** (-60 / 10))
    if whole < frames:
        silent += (data[whole:] ** 2).mean() < 10 ** (-60 / 10)
    silent_share = silent / (len(energy) + (whole < frames))
    clipped = np.count_nonzero(np.abs(data) >= 1 - 2**-15) / data.size
    upsampled = resample(data[: min(frames, rate * 20)], 4 * min(frames, rate * 20), axis=0)
    true_peak = 20 * np.log10(np.abs(upsampled).max())
    return {"lufs": lufs, "clipped_share": clipped, "silent_share": silent_share,
            "true_peak": true_peak, "sample_rate": rate, "channels": channels,
            "seconds": frames / rate}


@pytest.mark.slow
@pytest.mark.parametrize("rate, channels, fmt, seconds, clip_gain, silence", [
    (16000, 1, "WAV", 4.0, 1.0, 0.0),
    (22050, 2, "FLAC", 3.3, 1.0, 1.0),
    (44100, 1, "FLAC", 6.0, 4.0, 0.0),  # driven hard into clipping
    (48000, 2, "WAV", 5.0, 5.0, 2.0),  # clipping, then two seconds of silence
])
def test_the_card_is_pyloudnorms_and_numpys(tmp_path, rate, channels, fmt, seconds, clip_gain,
                                            silence):
    path = synthesised(tmp_path / f"out.{fmt.lower()}", rate=rate, channels=channels,
                       seconds=seconds, fmt=fmt, clip_gain=clip_gain, silence=silence)
    found, wanted = measure(path), expected(path)
    assert found.lufs == pytest.approx(wanted["lufs"], abs=1e-3)
    assert found.clipped_share == pytest.approx(wanted["clipped_share"], abs=1e-6)
    assert (found.clipped_share > 0.1) == (clip_gain > 1)
    assert found.silent_share == pytest.approx(wanted["silent_share"], abs=1e-6)
    assert found.silent_share == pytest.approx(silence / (seconds + silence), abs=0.01)
    # 4x polyphase (ours) against 4x FFT resampling of the whole signal: within 0.2 dB
    assert found.true_peak_dbtp == pytest.approx(wanted["true_peak"], abs=0.2)
    assert (found.sample_rate, found.channels) == (rate, channels)
    assert found.seconds == pytest.approx(wanted["seconds"])


@pytest.mark.slow
def test_known_figures_of_a_calibrated_tone(tmp_path):
    """A 997 Hz sine at -20 dBFS RMS in both channels reads -20.0 LUFS... plus the channels'
    sum: 3 dB more for two; its sample peak is its amplitude (-17 dBFS)."""
    rate = 48000
    t = np.arange(rate * 10) / rate
    amplitude = 10 ** (-20 / 20) * np.sqrt(2)
    tone = amplitude * np.sin(2 * np.pi * 997 * t)
    soundfile.write(tmp_path / "tone.wav", np.stack([tone, tone], axis=1), rate,
                    subtype="FLOAT")
    found = measure(tmp_path / "tone.wav")
    assert found.lufs == pytest.approx(-20 + 3.01 - 0.691 + 0.691, abs=0.1)
    assert found.true_peak_dbtp == pytest.approx(20 * np.log10(amplitude), abs=0.05)
    assert (found.clipped_share, found.silent_share) == (0.0, 0.0)


def test_silence_has_no_loudness_and_no_peak(tmp_path):
    soundfile.write(tmp_path / "quiet.wav", np.zeros(16000 * 2), 16000)
    found = measure(tmp_path / "quiet.wav")
    assert (found.lufs, found.true_peak_dbtp, found.silent_share) == (None, None, 1.0)


@pytest.mark.slow
def test_300_s_of_48_khz_stereo_is_measured_in_bounded_memory(tmp_path):
    path = synthesised(tmp_path / "long.wav", rate=48000, channels=2, seconds=300.0,
                       fmt="WAV", clip_gain=2.5)
    size = path.stat().st_size
    # A short file first: what measuring imports (pyloudnorm, scipy.signal) is loaded once
    # per process, and is not the file's memory.
    measure(synthesised(tmp_path / "short.wav", rate=48000, channels=2, seconds=1.0, fmt="WAV"))
    tracemalloc.start()
    try:
        found = measure(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 50e6 and peak < 40e6, (size, peak)  # the file is 55 MB, 230 MB as float64
    import pyloudnorm

    data, rate = soundfile.read(str(path))
    assert found.lufs == pytest.approx(pyloudnorm.Meter(rate).integrated_loudness(data),
                                       abs=1e-3)
    assert found.clipped_share == pytest.approx(
        np.count_nonzero(np.abs(data) >= 1 - 2**-15) / data.size, abs=1e-6)
