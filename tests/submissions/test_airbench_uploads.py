"""Uploads to AIR-Bench boards: a JSONL of text responses, checked at once, no archive."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from config.errors import ServiceError
from scoring.kinds.airbench import rules as airbench
from scoring.services import benchmark_import
from submissions.models import Submission
from submissions.services import submission_create, submission_validate
from tests.scoring.airbench_data import chat_meta, foundation_meta, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def boards(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    foundation, _ = benchmark_import(
        kind="airbench-foundation", path=write(tmp_path / "Foundation_meta.json",
                                               foundation_meta()),
        audio_root=None, slug="air-bench-foundation")
    chat, _ = benchmark_import(kind="airbench-chat",
                               path=write(tmp_path / "Chat_meta.json", chat_meta()),
                               audio_root=None, slug="air-bench-chat")
    return {"foundation": foundation, "chat": chat}


def jsonl(*rows) -> SimpleUploadedFile:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    return SimpleUploadedFile("predictions.jsonl", text.encode())


def create(user, benchmark, predictions, archive=None, **options):
    return submission_create(user=user, benchmark=benchmark, model_name="Listener",
                             metadata={}, public=True, predictions=predictions,
                             archive=archive, options=options)


def test_a_valid_upload_is_stored_and_validates_into_a_run_of_the_responses(author, boards):
    submission = create(author, boards["foundation"],
                        jsonl({"uniq_id": 1, "response": "B"}, {"uniq_id": "3", "response": ""}),
                        align=True)
    assert submission.options == {"align": True}
    assert submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.status == "queued"
    run = submission.current_run
    assert run.outputs == {"1": "B", "3": ""}
    assert run.missing == {k: "no prediction" for k in ("2", "4", "5", "6")}
    assert submission.coverage == pytest.approx(2 / 6)
    assert submission.report["warnings"] == [
        "4 of 6 items have no response and count as unanswered"]


def test_a_file_written_as_the_official_inference_script_writes_it_is_accepted_and_scored(
        author, boards):
    rows = [{"uniq_id": 1, "response": "B\u2028because the speaker says so"},
            {"uniq_id": 2, "response": "It\x85is\u2029A."}]
    # Inference_Foundation.py: json.dumps(..., ensure_ascii=False) + "\n" per line
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    submission = create(author, boards["foundation"],
                        SimpleUploadedFile("predictions.jsonl", text.encode()))
    assert submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.status == "queued" and submission.report["errors"] == []
    run = submission.current_run
    assert run.outputs == {"1": rows[0]["response"], "2": rows[1]["response"]}
    assert [airbench.extract_letter(run.outputs[k]) for k in ("1", "2")] == ["B", "A"]


@pytest.mark.parametrize(("rows", "problem"), [
    ([{"uniq_id": 1, "response": "B"}, {"uniq_id": 77, "response": "A"}],
     "predictions.jsonl line 2 (uniq_id 77): unknown uniq_id (not in the benchmark)"),
    ([{"uniq_id": 1, "response": "B"}, {"uniq_id": 1, "response": "A"}],
     "predictions.jsonl line 2 (uniq_id 1): duplicate uniq_id, first on line 1"),
    ([{"uniq_id": 2}], "predictions.jsonl line 1 (uniq_id 2): no 'response' field"),
    ([{"uniq_id": 2, "response": 4}],
     "predictions.jsonl line 1 (uniq_id 2): 'response' must be a string, got 4"),
])
def test_a_faulty_file_is_refused_whole_naming_line_and_uniq_id(author, boards, rows, problem,
                                                                 settings):
    with pytest.raises(ServiceError) as caught:
        create(author, boards["chat"] if rows[0]["uniq_id"] == 77 else boards["foundation"],
               jsonl(*rows))
    assert problem in caught.value.problems
    assert not Submission.objects.exists()
    assert not (settings.MEDIA_ROOT / "submissions").exists()


def test_an_archive_is_refused_on_a_text_board(author, boards):
    with pytest.raises(ServiceError) as caught:
        create(author, boards["chat"], jsonl({"uniq_id": 0, "response": "x"}),
               archive=SimpleUploadedFile("audio.zip", b"PK"))
    assert caught.value.problems == [
        "air-bench-chat takes a predictions file (JSONL: one {\"uniq_id\", \"response\"} "
        "object a line, as the official inference scripts write it) only, no archive"]


def test_a_predictions_file_is_required(author, boards):
    with pytest.raises(ServiceError, match="needs a predictions file"):
        create(author, boards["chat"], None)


def test_alignment_is_an_option_of_the_foundation_track_only(author, boards):
    with pytest.raises(ServiceError) as caught:
        create(author, boards["chat"], jsonl({"uniq_id": 0, "response": "x"}), align=True)
    assert caught.value.problems == ["option 'align' does not apply to air-bench-chat"]


def test_the_api_takes_the_align_option_and_reports_errors_by_line(author, boards):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    bad = client.post("/api/submissions/", {
        "benchmark": "air-bench-foundation", "model_name": "Listener",
        "predictions": jsonl({"uniq_id": 9, "response": "A"})}, format="multipart")
    assert bad.status_code == 400
    assert bad.json() == {"errors": [
        "predictions.jsonl line 1 (uniq_id 9): unknown uniq_id (not in the benchmark)"]}
    good = client.post("/api/submissions/", {
        "benchmark": "air-bench-foundation", "model_name": "Listener", "align": "true",
        "predictions": jsonl({"uniq_id": 1, "response": "A"})}, format="multipart")
    assert good.status_code == 201
    assert Submission.objects.get().options == {"align": True}
    detail = client.get(f"/api/submissions/{good.json()['id']}/").json()
    assert detail["metrics"] == ["acc_strict", "acc", "unparsed"]
    assert detail["files"] == ["scores.json", "results.jsonl"] and detail["overall"] is None


@pytest.mark.parametrize(("second_line", "error"), [
    (b"[" * 100_000 + b"]" * 100_000,
     "invalid JSON at column 65: nested too deeply (more than 64 levels)"),
    (b'{"uniq_id": ' + b"7" * 5000 + b', "response": "B"}',
     "invalid JSON at column 13: a number of more than 4,300 digits"),
], ids=["nested too deeply", "a number of 5,000 digits"])
def test_the_api_refuses_a_line_json_cannot_read_naming_it(author, boards, second_line, error):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    predictions = SimpleUploadedFile("predictions.jsonl", b'{"uniq_id": 1, "response": "B"}\n'
                                     + second_line + b"\n")
    response = client.post("/api/submissions/", {
        "benchmark": "air-bench-chat", "model_name": "Listener", "predictions": predictions},
        format="multipart")
    assert response.status_code == 400
    assert response.json() == {"errors": [f"predictions.jsonl line 2: {error}"]}
    assert not Submission.objects.exists()


def test_the_upload_page_takes_a_jsonl(client, author, boards):
    client.force_login(author)
    response = client.post("/submit/", {
        "benchmark": "air-bench-chat", "model_name": "Listener",
        "predictions": jsonl({"uniq_id": 0, "response": "It is rain."})})
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{submission.id}/"
    assert submission.benchmark == boards["chat"]


@pytest.mark.django_db(transaction=True)
def test_the_cli_uploads_a_jsonl_with_the_align_option(live_server, tmp_path, settings, author,
                                                       monkeypatch):
    from django.core.management import call_command

    from submissions.services import validate_submission

    monkeypatch.setattr(validate_submission, "delay", lambda pk: None)
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark_import(kind="airbench-foundation",
                     path=write(tmp_path / "Foundation_meta.json", foundation_meta()),
                     audio_root=None, slug="air-bench-foundation")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(json.dumps({"uniq_id": 1, "response": "B"}) + "\n")
    key = ApiToken.issue(user=author, name="cli")[1]
    call_command("submit", "--url", live_server.url, "--token", key, "--benchmark",
                 "air-bench-foundation", "--model-name", "CLI Listener", "--predictions",
                 str(predictions), "--align", "--no-wait")
    submission = Submission.objects.get()
    assert submission.options == {"align": True}
    assert submission.benchmark.slug == "air-bench-foundation"
