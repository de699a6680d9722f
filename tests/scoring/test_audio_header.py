"""The `score` command's header check: on a PCM WAV the standard library's reading gives
libsndfile's verdict, and anything else goes to libsndfile."""

import struct
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from scoring.kinds import audio_header
from scoring.kinds.audio_header import _libsndfile_problem, _pcm_wav_frames, check_audio


def _wav(path, subtype="PCM_16", channels=1, frames=800, rate=16000):
    data = np.random.default_rng(1).uniform(-0.5, 0.5, (frames, channels))
    soundfile.write(str(path), data, rate, subtype=subtype, format="WAV")
    return path


def _data_offset(raw: bytes) -> int:
    return raw.index(b"data") + 8


def _pcm_cases(tmp_path):
    """Plain PCM WAVs, well made and not, that `wave` reads."""
    cases = {}
    for subtype, channels in (("PCM_U8", 1), ("PCM_16", 1), ("PCM_24", 2), ("PCM_32", 2)):
        cases[f"{subtype}x{channels}"] = _wav(tmp_path / f"{subtype}{channels}.wav", subtype,
                                              channels)
    cases["no frames"] = _wav(tmp_path / "empty.wav", frames=0)
    raw = _wav(tmp_path / "src.wav", frames=800).read_bytes()
    start = _data_offset(raw)
    cut = tmp_path / "cut.wav"  # its header declares 800 frames; it holds 300 and half a frame
    cut.write_bytes(raw[:start + 601])
    cases["cut short"] = cut
    bare = tmp_path / "bare.wav"  # declares 800 frames, holds none
    bare.write_bytes(raw[:start])
    cases["header alone"] = bare
    tail = tmp_path / "tail.wav"  # a chunk after the audio
    tail.write_bytes(raw + b"LIST" + struct.pack("<I", 4) + b"INFO")
    cases["chunk after the audio"] = tail
    return cases


def _other_cases(tmp_path):
    """Files `wave` does not read: libsndfile alone says what they are."""
    flac = tmp_path / "a.flac"
    soundfile.write(str(flac), np.zeros(800), 16000, format="FLAC")
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"RIFF not really")
    text = tmp_path / "text.wav"
    text.write_text("hello")
    return {"float WAV": _wav(tmp_path / "float.wav", "FLOAT"),
            "double WAV": _wav(tmp_path / "double.wav", "DOUBLE"),
            "extensible WAV": _wav(tmp_path / "ext.wav", "PCM_16", channels=3),
            "FLAC": flac, "garbage": garbage, "text": text}


class TestTheSameVerdictAsLibsndfile:
    def test_pcm_wavs_are_read_without_libsndfile_and_agree_with_it(self, tmp_path):
        verdicts = {}
        for name, path in _pcm_cases(tmp_path).items():
            frames = _pcm_wav_frames(path)
            assert frames == soundfile.info(str(path)).frames, name
            verdicts[name] = check_audio(path)
            assert verdicts[name] == _libsndfile_problem(path), name
        assert verdicts["PCM_16x1"] is None and verdicts["cut short"] is None
        assert verdicts["no frames"] == verdicts["header alone"] == audio_header.EMPTY

    def test_other_files_go_to_libsndfile(self, tmp_path):
        for name, path in _other_cases(tmp_path).items():
            if name != "extensible WAV":  # wave reads WAVE_FORMAT_EXTENSIBLE PCM from 3.12
                assert _pcm_wav_frames(path) is None, name
            assert check_audio(path) == _libsndfile_problem(path), name
        assert check_audio(tmp_path / "float.wav") is None
        assert check_audio(tmp_path / "a.flac") is None
        assert check_audio(tmp_path / "garbage.wav").startswith("unreadable audio")

    @pytest.mark.parametrize("field, value", [("channels", 0), ("rate", 0), ("width", 40)])
    def test_a_header_wave_reads_oddly_goes_to_libsndfile(self, tmp_path, field, value):
        raw = bytearray(_wav(tmp_path / "src.wav").read_bytes())
        fmt = raw.index(b"fmt ") + 8  # tag, channels, rate, bytes/s, block align, bits
        offset = {"channels": fmt + 2, "rate": fmt + 4, "width": fmt + 14}[field]
        size = 4 if field == "rate" else 2
        raw[offset:offset + size] = value.to_bytes(size, "little")
        path = tmp_path / "odd.wav"
        path.write_bytes(bytes(raw))
        assert _pcm_wav_frames(path) is None
        assert check_audio(path) == _libsndfile_problem(path)


@pytest.mark.integration
def test_checking_a_pcm_wav_imports_neither_numpy_nor_libsndfile(tmp_path):
    path = _wav(tmp_path / "ok.wav")
    code = ("import sys; from pathlib import Path; from scoring.kinds.audio_header import "
            f"check_audio; print(check_audio(Path({str(path)!r})), 'numpy' in sys.modules, "
            "'soundfile' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["None", "False", "False"]
