import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from scoring.runs import run_move
from submissions.models import Submission
from submissions.services import submission_validate
from tests.conftest import _use_broker, free_ports


@pytest.fixture
def api(author):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    return client


def payload(bench, **overrides):
    data = {
        "benchmark": "mmae", "model_name": "Editor-7B", "organisation": "Lab",
        "link": "https://example.org/paper", "parameters": "7B", "licence": "MIT",
        "open_weights": "true", "base_family": "qwen", "description": "an editor",
        "public": "false", "predictions": SimpleUploadedFile("submission.jsonl", bench["jsonl"]),
        "audio": SimpleUploadedFile("audio.zip", bench["zip"]),
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_an_upload_returns_201_with_id_and_status(api, small_bench, author):
    response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 201
    submission = Submission.objects.get()
    url = f"http://testserver/api/submissions/{submission.id}/"
    assert response.json() == {"id": submission.id, "status": "uploaded", "url": url}
    assert response["Location"] == url
    assert (submission.owner, submission.public) == (author, False)
    model = submission.model
    assert (model.name, model.organisation, model.parameters, model.licence,
            model.open_weights, model.base_family) == ("Editor-7B", "Lab", "7B", "MIT", True,
                                                       "qwen")


def test_an_unknown_base_family_is_refused_by_name(api, small_bench):
    response = api.post("/api/submissions/", payload(small_bench, base_family="qwen3"),
                        format="multipart")
    assert response.status_code == 400 and "base_family" in response.json()["errors"][0]
    assert not Submission.objects.exists()


def test_the_detail_shows_progress_coverage_report_and_runs(api, small_bench):
    submission_id = api.post("/api/submissions/", payload(small_bench),
                             format="multipart").json()["id"]
    submission_validate(submission_id)
    body = api.get(f"/api/submissions/{submission_id}/").json()
    assert body["status"] == "queued"
    assert body["coverage"] == 1.0 and body["partial"] is False
    assert body["progress"]["done"] == 0 and body["progress"]["total"] > 0
    assert body["progress"]["queue_position"] == 1
    assert body["report"]["errors"] == [] and body["report"]["n_items"] == 6
    [run] = body["runs"]
    assert run["status"] == "queued" and run["judge"] == "Qwen3-Omni-30B-A3B-Instruct"
    assert "queued" in run["status_times"]
    assert [s["id"] for s in api.get("/api/submissions/").json()] == [submission_id]


def test_the_status_times_follow_the_status_into_its_run(api, small_bench):
    """`status_times` names every state `status` went through: the upload's, then its run's
    (they stopped at "queued" while `status` read "finished")."""
    submission_id = api.post("/api/submissions/", payload(small_bench),
                             format="multipart").json()["id"]
    submission_validate(submission_id)
    run = Submission.objects.get(pk=submission_id).current_run
    for source, target in (("queued", "scoring"), ("scoring", "aggregating"),
                           ("aggregating", "finished")):
        assert run_move(run.id, [source], target)
        body = api.get(f"/api/submissions/{submission_id}/").json()
        assert body["status"] == target
        assert list(body["status_times"]) == [
            "uploaded", "validating", "queued", "scoring", "aggregating", "finished"][
            :["scoring", "aggregating", "finished"].index(target) + 4]
    times = body["status_times"]
    assert times["finished"] == body["runs"][0]["status_times"]["finished"]
    assert sorted(times.values()) == list(times.values())  # in the order entered


def test_predictions_nested_too_deeply_are_a_400_naming_the_file(api, small_bench):
    deep = SimpleUploadedFile("predictions.json", b"[" * 100_000 + b"]" * 100_000)
    response = api.post("/api/submissions/", payload(small_bench, predictions=deep),
                        format="multipart")
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "predictions.json: invalid JSON at line 1, column 65: nested too deeply (more than 64 "
        "levels)"]}
    assert Submission.objects.count() == 0


