"""Upload validation (submissions/validation.py): pure, so no database is needed."""

import dataclasses
import io
import json
import stat
import tarfile
import warnings
import wave
import zipfile

import numpy as np
import pytest
import soundfile

from scoring.kinds import get_kind
from scoring.models import JudgeConfig
from scoring.synthetic import write_wav
from submissions.archives import Limits, _copy_limited
from submissions.validation import (
    ValidationResult,
    limits_for,
    limits_from_settings,
    validate_upload,
)

KEYS = ["a1", "b2", "c3"]
MMAE = get_kind("mmae")
LIMITS = Limits(max_files=50, max_unpacked_bytes=5_000_000, max_audio_seconds=5.0,
                max_output_bytes=5_000_000, max_sample_rate=48_000, max_channels=2,
                max_ratio=20.0, ratio_floor_bytes=1_000_000)


def with_limits(**changes) -> Limits:
    return dataclasses.replace(LIMITS, **changes)


@pytest.fixture
def upload(tmp_path):
    folder = tmp_path / "upload"
    folder.mkdir()
    return folder


@pytest.fixture
def audio_dir(tmp_path):
    folder = tmp_path / "work" / "audio"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def wav(tmp_path):
    """The bytes of a short valid WAV."""
    path = tmp_path / "tone.wav"
    write_wav(path, seconds=0.1, frequency=440, seed=1)
    return path.read_bytes()


def sound_bytes(data, *, fmt="WAV", subtype=None, samplerate=16000) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, np.asarray(data), samplerate, format=fmt, subtype=subtype)
    return buffer.getvalue()


def empty_wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(16000)
        handle.writeframes(b"")
    return buffer.getvalue()


def make_zip(path, members: dict) -> object:
    """A zip; a member's value is its bytes, or a ZipInfo-ready (info, bytes) pair."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are made on purpose
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                info, data = data if isinstance(data, tuple) else (name, data)
                archive.writestr(info, data)
    return path


def make_tgz(path, members: dict) -> object:
    """A .tar.gz; a member's value is its bytes, or a prepared TarInfo (links, devices)."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            if isinstance(data, tarfile.TarInfo):
                archive.addfile(data)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def official(sample_id, path):
    return {"id": sample_id, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "edit"},
                                     {"type": "audio", "audio_url": f"wav/{sample_id}/1.wav"}]},
        {"role": "assistant", "content": [{"type": "audio", "audio_url": path}]},
    ]}


def predictions_json(folder, paths: dict, name="predictions.json"):
    path = folder / name
    path.write_text(json.dumps([official(k, v) for k, v in paths.items()]))
    return path


def jsonl_text(paths: dict) -> str:
    return "".join(json.dumps({"id": k, "audio_path": v}) + "\n" for k, v in paths.items())


def submission_jsonl(folder, paths: dict, name="submission.jsonl"):
    path = folder / name
    path.write_text(jsonl_text(paths))
    return path


def run(audio_dir, *, predictions=None, archive=None, limits=LIMITS, keys=KEYS):
    return validate_upload(item_keys=keys, predictions=predictions, archive=archive,
                           audio_dir=audio_dir, limits=limits, outputs=MMAE.outputs)


def strays(tmp_path):
    """Files written anywhere but the upload folder and audio_dir."""
    kept = (tmp_path / "upload", tmp_path / "work" / "audio")
    return [p for p in tmp_path.rglob("*")
            if p.is_file() and not any(p.is_relative_to(k) for k in kept)
            and p.name != "tone.wav"]


def rejected(result, audio_dir, tmp_path) -> list[str]:
    """The errors of a refused archive, after checking that nothing was extracted."""
    assert not result.ok
    assert list(audio_dir.iterdir()) == []
    assert strays(tmp_path) == []
    return result.errors


ALL = {k: f"audio/{k}.wav" for k in KEYS}


