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


@pytest.fixture
def scored(db, author, tmp_path, settings):
    """A factory of scored submissions on one benchmark: a finished run with overall figures
    and files on disk, as a submission has once scored."""
    from django.utils import timezone

    from scoring.models import Benchmark, ScoringRun, SliceResult
    from submissions.models import ModelEntry, Submission
    from submissions.services import submission_folder
    from tests.conftest import judge_config

    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=4, n_criteria=30)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)

    def make(name="Model A", *, owner=None, public=True, emr=50.0, status="finished"):
        owner = owner or author
        model, _ = ModelEntry.objects.get_or_create(owner=owner, name=name,
                                                    defaults={"organisation": "Lab"})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
            max_attempts=5, status=status, status_times={status: timezone.now().isoformat()})
        SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4,
                                   values={"n": 4, "IFR": 60.0, "CR": 70.0, "EMR": emr})
        submission = Submission.objects.create(
            owner=owner, model=model, benchmark=benchmark, public=public, status="queued",
            current_run=run, coverage=1.0)
        submission.runs.add(run)
        folder = submission_folder(submission)
        (folder / "audio").mkdir(parents=True)
        (folder / "audio" / "s1.wav").write_bytes(b"RIFF")
        Submission.objects.filter(pk=submission.pk).update(
            files_dir=f"submissions/{submission.pk}")
        return submission

    make.benchmark = benchmark
    return make