def test_it_needs_a_token(small_bench):
    response = APIClient().post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 401
    assert Submission.objects.count() == 0


def test_a_bad_token_is_refused(small_bench):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    assert client.get("/api/submissions/").status_code == 401


NO_ARCHIVE = ("no archive of the output files: mmae takes predictions.json (the official "
              "format) or submission.jsonl, plus a .zip or .tar.gz of the edited WAV/FLAC "
              "files, or one archive holding both; a predictions file alone would score 0 on "
              "every item")


@pytest.mark.parametrize("overrides, errors", [
    ({"benchmark": None, "model_name": None},
     ["benchmark: This field is required.", "model_name: This field is required."]),
    ({"benchmark": "nope"}, ["benchmark: no benchmark 'nope'"]),
    ({"link": "not a url"}, ["link: Enter a valid URL."]),
    ({"public": "perhaps"}, ["public: Must be a valid boolean."]),
    ({"predictions": None, "audio": None},
     ["upload a predictions file and an archive of the edited audio, or one archive holding "
      "both"]),
    # Predictions without their audio would score 0 on every item: refused, as an archive
    # holding none of the files is.
    ({"audio": None}, [NO_ARCHIVE]),
    ({"audio": None, "predictions": SimpleUploadedFile(
        "submission.jsonl", b'{"id": "zz", "audio_path": "a.wav"}\n')},
     ["submission.jsonl line 1: unknown id 'zz' (not in the benchmark)", NO_ARCHIVE]),
    ({"predictions": SimpleUploadedFile("submission.jsonl",
                                        b'{"id": "zz", "audio_path": "a.wav"}\n{"id": 5}\n')},
     ["submission.jsonl line 1: unknown id 'zz' (not in the benchmark)",
      "submission.jsonl line 2: 'id' must be a non-empty string, got 5"]),
    ({"predictions": SimpleUploadedFile("predictions.json", b"[{")},
     ["predictions.json: invalid JSON at line 1, column 3: Expecting property name enclosed "
      "in double quotes"]),
    ({"predictions": SimpleUploadedFile("predictions.json", b"\xff\xfe")},
     ["predictions.json: not UTF-8 text (invalid start byte at byte 0)"]),
    # A wrong file given as predictions is named for what it is.
    ({"predictions": SimpleUploadedFile("predictions.json", b"\x89PNG\r\n\x1a\n" + bytes(64))},
     ["predictions.json: a PNG image, not a text file of predictions (JSON or JSONL)"]),
])
def test_bad_input_is_a_400_naming_every_problem_and_stores_nothing(api, small_bench,
                                                                     overrides, errors):
    response = api.post("/api/submissions/", payload(small_bench, **overrides),
                        format="multipart")
    assert response.status_code == 400
    assert response.json() == {"errors": errors}
    assert Submission.objects.count() == 0


def test_an_upload_above_the_size_limit_is_refused(api, small_bench, settings):
    settings.SUBMISSION_MAX_UPLOAD_BYTES = 100
    response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 400
    sizes = [len(small_bench["jsonl"]), len(small_bench["zip"])]
    assert response.json()["errors"] == [  # both files named in one answer
        f"predictions: submission.jsonl: {sizes[0]} bytes is above the limit of 100",
        f"audio: audio.zip: {sizes[1]} bytes is above the limit of 100"]


def test_the_quota_is_a_429(api, small_bench, settings):
    settings.SUBMISSIONS_PER_DAY = 0
    response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 429
    assert response.json() == {"errors": ["daily quota reached: 0 submissions in 24 hours"]}


def test_a_file_of_an_unfinished_run_is_404(api, small_bench):
    submission_id = api.post("/api/submissions/", payload(small_bench),
                             format="multipart").json()["id"]
    assert api.get(f"/api/submissions/{submission_id}/files/results.jsonl").status_code == 404


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_other_methods_are_405(api, small_bench, method):
    assert getattr(api, method)("/api/submissions/").status_code == 405