class TestHappyPaths:
    def test_it_accepts_predictions_json_with_a_zip(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {f"audio/{k}.wav": wav for k in KEYS})
        result = run(audio_dir, predictions=predictions_json(upload, ALL), archive=archive)
        assert (result.errors, result.warnings, result.missing) == ([], [], {})
        assert result.outputs == ALL
        assert result.ok and result.coverage == 1.0
        assert (audio_dir / "audio" / "b2.wav").read_bytes() == wav

    def test_it_accepts_submission_jsonl_with_a_tar_gz(self, upload, audio_dir, wav):
        archive = make_tgz(upload / "audio.tar.gz", {f"./audio/{k}.wav": wav for k in KEYS})
        result = run(audio_dir, predictions=submission_jsonl(upload, ALL), archive=archive)
        assert (result.errors, result.warnings) == ([], [])
        assert result.outputs == ALL

    def test_it_tells_the_archive_type_by_content_not_extension(self, upload, audio_dir, wav):
        archive = make_tgz(upload / "audio.zip", {f"audio/{k}.wav": wav for k in KEYS})
        result = run(audio_dir, predictions=submission_jsonl(upload, ALL), archive=archive)
        assert result.ok and result.outputs == ALL

    def test_it_finds_the_predictions_inside_one_archive(self, upload, audio_dir, wav):
        text = jsonl_text({"a1": "audio/a1.wav", "b2": "sys/audio/b2.wav", "c3": "c3.wav"})
        archive = make_zip(upload / "all.zip", {
            "sys/submission.jsonl": text.encode(), "sys/audio/a1.wav": wav,
            "sys/audio/b2.wav": wav, "c3.wav": wav, "README.txt": b"notes"})
        result = run(audio_dir, archive=archive)
        assert result.errors == []
        assert result.outputs == {"a1": "sys/audio/a1.wav", "b2": "sys/audio/b2.wav",
                                  "c3": "c3.wav"}
        assert result.warnings == ["all.zip: 1 file(s) not named by any prediction were "
                                   "ignored (README.txt)"]

    def test_it_accepts_paths_under_a_top_level_folder(self, upload, audio_dir, wav):
        members = {f"my-system/audio/{k}.wav": wav for k in KEYS}
        archive = make_zip(upload / "audio.zip", {**members, "my-system/": b"",
                                                  "__MACOSX/my-system/._x": b"junk"})
        result = run(audio_dir, predictions=predictions_json(upload, ALL), archive=archive)
        assert result.errors == []
        assert result.outputs == {k: f"my-system/audio/{k}.wav" for k in KEYS}

    def test_it_reports_partial_coverage_with_missing_items(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": wav})
        predictions = submission_jsonl(upload, {"a1": "audio/a1.wav", "b2": "audio/b2.wav"})
        result = run(audio_dir, predictions=predictions, archive=archive)
        assert result.ok
        assert result.outputs == {"a1": "audio/a1.wav"}
        assert result.missing == {"b2": "audio/b2.wav: file not in the archive",
                                  "c3": "no prediction"}
        assert result.coverage == pytest.approx(1 / 3)
        assert result.warnings == ["2 of 3 items have no output: each scores 0 on every "
                                   "rubric"]

    def test_it_accepts_flac(self, upload, audio_dir):
        flac = sound_bytes(np.zeros(1600, dtype="int16"), fmt="FLAC")
        archive = make_zip(upload / "audio.zip", {"a1.flac": flac})
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "a1.flac"}),
                     archive=archive, keys=["a1"])
        assert result.errors == [] and result.outputs == {"a1": "a1.flac"}

    def test_predictions_without_an_archive_are_all_missing_not_an_error(self, upload,
                                                                         audio_dir):
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "audio/a1.wav"}))
        assert result.ok and result.outputs == {}
        assert result.missing == {"a1": "audio/a1.wav: file not in the archive",
                                  "b2": "no prediction", "c3": "no prediction"}
        assert result.warnings[0] == ("no archive uploaded: none of the 1 predictions has its "
                                      "audio, so every item counts as missing")

    def test_the_report_is_json(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": wav, "extra.wav": wav})
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "audio/a1.wav"}),
                     archive=archive)
        report = json.loads(json.dumps(result.report()))
        assert report["n_items"] == 3 and report["n_outputs"] == 1
        assert report["coverage"] == pytest.approx(1 / 3)
        assert report["missing"] == {"b2": "no prediction", "c3": "no prediction"}
        assert report["errors"] == []
        assert "audio.zip: 1 file(s) not named by any prediction were ignored (extra.wav)" \
            in report["warnings"]
        assert report["ignored"] == {"count": 1, "first": ["extra.wav"]}

    def test_limits_come_from_settings_when_called(self, settings):
        settings.SUBMISSION_MAX_FILES = 7
        settings.SUBMISSION_MAX_UNPACKED_BYTES = 1234
        settings.SUBMISSION_MAX_AUDIO_SECONDS = 9
        settings.SUBMISSION_MAX_OUTPUT_BYTES = 99
        settings.SUBMISSION_MAX_SAMPLE_RATE = 8000
        settings.SUBMISSION_MAX_CHANNELS = 1
        settings.SUBMISSION_MAX_COMPRESSION_RATIO = 5
        settings.SUBMISSION_COMPRESSION_FLOOR_BYTES = 10
        assert limits_from_settings() == Limits(7, 1234, 9.0, 99, 8000, 1, 5.0, 10)

    def test_an_empty_result_has_no_coverage(self):
        assert ValidationResult(n_items=0).coverage == 0.0


