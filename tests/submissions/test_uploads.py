"""Upload temporaries (submissions/uploads.py): kept in the project's folder and swept."""

import os
import time

import pytest
from django.core.files import temp
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.tasks import sweep_upload_temporaries
from submissions.uploads import sweep_temporaries

HOUR = 3600


@pytest.fixture
def temp_dir(tmp_path, settings):
    folder = tmp_path / "upload-tmp"
    settings.FILE_UPLOAD_TEMP_DIR = str(folder)
    settings.UPLOAD_TEMP_MAX_AGE_SECONDS = 6 * HOUR
    return folder


def aged(path, hours: float, content: bytes = b"partial upload"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    then = time.time() - hours * HOUR
    os.utime(path, (then, then))
    return path


class TestSweep:
    def test_temporaries_older_than_the_limit_are_deleted_and_fresh_ones_kept(self, temp_dir):
        old = aged(temp_dir / "tmpa1b2c3d4.upload.zip", hours=7)
        older = aged(temp_dir / "tmpzz9.upload", hours=48)
        fresh = aged(temp_dir / "tmpe5f6g7h8.upload.gz", hours=1)
        assert sweep_temporaries() == 2
        assert not old.exists() and not older.exists()
        assert fresh.exists()

    def test_files_that_are_not_upload_temporaries_are_left_alone(self, temp_dir):
        other = aged(temp_dir / "notes.txt", hours=100)
        nested = aged(temp_dir / "tmpdir.upload" / "tmpx.upload.zip", hours=100)
        target = aged(temp_dir.parent / "kept.wav", hours=100)
        (temp_dir / "tmplink.upload").symlink_to(target)
        os.utime(temp_dir / "tmplink.upload", (0, 0), follow_symlinks=False)
        assert sweep_temporaries() == 0
        assert other.exists() and nested.exists() and target.exists()

    def test_a_missing_folder_is_nothing_to_sweep(self, temp_dir):
        assert sweep_temporaries() == 0
        assert not temp_dir.exists()

    def test_the_age_limit_is_a_setting(self, temp_dir, settings):
        settings.UPLOAD_TEMP_MAX_AGE_SECONDS = HOUR // 2
        path = aged(temp_dir / "tmpq.upload.zip", hours=1)
        sweep_upload_temporaries()  # the periodic task
        assert not path.exists()

    def test_the_beat_schedule_runs_the_sweep(self, settings):
        assert any(e["task"] == "submissions.tasks.sweep_upload_temporaries"
                   for e in settings.CELERY_BEAT_SCHEDULE.values())


class TestUploadFolder:
    def test_a_large_upload_streams_into_the_folder(self, client, author, small_bench,
                                                    temp_dir, settings, monkeypatch):
        temp_dir.mkdir()
        made = []
        real = temp.NamedTemporaryFile

        def recording(*args, **kwargs):
            handle = real(*args, **kwargs)
            made.append(handle.name)
            return handle

        monkeypatch.setattr(temp, "NamedTemporaryFile", recording)  # TemporaryUploadedFile's
        settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000  # the archive streams to a temporary file
        client.force_login(author)
        response = client.post("/submit/", {
            "benchmark": "mmae", "model_name": "Editor",
            "predictions": SimpleUploadedFile("submission.jsonl", small_bench["jsonl"]),
            "audio": SimpleUploadedFile("audio.zip", small_bench["zip"])})
        assert response.status_code == 302
        assert Submission.objects.count() == 1
        assert made and all(os.path.dirname(n) == str(temp_dir) for n in made)
        assert list(temp_dir.iterdir()) == []  # moved into the submission's folder
