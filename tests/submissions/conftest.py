import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.services import submission_create


@pytest.fixture
def small_bench(db, tmp_path, settings):
    """A 6-sample benchmark and a system's outputs, as files an author would upload."""
    settings.MEDIA_ROOT = tmp_path / "media"
    root = tmp_path / "bench"
    meta = write_benchmark(root, 6, seed=8)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae")
    samples = json.loads(meta.read_text())
    jsonl = write_system(root, samples, name="sys", seed=3, fmt="jsonl")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(root / relative, relative)
    return {"benchmark": benchmark, "samples": samples, "jsonl": jsonl.read_bytes(),
            "zip": buffer.getvalue(), "root": root}


def upload_files(bench, *, predictions=None, archive=None):
    return (SimpleUploadedFile("submission.jsonl", bench["jsonl"] if predictions is None
                               else predictions),
            SimpleUploadedFile("audio.zip", bench["zip"] if archive is None else archive))


@pytest.fixture
def make_submission(small_bench):
    def make(user, *, public=False, predictions=None, archive=None, name="Model A"):
        p, a = upload_files(small_bench, predictions=predictions, archive=archive)
        return submission_create(user=user, benchmark=small_bench["benchmark"],
                                 model_name=name, metadata={"organisation": "Lab"},
                                 public=public, predictions=p, archive=a)
    return make