class TestUploadShape:
    def test_nothing_uploaded_is_an_error(self, audio_dir):
        assert run(audio_dir).errors == [
            "nothing uploaded: send a predictions file and an archive of the edited audio, "
            "or one archive holding both"]

    def test_an_archive_without_predictions_is_refused(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": wav})
        assert run(audio_dir, archive=archive).errors == [
            "audio.zip: holds no predictions.json or submission.jsonl; put one in the archive "
            "or upload it beside the archive"]

    def test_an_archive_with_two_predictions_files_is_refused(self, upload, audio_dir, wav):
        text = jsonl_text({"a1": "a1.wav"}).encode()
        archive = make_zip(upload / "all.zip", {"a/submission.jsonl": text, "a1.wav": wav,
                                                "b/predictions.json": b"[]"})
        assert run(audio_dir, archive=archive).errors == [
            "all.zip: holds 2 predictions files (a/submission.jsonl, b/predictions.json): "
            "keep exactly one"]


class TestPredictionsFile:
    def test_a_file_that_is_not_utf8_is_refused(self, upload, audio_dir):
        path = upload / "submission.jsonl"
        path.write_bytes(b'{"id": "a1", "audio_path": "\xff.wav"}\n')
        assert run(audio_dir, predictions=path).errors == [
            "submission.jsonl: not UTF-8 text (invalid start byte at byte 28)"]

    def test_invalid_json_names_the_line(self, upload, audio_dir):
        path = upload / "submission.jsonl"
        path.write_text('{"id": "a1", "audio_path": "a1.wav"}\n{"id": \n')
        assert run(audio_dir, predictions=path).errors == [
            "submission.jsonl line 2: invalid JSON at column 8: Expecting value"]

    def test_unknown_and_duplicate_ids_are_all_reported(self, upload, audio_dir):
        path = submission_jsonl(upload, {"a1": "a1.wav", "zz": "zz.wav"})
        path.write_text(path.read_text() + jsonl_text({"a1": "again.wav"}))
        assert run(audio_dir, predictions=path).errors == [
            "submission.jsonl line 2: unknown id 'zz' (not in the benchmark)",
            "submission.jsonl line 3: duplicate id 'a1', first on line 1"]

    def test_faults_inside_an_archive_name_its_member(self, upload, audio_dir, wav):
        archive = make_zip(upload / "all.zip", {"sys/submission.jsonl": b'{"id": "zz", '
                                                b'"audio_path": "a.wav"}\n', "a.wav": wav})
        assert run(audio_dir, archive=archive).errors == [
            "sys/submission.jsonl line 1: unknown id 'zz' (not in the benchmark)"]

    def test_predictions_faults_are_reported_with_archive_faults(self, upload, audio_dir):
        path = upload / "submission.jsonl"
        path.write_text("{oops}\n")
        archive = upload / "audio.zip"
        archive.write_text("not an archive")
        assert run(audio_dir, predictions=path, archive=archive).errors == [
            "audio.zip: not a .zip or .tar.gz archive",
            "submission.jsonl line 1: invalid JSON at column 2: Expecting property name "
            "enclosed in double quotes"]

    @pytest.mark.parametrize("path", ["/etc/passwd", "../a1.wav", "audio/../../a1.wav",
                                      "file:///etc/passwd", "C:\\audio\\a1.wav"])
    def test_a_path_outside_the_archive_is_refused(self, upload, audio_dir, wav, path):
        archive = make_zip(upload / "audio.zip", {"a1.wav": wav})
        result = run(audio_dir, predictions=submission_jsonl(upload, {"b2": "b2.wav",
                                                                      "a1": path}),
                     archive=archive)
        assert result.errors == [f"submission.jsonl line 2 (id a1): {path!r}: paths outside "
                                 "the archive are not allowed"]

    def test_a_path_outside_the_archive_is_refused_in_predictions_json(self, upload,
                                                                        audio_dir):
        result = run(audio_dir, predictions=predictions_json(upload, {"c3": "/tmp/x.wav"}))
        assert result.errors == ["predictions.json entry 1 (id c3): '/tmp/x.wav': paths "
                                 "outside the archive are not allowed"]


class TestArchiveRefusedBeforeExtraction:
    def test_a_file_that_is_no_archive_is_refused(self, upload, audio_dir, tmp_path):
        archive = upload / "audio.zip"
        archive.write_bytes(b"RIFF....WAVE")
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.zip: not a .zip or .tar.gz archive"]

    def test_an_uncompressed_tar_is_refused(self, upload, audio_dir, tmp_path, wav):
        archive = upload / "audio.tar"
        with tarfile.open(archive, "w") as tar:
            info = tarfile.TarInfo("a1.wav")
            info.size = len(wav)
            tar.addfile(info, io.BytesIO(wav))
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.tar: not a .zip or .tar.gz archive"]

    @pytest.mark.parametrize("name", ["../evil.wav", "audio/../../evil.wav", "/tmp/evil.wav",
                                      "..\\evil.wav"])
    def test_traversal_in_a_zip_is_refused(self, upload, audio_dir, tmp_path, wav, name):
        archive = make_zip(upload / "audio.zip", {"a1.wav": wav, name: wav})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == [f"audio.zip: member {name!r}: absolute paths and '..' are not "
                          "allowed in an archive"]

    def test_traversal_in_a_tar_is_refused(self, upload, audio_dir, tmp_path, wav):
        archive = make_tgz(upload / "audio.tgz", {"../evil.wav": wav, "/abs.wav": wav})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == [
            "audio.tgz: member '../evil.wav': absolute paths and '..' are not allowed in an "
            "archive",
            "audio.tgz: member '/abs.wav': absolute paths and '..' are not allowed in an "
            "archive"]

    def test_a_symlink_in_a_zip_is_refused(self, upload, audio_dir, tmp_path):
        info = zipfile.ZipInfo("a1.wav")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive = make_zip(upload / "audio.zip", {"a1.wav": (info, "/etc/passwd")})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.zip: member 'a1.wav': links (symbolic or hard) are not "
                          "allowed in an archive"]

    def test_a_device_in_a_zip_is_refused(self, upload, audio_dir, tmp_path):
        info = zipfile.ZipInfo("dev")
        info.create_system = 3
        info.external_attr = (stat.S_IFCHR | 0o666) << 16
        archive = make_zip(upload / "audio.zip", {"dev": (info, b"")})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.zip: member 'dev': devices and fifos are not allowed in an "
                          "archive"]

    @pytest.mark.parametrize("kind, message", [
        (tarfile.SYMTYPE, "links (symbolic or hard) are not allowed in an archive"),
        (tarfile.LNKTYPE, "links (symbolic or hard) are not allowed in an archive"),
        (tarfile.FIFOTYPE, "devices and fifos are not allowed in an archive"),
        (tarfile.CHRTYPE, "devices and fifos are not allowed in an archive"),
        (tarfile.BLKTYPE, "devices and fifos are not allowed in an archive"),
    ])
    def test_links_and_devices_in_a_tar_are_refused(self, upload, audio_dir, tmp_path, wav,
                                                    kind, message):
        info = tarfile.TarInfo("b2.wav")
        info.type = kind
        info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
        archive = make_tgz(upload / "audio.tar.gz", {"a1.wav": wav, "b2.wav": info})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == [f"audio.tar.gz: member 'b2.wav': {message}"]

    @pytest.mark.parametrize("make, name", [(make_zip, "audio.zip"), (make_tgz, "audio.tgz")])
    def test_too_many_members_are_refused(self, upload, audio_dir, tmp_path, wav, make, name):
        archive = make(upload / name, {f"{k}.wav": wav for k in KEYS})
        limits = with_limits(max_files=2, max_unpacked_bytes=10**9)
        errors = rejected(run(audio_dir, archive=archive, limits=limits), audio_dir, tmp_path)
        assert errors == [f"{name}: more than 2 members (the limit)"]

    def test_a_zip_whose_end_record_hides_its_members_is_refused(self, upload, audio_dir,
                                                                 tmp_path):
        members = {f"{i}" + "x" * 60_000: b"" for i in range(20)}
        archive = make_zip(upload / "audio.zip", members)
        data = bytearray(archive.read_bytes())
        end = data.rfind(b"PK\x05\x06")
        data[end + 8:end + 12] = (1).to_bytes(2, "little") * 2  # claims a single member
        archive.write_bytes(bytes(data))
        limits = with_limits(max_files=1, max_unpacked_bytes=10**9)
        errors = rejected(run(audio_dir, archive=archive, limits=limits), audio_dir, tmp_path)
        assert len(errors) == 1
        assert errors[0].startswith("audio.zip: its directory of members is ")
        assert errors[0].endswith(" bytes, too large for 1 members (the limit)")

    def test_a_zip_bomb_is_refused_by_its_declared_size(self, upload, audio_dir, tmp_path):
        archive = make_zip(upload / "bomb.zip", {"a1.wav": bytes(20_000_000)})
        assert archive.stat().st_size < 100_000
        limits = with_limits(max_files=10, max_unpacked_bytes=1_000_000)
        errors = rejected(run(audio_dir, archive=archive, limits=limits), audio_dir, tmp_path)
        assert errors == ["bomb.zip: unpacks to more than 1000000 bytes (the limit)"]

    def test_a_tar_bomb_is_refused_by_its_declared_size(self, upload, audio_dir, tmp_path):
        archive = make_tgz(upload / "bomb.tgz", {"a.wav": bytes(3_000_000),
                                                 "b.wav": bytes(3_000_000)})
        limits = with_limits(max_files=10, max_unpacked_bytes=4_000_000)
        errors = rejected(run(audio_dir, archive=archive, limits=limits), audio_dir, tmp_path)
        assert errors == ["bomb.tgz: unpacks to more than 4000000 bytes (the limit)"]

    @pytest.mark.parametrize("first", [True, False])
    def test_an_oversized_tar_metadata_header_is_refused(self, upload, audio_dir, tmp_path, wav,
                                                         first):
        archive = upload / "audio.tgz"
        with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            for name in (["a1.wav"] if not first else []) + ["b2.wav"]:
                info = tarfile.TarInfo(name)
                info.size = len(wav)
                info.pax_headers = {"comment": "x" * 2_000_000} if name == "b2.wav" else {}
                tar.addfile(info, io.BytesIO(wav))
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert len(errors) == 1
        assert errors[0].startswith("audio.tgz: member ")
        assert errors[0].endswith("-byte tar metadata header, above the limit of 1048576")

    def test_duplicate_members_are_refused(self, upload, audio_dir, tmp_path, wav):
        info = zipfile.ZipInfo("./a1.wav")
        archive = make_zip(upload / "audio.zip", {"a1.wav": wav, "dup": (info, wav)})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.zip: member './a1.wav': appears more than once"]

    def test_encrypted_members_are_refused(self, upload, audio_dir, tmp_path, wav):
        archive = make_zip(upload / "audio.zip", {"a1.wav": wav})
        data = bytearray(archive.read_bytes())  # zipfile cannot write encrypted members
        data[data.find(b"PK\x03\x04") + 6] |= 0x1
        data[data.find(b"PK\x01\x02") + 8] |= 0x1
        archive.write_bytes(bytes(data))
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == ["audio.zip: member 'a1.wav': encrypted members are not supported"]

    def test_every_bad_member_is_reported(self, upload, audio_dir, tmp_path, wav):
        link = tarfile.TarInfo("l.wav")
        link.type = tarfile.SYMTYPE
        archive = make_tgz(upload / "audio.tgz", {"../x.wav": wav, "l.wav": link})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert len(errors) == 2


