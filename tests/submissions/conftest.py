import io
import json
import time
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from scoring.models import Answer
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.models import Submission
from submissions.services import submission_create
from tests.conftest import free_ports
from tests.factories import board_benchmark, scored_submission


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
    def make(user, *, public=False, predictions=None, archive=None, name=None,
             organisation="Lab", benchmark=None):
        # Another author's model cannot take a name already on the benchmark.
        name = name or ("Model A" if user.username == "author" else f"Model A of {user}")
        p, a = upload_files(small_bench, predictions=predictions, archive=archive)
        return submission_create(user=user, benchmark=benchmark or small_bench["benchmark"],
                                 model_name=name, metadata={"organisation": organisation},
                                 public=public, predictions=p, archive=a)
    return make


@pytest.fixture
def score_with_files(db, author, tmp_path, settings):
    """`score_with_files(name, emr=..., public=..., status=...)`: a factory of scored
    submissions on one benchmark (`.benchmark`), each a finished run with overall figures and
    files on disk, as a submission has once scored (tests.factories: no judge)."""
    from submissions.services import submission_folder

    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark = board_benchmark()

    def make(name="Model A", *, owner=None, public=True, emr=50.0, status="finished"):
        submission = scored_submission(benchmark, owner or author, name,
                                       {("overall", ""): (60.0, 70.0, emr)}, public=public,
                                       status=status)
        folder = submission_folder(submission)
        (folder / "audio").mkdir(parents=True)
        (folder / "audio" / "s1.wav").write_bytes(b"RIFF")
        Submission.objects.filter(pk=submission.pk).update(
            files_dir=f"submissions/{submission.pk}")
        return submission

    make.benchmark = benchmark
    return make


@pytest.fixture
def pipeline_stack(tmp_path, worker_factory, settings, author):
    """A benchmark, a submission's files, and the environment a worker needs."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 3
    bench_root = tmp_path / "bench"
    meta = write_benchmark(bench_root, 18, seed=4)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=bench_root,
                                    slug="mmae", synthetic=True)
    samples = json.loads(meta.read_text())
    predictions = write_system(bench_root, samples, name="sys", seed=9, fmt="jsonl", missing=1)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for sample in samples[:-1]:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(bench_root / relative, relative)
    ports = free_ports(2)
    worker = worker_factory(ports, SCORING_BATCH_ITEMS="3")

    _, key = ApiToken.issue(user=author, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    yield {"benchmark": benchmark, "predictions": predictions, "archive": buffer.getvalue(),
           "ports": ports, "worker": worker, "client": client, "samples": samples,
           "log": worker.log_path}


def upload(stack):
    archive = io.BytesIO(stack["archive"])
    archive.name = "audio.zip"
    with open(stack["predictions"], "rb") as predictions:
        response = stack["client"].post("/api/submissions/", {
            "benchmark": "mmae", "model_name": "Pipeline Model", "predictions": predictions,
            "audio": archive, "public": "true"}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def wait_for(predicate, timeout, what, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def state(submission_id):
    return Submission.objects.select_related("current_run").get(id=submission_id).state


def check_finished(stack, submission_id):
    submission = Submission.objects.select_related("current_run").get(id=submission_id)
    run = submission.current_run
    answers = Answer.objects.filter(run=run)
    keys = set(answers.values_list("criterion_id", "round"))
    assert answers.count() == len(keys) == run.total_queries > 0
    assert run.simulated is True
    assert submission.coverage == pytest.approx(17 / 18)
    response = stack["client"].get(f"/api/submissions/{submission_id}/files/results.jsonl")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert response.status_code == 200 and len(lines) == run.total_queries
    taxonomy = json.loads(b"".join(stack["client"].get(
        f"/api/submissions/{submission_id}/files/taxonomy.json").streaming_content))
    assert taxonomy["overall"]["n"] == 18
    return run