def test_the_author_can_cancel_a_queued_submission_through_the_api(api, small_bench):
    submission_id = api.post("/api/submissions/", payload(small_bench),
                             format="multipart").json()["id"]
    response = api.post(f"/api/submissions/{submission_id}/cancel/")
    assert response.status_code == 409
    assert response.json() == {"errors": [
        f"submission {submission_id} is uploaded; only a queued or scoring one can be "
        "cancelled"]}
    submission_validate(submission_id)
    response = api.post(f"/api/submissions/{submission_id}/cancel/")
    assert response.status_code == 200
    assert response.json() == {"id": submission_id, "status": "cancelled"}


def test_another_user_cannot_cancel_through_the_api(api, small_bench, other_author):
    submission_id = api.post("/api/submissions/", payload(small_bench),
                             format="multipart").json()["id"]
    submission_validate(submission_id)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=other_author, name='o')[1]}")
    assert other.post(f"/api/submissions/{submission_id}/cancel/").status_code == 404


def test_an_upload_while_the_broker_is_down_answers_503_and_stores_nothing(api, small_bench,
                                                                           settings):
    _use_broker(f"redis://127.0.0.1:{free_ports(1)[0]}/0")
    try:
        response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    finally:
        _use_broker("memory://")
    assert response.status_code == 503
    assert response["Retry-After"] == "60"
    assert response.json() == {"errors": [
        "uploads are paused: the queue that validates and scores them cannot be reached. "
        "Nothing was stored; try again in a minute."]}
    assert Submission.objects.count() == 0
    assert not (settings.MEDIA_ROOT / "submissions").exists()


def test_a_full_disk_is_a_503_on_our_side_and_stores_nothing(api, small_bench, client,
                                                            author, monkeypatch):
    """The disk (or quota) full while an upload is stored: the author is told it failed on
    our side, with Retry-After, on the API and on the form; nothing is kept."""
    import errno

    from config.errors import STORAGE_FULL, STORAGE_FULL_RETRY_SECONDS
    from tests.conftest import CAST_PASSWORD
    from tests.submissions.test_file_checks import files

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("submissions.services.upload_keep", full)  # where an upload is kept
    response = api.post("/api/submissions/", payload(small_bench), format="multipart")
    assert response.status_code == 503
    assert response.json() == {"errors": [STORAGE_FULL]}
    assert response["Retry-After"] == str(STORAGE_FULL_RETRY_SECONDS)
    assert client.login(username="author", password=CAST_PASSWORD)
    page = client.post("/submit/", {"benchmark": "mmae", "model_name": "Editor",
                                    **files(small_bench)})
    assert page.status_code == 503 and page["Retry-After"] == str(STORAGE_FULL_RETRY_SECONDS)
    assert STORAGE_FULL in page.content.decode()
    assert not Submission.objects.exists()


def test_an_embargo_is_stored_and_a_past_date_is_refused_by_name(api, small_bench):
    from datetime import timedelta

    from django.utils import timezone

    past = (timezone.now() - timedelta(hours=1)).isoformat()
    response = api.post("/api/submissions/", payload(small_bench, publish_at=past),
                        format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "the publication date (publish_at) must be in the future (UTC); leave it empty to "
        "publish at once"]
    assert not Submission.objects.exists()
    when = timezone.now() + timedelta(days=2)
    response = api.post("/api/submissions/", payload(small_bench, publish_at=when.isoformat(),
                                                     public="false"), format="multipart")
    assert response.status_code == 201
    submission = Submission.objects.get()
    assert submission.public and submission.publish_at == when  # an embargo implies public
    detail = api.get(f"/api/submissions/{submission.id}/").json()
    assert detail["publish_at"].startswith(when.strftime("%Y-%m-%dT%H:%M"))
    assert not Submission.objects.published().exists() and not Submission.objects.shown()