class TestArchiveRefusedWhileExtracting:
    def lying_zip(self, path, real: int, declared: int):
        """A zip whose headers declare `declared` bytes for a member of `real` bytes."""
        make_zip(path, {"a1.wav": bytes(real)})
        data = bytearray(path.read_bytes())
        local = data.find(b"PK\x03\x04")
        central = data.find(b"PK\x01\x02")
        data[local + 22:local + 26] = declared.to_bytes(4, "little")
        data[central + 24:central + 28] = declared.to_bytes(4, "little")
        path.write_bytes(bytes(data))
        return path

    def test_a_zip_with_lying_headers_is_refused(self, upload, audio_dir, tmp_path):
        archive = self.lying_zip(upload / "liar.zip", real=3_000_000, declared=1000)
        limits = with_limits(max_files=10, max_unpacked_bytes=100_000)
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "a1.wav"}),
                     archive=archive, limits=limits)
        assert not result.ok
        assert "liar.zip" in result.errors[0] and "a1.wav" in result.errors[0]
        written = sum(p.stat().st_size for p in audio_dir.rglob("*") if p.is_file())
        assert written <= 100_000
        assert strays(tmp_path) == []

    def test_the_copy_stops_at_the_real_byte_count(self):
        class Endless:
            def read(self, n):
                return bytes(n)

        sink = io.BytesIO()
        assert _copy_limited(Endless(), sink, 3_000_000) is None
        assert len(sink.getvalue()) <= 3_000_000
        assert _copy_limited(io.BytesIO(b"abc"), io.BytesIO(), 3) == 3

    def test_a_truncated_tar_gz_is_refused(self, upload, audio_dir, tmp_path):
        noise = np.random.default_rng(0).bytes(300_000)
        archive = make_tgz(upload / "audio.tgz", {"a1.wav": noise, "b2.wav": noise})
        archive.write_bytes(archive.read_bytes()[:400_000])
        result = run(audio_dir, archive=archive)
        assert not result.ok
        assert result.errors[0].startswith("audio.tgz: damaged archive: ")
        assert strays(tmp_path) == []

    def test_a_file_and_a_folder_of_the_same_name_are_refused(self, upload, audio_dir,
                                                               tmp_path, wav):
        archive = make_zip(upload / "audio.zip", {"a": wav, "a/b.wav": wav})
        predictions = submission_jsonl(upload, {"a1": "a", "b2": "a/b.wav"})
        result = run(audio_dir, predictions=predictions, archive=archive)
        assert result.errors == ["audio.zip: member 'a/b.wav': cannot be extracted: File "
                                 "exists"]
        assert strays(tmp_path) == []


