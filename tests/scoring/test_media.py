"""scoring.media: a machine's checked copies of files kept in an S3 bucket (moto in process)."""

import hashlib
import io
import shutil
from types import SimpleNamespace

import boto3
import pytest
from django.core.files.storage import storages
from moto import mock_aws

from scoring import media


@pytest.fixture
def bucket(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="media-test")
        settings.STORAGES = {**settings.STORAGES, "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {"bucket_name": "media-test", "region_name": "us-east-1",
                        "location": "media", "file_overwrite": False}}}
        storages._storages.pop("default", None)
        yield storages["default"]
    storages._storages.pop("default", None)


def put(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.mark.slow
def test_a_folder_saved_is_fetched_whole_by_a_machine_without_it(bucket, settings):
    folder = settings.MEDIA_ROOT / "submissions/7/audio"
    put(folder / "a/one.wav", b"one")
    put(folder / "two.wav", b"two")
    media.folder_save(folder)
    media.folder_save(folder)  # again, as a validation cut short and redone: same names
    assert bucket.listdir("submissions/7/audio") == (["a"], ["two.wav"])
    shutil.rmtree(settings.MEDIA_ROOT)  # another machine: nothing on its disk
    media.folder_fetch(folder)
    assert (folder / "a/one.wav").read_bytes() == b"one"
    assert (folder / "two.wav").read_bytes() == b"two"
    media.folder_delete(folder)
    assert not folder.exists() and bucket.listdir("submissions/7/audio") == ([], [])


@pytest.mark.slow
def test_an_output_is_fetched_on_demand_and_kept_only_when_its_sha256_matches(bucket,
                                                                               settings):
    data = b"RIFF-edited-audio"
    media.file_save(io.BytesIO(data), settings.MEDIA_ROOT / "submissions/3/audio/x.wav")
    root = "submissions/3/audio"
    with pytest.raises(media.MediaError, match="x.wav: the copy from the storage does not"):
        media.output_path(root, "x.wav", "0" * 64)
    local = settings.MEDIA_ROOT / root / "x.wav"
    assert not local.exists() and not list(local.parent.iterdir())  # no partial copy left
    assert media.output_path(root, "x.wav", hashlib.sha256(data).hexdigest()) == local
    assert local.read_bytes() == data


def test_an_output_outside_its_folder_or_not_stored_is_none(bucket, settings):
    put(settings.MEDIA_ROOT / "submissions/4/upload/secret.txt", b"x")
    assert media.output_path("submissions/3/audio", "../../4/upload/secret.txt", None) is None
    assert media.output_path("submissions/3/audio", "missing.wav", None) is None


@pytest.mark.slow
def test_a_run_missing_an_output_in_the_storage_names_it(bucket):
    run = SimpleNamespace(audio_root="submissions/5/audio", outputs={"s1": "gone.wav"},
                          digests={}, benchmark=SimpleNamespace(kind="mmae"))
    with pytest.raises(media.MediaError, match="gone.wav \\(the output of s1\\)"):
        media.outputs_fetch(run, ["s1"])


def test_the_filesystem_storage_reads_files_where_they_lie(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    folder = tmp_path / "submissions/1/audio"
    put(folder / "y.wav", b"y")
    assert media.shared() and media.stored_root(folder) == str(folder)
    assert media.output_path(str(folder), "y.wav", "not checked") == folder / "y.wav"
