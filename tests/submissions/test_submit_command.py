"""manage.py submit: the CLI against a live server, speaking HTTP only."""

import io
import json
import tracemalloc
import zipfile

import httpx
import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiToken
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark, write_system
from submissions.management.commands import submit as submit_command
from submissions.models import Submission
from submissions.services import validate_submission
from tests.conftest import free_ports

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1024**2


@pytest.fixture
def system_files(tmp_path, settings):
    """A 6-sample benchmark and a system's files, as an author has them on disk."""
    settings.MEDIA_ROOT = tmp_path / "media"
    root = tmp_path / "bench"
    meta = write_benchmark(root, 6, seed=8)
    benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae", synthetic=True)
    samples = json.loads(meta.read_text())
    predictions = write_system(root, samples, name="sys", seed=3, fmt="jsonl")
    audio = tmp_path / "audio.zip"
    with zipfile.ZipFile(audio, "w") as archive:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(root / relative, relative)
    return {"predictions": predictions, "audio": audio, "samples": samples}


@pytest.fixture
def key(author):
    return ApiToken.issue(user=author, name="cli")[1]


@pytest.fixture
def queue(monkeypatch):
    """No worker: the ids handed to validation are recorded instead."""
    ids = []
    monkeypatch.setattr(validate_submission, "delay", ids.append)
    return ids


def submit(url, key, *args, files=None):
    """Run the command in-process; its output (the progress bars go to `err`)."""
    out, err = io.StringIO(), io.StringIO()
    options = [] if files is None else ["--predictions", str(files["predictions"]),
                                        "--audio", str(files["audio"])]
    call_command("submit", "--url", url, "--token", key, "--benchmark", "mmae",
                 "--model-name", "CLI Model", *options, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.integration
def test_it_uploads_and_follows_the_submission_to_its_figures(
        live_server, system_files, key, settings, thread_simulator_factory, worker_factory):
    ports = free_ports(2)
    thread_simulator_factory(ports=ports, latency_ms=5)
    worker_factory(ports)()
    out, err = submit(live_server.url, key, "--poll-seconds", "0.3", "--timeout", "60",
                      "--public", "--organisation", "Lab", files=system_files)
    submission = Submission.objects.select_related("current_run", "model").get()
    assert submission.state == "finished" and submission.public
    assert submission.model.organisation == "Lab"
    assert f"submission {submission.id}: uploaded" in out
    assert f"submission {submission.id}: finished" in out
    assert "overall (6 samples, coverage 100%): EMR " in out  # the kind's order
    assert " CR " in out and " EMR " in out and "simulated" in out
    assert f"{live_server.url}/api/submissions/{submission.id}/files/results.jsonl" in out
    assert "uploading" in err and "finished" in err


@pytest.mark.slow
def test_no_wait_prints_the_id_and_returns_once_uploaded(live_server, system_files, key, queue,
                                                         monkeypatch):
    asked, request = [], submit_command.Api.request

    def spy(api, method, path, **kwargs):
        asked.append((method, path))
        return request(api, method, path, **kwargs)

    monkeypatch.setattr(submit_command.Api, "request", spy)
    # No worker: following the submission would wait until the timeout and fail there.
    out, _ = submit(live_server.url, key, "--no-wait", "--timeout", "30", files=system_files)
    assert asked == [("POST", "/api/submissions/")]  # the upload, and nothing after it
    submission = Submission.objects.get()
    assert queue == [submission.id]
    assert out.splitlines() == [
        f"submission {submission.id}: uploaded",
        f"follow it with GET {live_server.url}/api/submissions/{submission.id}/"]


def test_a_wrong_token_gets_401(live_server, system_files, queue):
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, "not-a-key", files=system_files)
    assert "HTTP 401" in str(caught.value) and "Invalid token." in str(caught.value)
    assert not Submission.objects.exists()


@pytest.mark.slow
def test_unknown_ids_in_the_predictions_print_the_server_s_line(live_server, system_files, key,
                                                               queue):
    with open(system_files["predictions"], "a") as handle:
        handle.write(json.dumps({"id": "nope", "audio_path": "systems/sys/nope.wav"}) + "\n")
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, key, files=system_files)
    assert "HTTP 400" in str(caught.value)
    assert "submission.jsonl line 7: unknown id 'nope' (not in the benchmark)" \
        in str(caught.value)
    assert not Submission.objects.exists() and queue == []