class TestAudio:
    def check(self, upload, audio_dir, data: bytes, *, limits=LIMITS):
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": data})
        predictions = submission_jsonl(upload, {"a1": "audio/a1.wav"})
        return run(audio_dir, predictions=predictions, archive=archive, limits=limits).errors

    def test_a_file_that_is_not_audio_is_refused(self, upload, audio_dir):
        assert self.check(upload, audio_dir, b"hello, not audio") == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: not readable as WAV or FLAC audio "
            "(Format not recognised.)"]

    def test_audio_that_is_neither_wav_nor_flac_is_refused(self, upload, audio_dir):
        aiff = sound_bytes(np.zeros(160, dtype="int16"), fmt="AIFF")
        assert self.check(upload, audio_dir, aiff) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: AIFF (Apple/SGI) audio; only WAV "
            "and FLAC are accepted"]

    def test_an_empty_wav_is_refused(self, upload, audio_dir):
        assert self.check(upload, audio_dir, empty_wav()) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: empty audio (no frames)"]

    def test_a_wav_longer_than_the_limit_is_refused(self, upload, audio_dir, wav):
        limits = with_limits(max_files=10, max_unpacked_bytes=10**7, max_audio_seconds=0.05)
        assert self.check(upload, audio_dir, wav, limits=limits) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: 0.10 s long, above the limit of "
            "0.05 s"]

    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_non_finite_samples_are_refused(self, upload, audio_dir, bad):
        samples = np.full(50_000, 0.1, dtype="float32")
        samples[-3] = bad
        data = sound_bytes(samples, subtype="FLOAT")
        assert self.check(upload, audio_dir, data) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: contains NaN or infinite samples"]

    def test_a_flac_whose_header_understates_its_length_is_refused(self, upload, audio_dir):
        long = sound_bytes(np.full(16000 * 8, 1000, dtype="int16"), fmt="FLAC")
        assert soundfile.info(io.BytesIO(lie_flac(long, 16000))).frames == 16000
        assert self.check(upload, audio_dir, lie_flac(long, 16000)) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: decodes to more than 5 s (the "
            "limit), though its header declares 1.00 s"]

    def test_a_flac_whose_header_lies_within_the_limit_is_refused_naming_both_lengths(
            self, upload, audio_dir):
        flac = sound_bytes(np.full(16000 * 3, 1000, dtype="int16"), fmt="FLAC")
        assert self.check(upload, audio_dir, lie_flac(flac, 16000)) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: its header declares 16000 frames "
            "(1.00 s) but it decodes to 48000 frames (3.00 s)"]

    @pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
    def test_a_wav_whose_data_size_understates_its_length_is_refused(self, upload, audio_dir,
                                                                     subtype):
        data = lie_wav(sound_bytes(np.full(16000 * 8, 0.1, dtype="float32"), subtype=subtype),
                       frames=16000)
        assert soundfile.info(io.BytesIO(data)).frames == 16000
        assert self.check(upload, audio_dir, data) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: decodes to more than 5 s (the "
            "limit), though its header declares 1.00 s"]

    @pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
    def test_a_wav_whose_data_size_overstates_what_it_holds_is_refused(self, upload, audio_dir,
                                                                       subtype):
        data = lie_wav(sound_bytes(np.full(16000, 0.1, dtype="float32"), subtype=subtype),
                       frames=64000)
        assert soundfile.info(io.BytesIO(data)).frames == 16000  # libsndfile says nothing
        width = {"PCM_16": 2, "FLOAT": 4}[subtype]
        assert self.check(upload, audio_dir, data) == [
            f"submission.jsonl line 1 (id a1): audio/a1.wav: its header declares "
            f"{64000 * width:,} bytes of audio data but the file holds {16000 * width:,} "
            "(cut short?)"]

    def test_nan_past_the_declared_length_is_found(self, upload, audio_dir):
        samples = np.full(16000 * 2, 0.1, dtype="float32")
        samples[-5] = np.nan
        data = lie_wav(sound_bytes(samples, subtype="FLOAT"), frames=16000)
        assert self.check(upload, audio_dir, data) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: contains NaN or infinite samples"]

    def test_an_honest_wav_with_metadata_is_accepted(self, upload, audio_dir):
        buffer = io.BytesIO()
        with soundfile.SoundFile(buffer, "w", 16000, 2, format="WAV", subtype="PCM_24") as f:
            f.title = "edited"
            f.comment = "x" * 300
            f.write(np.full((16000, 2), 0.1))
        assert self.check(upload, audio_dir, buffer.getvalue()) == []

    def test_every_bad_file_is_reported(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {"a1.wav": b"junk", "b2.wav": empty_wav(),
                                                  "c3.wav": wav})
        predictions = submission_jsonl(upload, {k: f"{k}.wav" for k in KEYS})
        errors = run(audio_dir, predictions=predictions, archive=archive).errors
        assert [e.split(":")[0] for e in errors] == ["submission.jsonl line 1 (id a1)",
                                                     "submission.jsonl line 2 (id b2)"]


