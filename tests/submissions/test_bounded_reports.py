"""Reports stay small however bad the upload: the first SUBMISSION_REPORT_MAX_PER_KIND faults
of each kind, and how many more (validation's report, so the status page and the email; the
API's immediate 400; the form's errors). A predictions file is read a line at a time, and one
JSON document only below SUBMISSION_MAX_PREDICTIONS_BYTES."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from scoring.kinds import get_kind
from scoring.kinds.files import PredictionError
from scoring.kinds.mmae.predictions import parse_predictions
from submissions.models import Submission
from submissions.validation import validate_responses, validate_upload
from tests.submissions.test_validation import LIMITS

UNKNOWN = 100_000


def unknown_ids_jsonl(n: int = UNKNOWN) -> bytes:
    return "".join(json.dumps({"id": f"x{i}", "audio_path": f"x{i}.wav"}) + "\n"
                   for i in range(n)).encode()


def test_the_reader_keeps_the_first_of_each_kind_and_counts_the_rest():
    text = unknown_ids_jsonl(120).decode() + '{"id": 5}\n'
    with pytest.raises(PredictionError) as caught:
        parse_predictions(io.StringIO(text), name="s.jsonl", known_ids={"a1"}, per_kind=50)
    problems = caught.value.problems
    assert len(problems) == 52
    assert problems[0] == "s.jsonl line 1: unknown id 'x0' (not in the benchmark)"
    assert problems[49] == "s.jsonl line 50: unknown id 'x49' (not in the benchmark)"
    assert problems[50] == "s.jsonl line 121: 'id' must be a non-empty string, got 5"
    assert problems[51] == "... and 70 more unknown ids"


@pytest.mark.slow
def test_a_validation_report_of_100000_unknown_ids_is_small(tmp_path, settings):
    settings.SUBMISSION_REPORT_MAX_PER_KIND = 50
    predictions = tmp_path / "submission.jsonl"
    predictions.write_bytes(unknown_ids_jsonl())
    audio = tmp_path / "audio"
    audio.mkdir()
    result = validate_upload(item_keys=["a1"], predictions=predictions, archive=None,
                             audio_dir=audio, limits=LIMITS,
                             outputs=get_kind("mmae").outputs)
    errors = result.report()["errors"]
    assert len(errors) == 51 and errors[-1] == "... and 99,950 more unknown ids"
    assert len(json.dumps(result.report())) < 10_000


def test_text_responses_are_bounded_too(tmp_path, settings):
    settings.SUBMISSION_REPORT_MAX_PER_KIND = 3
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"uniq_id": i, "response": "A"}) + "\n"
                                   for i in range(10, 20)))
    from scoring.kinds import get_kind

    result = validate_responses(item_keys=["1"], predictions=predictions, archive=None,
                                parse=get_kind("airbench-foundation").read_predictions)
    assert result.errors[-1] == "... and 7 more unknown uniq_ids" and len(result.errors) == 4


@pytest.fixture
def api(author):
    client = APIClient()
    _, raw = ApiToken.issue(user=author, name="cli")
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


def post(api, small_bench, predictions):
    return api.post("/api/submissions/", {
        "benchmark": small_bench["benchmark"].slug, "model_name": "M",
        "predictions": predictions, "audio": an_archive()}, format="multipart")


def an_archive() -> SimpleUploadedFile:
    """An archive for the upload to be whole, so that only the predictions file is at fault."""
    held = io.BytesIO()
    with zipfile.ZipFile(held, "w") as archive:
        archive.writestr("audio/a1.wav", b"")
    return SimpleUploadedFile("audio.zip", held.getvalue())


@pytest.mark.slow
def test_the_apis_400_lists_the_first_of_each_kind(api, small_bench, settings):
    settings.SUBMISSION_REPORT_MAX_PER_KIND = 50
    response = post(api, small_bench, SimpleUploadedFile("submission.jsonl",
                                                         unknown_ids_jsonl()))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == 51 and errors[-1] == "... and 99,950 more unknown ids"
    assert Submission.objects.count() == 0


def test_the_forms_errors_are_bounded(client, author, small_bench, settings):
    settings.SUBMISSION_REPORT_MAX_PER_KIND = 5
    client.force_login(author)
    response = client.post("/submit/", {
        "benchmark": small_bench["benchmark"].slug, "model_name": "M",
        "predictions": SimpleUploadedFile("submission.jsonl", unknown_ids_jsonl(1000)),
        "audio": an_archive()})
    body = response.content.decode()
    assert "... and 995 more unknown ids" in body
    assert body.count("(not in the benchmark)") == 5
    assert Submission.objects.count() == 0


def test_a_json_document_above_the_limit_is_refused_with_a_clear_message(api, small_bench,
                                                                         settings):
    settings.SUBMISSION_MAX_PREDICTIONS_BYTES = 1000
    document = json.dumps([{"id": f"x{i}", "audio_path": "a.wav"} for i in range(100)])
    response = post(api, small_bench, SimpleUploadedFile("predictions.json",
                                                         document.encode()))
    assert response.status_code == 400
    assert response.json()["errors"] == [
        f"predictions.json: a JSON document of {len(document)} bytes, above the limit of 1000 "
        "for one read whole: send it as JSONL (submission.jsonl, one prediction a line), "
        "which is read a line at a time"]


def test_jsonl_above_that_limit_is_read_line_by_line(api, small_bench, settings):
    settings.SUBMISSION_MAX_PREDICTIONS_BYTES = 1000
    response = post(api, small_bench, SimpleUploadedFile("submission.jsonl",
                                                         unknown_ids_jsonl(100)))
    assert response.status_code == 400
    assert response.json()["errors"][0] == ("submission.jsonl line 1: unknown id 'x0' (not in "
                                            "the benchmark)")