def test_a_missing_file_is_named_before_any_request(live_server, system_files, key, tmp_path,
                                                    monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a request was made")

    monkeypatch.setattr(httpx.Client, "send", refuse)
    missing = tmp_path / "nowhere.zip"
    with pytest.raises(CommandError, match=f"--audio {missing}: no such file"):
        submit(live_server.url, key, files={**system_files, "audio": missing})
    assert not Submission.objects.exists()


def test_an_unreachable_url_is_said_so(system_files, key):
    url = f"http://127.0.0.1:{free_ports(1)[0]}"
    with pytest.raises(CommandError, match=f"cannot reach {url}"):
        submit(url, key, files=system_files)


@pytest.mark.slow
def test_files_in_each_others_places_are_refused_naming_both(live_server, system_files, key, queue):
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, key, "--organisation", "O" * 201,
               files={"predictions": system_files["audio"], "audio": system_files["predictions"]})
    name = system_files["predictions"].name
    assert str(caught.value).splitlines()[1:] == [
        "  predictions: this is an archive: choose it under Output audio",
        f"  audio: {name} is not an archive: Output audio takes a .zip or .tar.gz of the "
        "output files (a predictions file goes under Predictions)",
        "  organisation: Organisation is 201 characters; the limit is 200"]
    assert not Submission.objects.exists()


def test_the_daily_quota_is_reported(live_server, system_files, key, settings, queue):
    settings.SUBMISSIONS_PER_DAY = 0
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, key, files=system_files)
    assert "HTTP 429" in str(caught.value)
    assert "daily quota reached: 0 submissions in 24 hours" in str(caught.value)


@pytest.mark.slow
def test_a_rejected_submission_prints_each_error_and_fails(live_server, system_files, key,
                                                           monkeypatch, tmp_path):
    # Validation runs in the server's request thread, after the upload's commit.
    monkeypatch.setattr(validate_submission, "delay", validate_submission)
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 but not a zip archive")  # passes the upload's first look
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, key, "--poll-seconds", "0.1", "--timeout", "20",
               files={**system_files, "audio": broken})
    submission = Submission.objects.get()
    assert submission.state == "rejected"
    message = str(caught.value)
    assert message.startswith(f"submission {submission.id} was rejected:")
    for line in submission.report["errors"]:
        assert f"\n  {line}" in message


@pytest.mark.slow
def test_a_large_file_streams_in_small_reads(live_server, system_files, key, queue, tmp_path,
                                             monkeypatch):
    reads = []
    read = submit_command.ProgressFile.read

    def spy(self, size=-1):
        chunk = read(self, size)
        reads.append(len(chunk))
        return chunk

    monkeypatch.setattr(submit_command.ProgressFile, "read", spy)
    large = tmp_path / "large.zip"
    with open(large, "wb") as handle:
        handle.write(b"PK\x03\x04")  # a zip's first bytes, as the upload checks
        handle.truncate(50 * MB)
    # A small upload first: what the site imports on its first upload is loaded once per
    # process, and is not the upload's memory.
    submit(live_server.url, key, "--no-wait", files=system_files)
    reads.clear()
    tracemalloc.start()  # traces the live server's thread too
    try:
        _, err = submit(live_server.url, key, "--no-wait", files={**system_files, "audio": large})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * MB
    assert sum(reads) == 50 * MB + system_files["predictions"].stat().st_size
    assert max(reads) <= 64 * 1024 and len(reads) > 800
    stored = [p for p in (tmp_path / "media" / Submission.objects.latest("pk").files_dir).rglob("*")
              if p.name.endswith("large.zip")]
    assert [p.stat().st_size for p in stored] == [50 * MB]
    assert "100%" in err


def test_the_model_name_is_stored_normalised(live_server, system_files, key, queue):
    submit(live_server.url, key, "--no-wait", "--model-name", "\u202eCLI\u200b\u00a0Model",
           files=system_files)
    assert Submission.objects.get().model.name == "CLI Model"


@pytest.mark.slow
def test_a_look_alike_of_another_authors_public_name_is_refused(live_server, system_files, key,
                                                                queue, other_author):
    submit(live_server.url, key, "--no-wait", "--public", files=system_files)
    other_key = ApiToken.issue(user=other_author, name="cli")[1]
    with pytest.raises(CommandError) as caught:
        submit(live_server.url, other_key, "--model-name", "\u0421LI Model", files=system_files)
    assert "HTTP 409" in str(caught.value)
    assert ("the name '\u0421LI Model' is taken on this benchmark by another author's public "
            "model (names that look alike count as the same)") in str(caught.value)
    assert not Submission.objects.filter(owner=other_author).exists()


def test_a_private_name_changes_no_other_authors_answer(live_server, system_files, key, queue,
                                                        other_author):
    """The look-alike upload of a private model's name is taken as any other (a 409 would
    tell its author that the private model exists)."""
    submit(live_server.url, key, "--no-wait", "--model-name", "CLI Editor", files=system_files)
    other_key = ApiToken.issue(user=other_author, name="cli")[1]
    submit(live_server.url, other_key, "--no-wait", "--model-name", "CLI Ed\u0456tor",
           files=system_files)
    assert Submission.objects.get(owner=other_author).model.name == "CLI Ed\u0456tor"