def lie_flac(data: bytes, total: int) -> bytes:
    """A FLAC whose STREAMINFO says it holds `total` samples per channel: the low 36 bits of
    bytes 13-17 of that block, which starts 8 bytes in (after "fLaC" and its header)."""
    assert data[:4] == b"fLaC"
    field_ = int.from_bytes(data[21:26], "big")
    field_ = field_ & ~(2**36 - 1) | total
    return data[:21] + field_.to_bytes(5, "big") + data[26:]


def lie_wav(data: bytes, *, frames: int) -> bytes:
    """A WAV whose data chunk says it holds `frames` frames, whatever follows it."""
    with soundfile.SoundFile(io.BytesIO(data)) as audio:
        width = {"PCM_16": 2, "PCM_24": 3, "FLOAT": 4}[audio.subtype] * audio.channels
    at = data.index(b"data") + 4
    return data[:at] + (frames * width).to_bytes(4, "little") + data[at + 4:]


def written_files(audio_dir) -> list[str]:
    return sorted(str(p.relative_to(audio_dir)) for p in audio_dir.rglob("*") if p.is_file())


class TestOnlyReferencedMembers:
    def test_members_no_prediction_names_are_not_extracted_and_are_reported(self, upload,
                                                                            audio_dir, wav):
        junk = {f"junk/{i:04}.bin": b"x" * 100 for i in range(40)}
        archive = make_zip(upload / "audio.zip", {**junk, **{f"audio/{k}.wav": wav
                                                             for k in KEYS}})
        result = run(audio_dir, predictions=predictions_json(upload, ALL), archive=archive)
        assert result.ok and result.outputs == ALL
        assert written_files(audio_dir) == sorted(ALL.values())
        assert result.report()["ignored"] == {
            "count": 40, "first": ["junk/0000.bin", "junk/0001.bin", "junk/0002.bin",
                                   "junk/0003.bin", "junk/0004.bin"]}
        assert result.warnings == [
            "audio.zip: 40 file(s) not named by any prediction were ignored (junk/0000.bin, "
            "junk/0001.bin, junk/0002.bin, junk/0003.bin, junk/0004.bin, ...)"]

    def test_the_predictions_inside_the_archive_are_kept_with_the_outputs(self, upload,
                                                                         audio_dir, wav):
        text = jsonl_text({"a1": "a1.wav"}).encode()
        archive = make_tgz(upload / "all.tgz", {"sys/submission.jsonl": text, "sys/a1.wav": wav,
                                                "sys/notes.txt": b"hi"})
        result = run(audio_dir, archive=archive)
        assert result.ok and result.outputs == {"a1": "sys/a1.wav"}
        assert written_files(audio_dir) == ["sys/a1.wav", "sys/submission.jsonl"]
        assert result.report()["ignored"] == {"count": 1, "first": ["sys/notes.txt"]}

    def test_nothing_ignored_is_reported_as_nothing(self, upload, audio_dir, wav):
        archive = make_zip(upload / "audio.zip", {f"audio/{k}.wav": wav for k in KEYS})
        result = run(audio_dir, predictions=predictions_json(upload, ALL), archive=archive)
        assert result.report()["ignored"] == {"count": 0, "first": []}

    def test_an_archive_holding_none_of_the_named_outputs_is_refused_naming_both_sides(
            self, upload, audio_dir, tmp_path, wav):
        held = {f"outputs/{i}.wav": wav for i in range(7)}
        archive = make_zip(upload / "audio.zip", held)
        predictions = submission_jsonl(upload, {k: f"edited/{k}.wav" for k in KEYS})
        errors = rejected(run(audio_dir, predictions=predictions, archive=archive), audio_dir,
                          tmp_path)
        assert errors == [
            "audio.zip: holds none of the 3 output files the predictions name: they name "
            "edited/a1.wav, edited/b2.wav, edited/c3.wav; the archive holds outputs/0.wav, "
            "outputs/1.wav, outputs/2.wav, outputs/3.wav, outputs/4.wav, ... (7 files)"]

    def test_an_archive_holding_only_the_predictions_is_refused(self, upload, audio_dir,
                                                                 tmp_path):
        text = jsonl_text({"a1": "a1.wav"}).encode()
        archive = make_zip(upload / "all.zip", {"submission.jsonl": text})
        errors = rejected(run(audio_dir, archive=archive), audio_dir, tmp_path)
        assert errors == [
            "all.zip: holds none of the 1 output files the predictions name: they name "
            "a1.wav; the archive holds no other file"]


def silence_zip(path, members: int, size: int, *, level: int = 1):
    """A zip of `members` WAV-named files of `size` zero bytes each (digital silence)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for key in KEYS[:members]:
            with archive.open(f"{key}.wav", "w", force_zip64=True) as member:
                for _ in range(size // CHUNK):
                    member.write(ZEROS)
    return path


CHUNK = 2**20
ZEROS = bytes(CHUNK)


class TestArchiveRefusedBeforeWriting:
    def test_a_bomb_within_the_size_limits_is_refused_by_its_ratio(self, upload, audio_dir,
                                                                    tmp_path):
        archive = silence_zip(upload / "audio.zip", 3, 4 * CHUNK)
        limits = with_limits(max_unpacked_bytes=10**9, max_output_bytes=10**9)
        result = run(audio_dir, predictions=submission_jsonl(upload, {k: f"{k}.wav"
                                                                       for k in KEYS}),
                     archive=archive, limits=limits)
        [error] = rejected(result, audio_dir, tmp_path)
        packed = sum(i.compress_size for i in zipfile.ZipFile(archive).infolist())
        assert error == (
            f"audio.zip: its outputs unpack to {12 * CHUNK} bytes from {packed} compressed "
            f"bytes, {12 * CHUNK // packed} times as many, above the limit of 20 (a zip bomb, "
            "or mostly digital silence: store such files uncompressed, as zip -0 does)")

    def test_a_tar_gz_bomb_is_refused_by_its_ratio(self, upload, audio_dir, tmp_path):
        archive = make_tgz(upload / "audio.tgz", {f"{k}.wav": bytes(2 * CHUNK) for k in KEYS})
        limits = with_limits(max_unpacked_bytes=10**9, max_output_bytes=10**9)
        result = run(audio_dir, predictions=submission_jsonl(upload, {k: f"{k}.wav"
                                                                       for k in KEYS}),
                     archive=archive, limits=limits)
        [error] = rejected(result, audio_dir, tmp_path)
        assert error.startswith(f"audio.tgz: its outputs unpack to {6 * CHUNK} bytes from "
                                f"{archive.stat().st_size} compressed bytes")

    @pytest.mark.slow
    def test_with_the_default_limits_a_one_megabyte_bomb_writes_nothing(self, upload,
                                                                        audio_dir, tmp_path):
        archive = silence_zip(upload / "bomb.zip", 3, 100 * CHUNK, level=9)
        assert archive.stat().st_size < CHUNK
        result = run(audio_dir, predictions=submission_jsonl(upload, {k: f"{k}.wav"
                                                                       for k in KEYS}),
                     archive=archive, limits=limits_from_settings())
        [error] = rejected(result, audio_dir, tmp_path)
        assert error.startswith(f"bomb.zip: its outputs unpack to {300 * CHUNK} bytes")

    def test_silence_below_the_floor_passes(self, upload, audio_dir):
        silence = sound_bytes(np.zeros(16_000, dtype="int16"))  # one second
        archive = make_zip(upload / "audio.zip", {f"{k}.wav": silence for k in KEYS})
        packed = sum(i.compress_size for i in zipfile.ZipFile(archive).infolist())
        assert sum(i.file_size for i in zipfile.ZipFile(archive).infolist()) > 20 * packed
        result = run(audio_dir, predictions=submission_jsonl(upload, {k: f"{k}.wav"
                                                                       for k in KEYS}),
                     archive=archive)
        assert result.errors == [] and len(result.outputs) == 3

    def test_silence_stored_uncompressed_passes_above_the_floor(self, upload, audio_dir):
        silence = sound_bytes(np.zeros(400_000, dtype="int16"))  # 800 KB each
        path = upload / "audio.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
            for key in KEYS:
                archive.writestr(f"{key}.wav", silence)
        limits = with_limits(max_audio_seconds=60.0)
        result = run(audio_dir, predictions=submission_jsonl(upload, {k: f"{k}.wav"
                                                                       for k in KEYS}),
                     archive=path, limits=limits)
        assert result.errors == [] and len(result.outputs) == 3

    def test_an_output_above_the_byte_limit_is_refused_naming_it(self, upload, audio_dir,
                                                                 tmp_path, wav):
        archive = make_zip(upload / "audio.zip", {"a1.wav": wav, "b2.wav": wav + bytes(500)})
        limits = with_limits(max_output_bytes=len(wav) + 100)
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "a1.wav",
                                                                      "b2": "b2.wav"}),
                     archive=archive, limits=limits)
        assert rejected(result, audio_dir, tmp_path) == [
            f"submission.jsonl line 2 (id b2): b2.wav: {len(wav) + 500} bytes, above the "
            f"limit of {len(wav) + 100} bytes"]


class TestAudioFormatLimits:
    def check(self, upload, audio_dir, data: bytes, **changes):
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": data})
        predictions = submission_jsonl(upload, {"a1": "audio/a1.wav"})
        return run(audio_dir, predictions=predictions, archive=archive,
                   limits=with_limits(**changes)).errors

    def test_a_sample_rate_above_the_limit_is_refused_naming_it(self, upload, audio_dir):
        data = sound_bytes(np.zeros(9600, dtype="int16"), samplerate=96_000)
        assert self.check(upload, audio_dir, data) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: a sample rate of 96000 Hz, above "
            "the limit of 48000 Hz"]

    def test_more_channels_than_the_limit_are_refused_naming_them(self, upload, audio_dir):
        data = sound_bytes(np.zeros((1600, 3), dtype="int16"))
        assert self.check(upload, audio_dir, data) == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: 3 channels, above the limit of 2"]

    def test_an_output_the_judge_config_cannot_decode_is_named_with_its_figures(
            self, upload, audio_dir):
        data = sound_bytes(np.zeros((4 * 48_000, 2), dtype="int16"), samplerate=48_000)
        config = JudgeConfig(name="vllm-033", max_audio_decode_bytes=1024 ** 2,
                             max_audio_file_mb=128, vllm_version="0.33.0")
        limits = dataclasses.replace(limits_for(config), **{
            f.name: getattr(LIMITS, f.name) for f in dataclasses.fields(LIMITS)
            if f.name not in ("max_decoded_bytes", "judge_source")})
        archive = make_zip(upload / "audio.zip", {"audio/a1.wav": data})
        errors = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "audio/a1.wav"}),
                     archive=archive, limits=limits).errors
        assert errors == [
            "submission.jsonl line 1 (id a1): audio/a1.wav: 4.00 s at 48000 Hz x 2 channel(s) "
            "decodes to 1.5 MiB of samples, above the 1 MiB judge config vllm-033 (vLLM "
            "0.33.0) takes"]

    def test_the_judge_configs_file_limit_narrows_the_sites_and_is_named(self, settings):
        settings.SUBMISSION_MAX_OUTPUT_BYTES = 128 * 1024 ** 2
        config = JudgeConfig(name="small-host", max_audio_file_mb=25, vllm_version="0.33.0")
        limits = limits_for(config)
        assert limits.max_output_bytes == 25 * 1024 ** 2
        assert limits.judge_source == "judge config small-host (vLLM 0.33.0)"
        assert limits.max_decoded_bytes == config.max_audio_decode_bytes == 256 * 1024 ** 2

    def test_at_the_limits_a_file_passes(self, upload, audio_dir):
        data = sound_bytes(np.zeros((4800, 2), dtype="int16"), samplerate=48_000)
        assert self.check(upload, audio_dir, data) == []

    @pytest.mark.slow
    def test_five_minutes_of_48_khz_stereo_pass_with_the_default_limits(self, upload,
                                                                       audio_dir):
        rng = np.random.default_rng(4)
        samples = rng.integers(-3000, 3000, size=(300 * 48_000, 2), dtype="int16")
        path = upload / "long.wav"
        soundfile.write(path, samples, 48_000, subtype="PCM_16")
        archive = upload / "audio.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as handle:
            handle.write(path, "a1.wav")
        result = run(audio_dir, predictions=submission_jsonl(upload, {"a1": "a1.wav"}),
                     archive=archive, limits=limits_from_settings(), keys=["a1"])
        assert result.errors == [] and result.outputs == {"a1": "a1.wav"}
