"""Which file goes in which field, and names within their limits: each problem said beside the
field it concerns on the upload page, every one of them in one API answer, nothing stored."""

import gzip
import io
import json
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from config.errors import ServiceError
from scoring.services import benchmark_import
from submissions.file_checks import ARCHIVE_IN_PREDICTIONS
from submissions.models import Submission
from tests.conftest import CAST_PASSWORD
from tests.html import one, select
from tests.submissions.test_airbench_uploads import chat_meta, write

LONG_NAME = "E" * 250


def field_texts(html: str) -> dict[str, str]:
    """The text of each form field's `div.field`, by the id of the input inside it."""
    return {control.get("id"): field.text for field in select(html, "div.field")
            for control in field.select("input[id], select[id], textarea[id]")}


def tar_gz() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("a.wav")
        archive.addfile(info, io.BytesIO(b""))
    return buffer.getvalue()


def files(bench, predictions=None, audio=None):
    return {"predictions": predictions or SimpleUploadedFile("submission.jsonl", bench["jsonl"]),
            "audio": audio or SimpleUploadedFile("audio.zip", bench["zip"])}


@pytest.fixture
def post_upload_page(client, author):
    """`post_upload_page(bench, **fields)`: the author's upload form posted, refused (400) and
    nothing stored; the response."""
    assert client.login(username="author", password=CAST_PASSWORD)

    def post(bench, **data):
        response = client.post("/submit/", {"benchmark": "mmae", "model_name": "Editor",
                                            **files(bench), **data})
        assert response.status_code == 400
        assert not Submission.objects.filter(owner=author).exists()
        return response

    return post


@pytest.fixture
def post_upload_api(author):
    """`post_upload_api(**fields)`: an upload through the API with the author's token, nothing
    stored; the response."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")

    def post(**data):
        response = client.post("/api/submissions/", {"benchmark": "mmae", **data},
                               format="multipart")
        assert not Submission.objects.exists()
        return response

    return post


# --- the upload page: each message beside its field


@pytest.mark.parametrize("predictions", [
    lambda bench: SimpleUploadedFile("audio.zip", bench["zip"]),  # by its name
    lambda bench: SimpleUploadedFile("predictions.json", bench["zip"]),  # by its first bytes
    lambda bench: SimpleUploadedFile("predictions.json", tar_gz()),
], ids=["zip-by-name", "zip-by-bytes", "tar-gz-by-bytes"])
def test_an_archive_given_as_predictions_is_sent_to_the_output_audio_field(post_upload_page,
                                                                           small_bench,
                                                                           predictions):
    response = post_upload_page(small_bench, predictions=predictions(small_bench))
    form = response.context["form"]
    assert form.errors["predictions"] == [ARCHIVE_IN_PREDICTIONS]
    assert ARCHIVE_IN_PREDICTIONS == "this is an archive: choose it under Output audio"
    assert not form.non_field_errors()
    assert ARCHIVE_IN_PREDICTIONS in field_texts(response.content.decode())["id_predictions"]


def test_a_file_that_is_no_archive_given_as_audio_is_named(post_upload_page, small_bench):
    response = post_upload_page(small_bench,
                                audio=SimpleUploadedFile("outputs.wav", b"RIFF....WAVE"))
    message = ("outputs.wav is not an archive: Output audio takes a .zip or .tar.gz of the "
               "output files")
    assert response.context["form"].errors["audio"] == [message]
    assert message in field_texts(response.content.decode())["id_audio"]


def test_a_predictions_file_given_as_audio_is_sent_to_the_predictions_field(post_upload_page,
                                                                            small_bench):
    response = post_upload_page(small_bench, audio=SimpleUploadedFile("submission.jsonl",
                                                                      small_bench["jsonl"]))
    assert response.context["form"].errors["audio"] == [
        "submission.jsonl is not an archive: Output audio takes a .zip or .tar.gz of the "
        "output files (a predictions file goes under Predictions)"]


def test_a_name_over_the_limit_is_refused_saying_so_and_kept_whole(post_upload_page, small_bench):
    response = post_upload_page(small_bench, model_name=LONG_NAME)
    assert response.context["form"].errors["model_name"] == [
        "Name is 250 characters; the limit is 200"]
    html = response.content.decode()
    assert one(html, "#id_model_name").get("value") == LONG_NAME  # shown back whole, not cut
    assert "Name is 250 characters; the limit is 200" in field_texts(html)["id_model_name"]


def test_a_name_is_measured_once_normalised(post_upload_page, small_bench):
    # U+FDFA is one character that NFKC spells as 18; the board would store 18 x 12.
    response = post_upload_page(small_bench, model_name="\ufdfa" * 12)
    assert response.context["form"].errors["model_name"] == [
        "Name is 216 characters; the limit is 200"]


def test_every_text_over_its_limit_says_its_length(post_upload_page, small_bench):
    response = post_upload_page(small_bench, organisation="O" * 201, parameters="7" * 51,
                                licence="L" * 101)
    assert response.context["form"].errors == {
        "organisation": ["Organisation is 201 characters; the limit is 200"],
        "parameters": ["Parameter count is 51 characters; the limit is 50"],
        "licence": ["Licence is 101 characters; the limit is 100"]}


def test_every_problem_shows_beside_its_own_field_at_once(post_upload_page, small_bench):
    response = post_upload_page(small_bench, model_name=LONG_NAME, link="ftp:/x",
                                predictions=SimpleUploadedFile("both.zip", small_bench["zip"]),
                                audio=SimpleUploadedFile("notes.txt", b"edited by hand"))
    fields = field_texts(response.content.decode())
    assert "Name is 250 characters; the limit is 200" in fields["id_model_name"]
    assert "Enter a valid URL." in fields["id_link"]
    assert ARCHIVE_IN_PREDICTIONS in fields["id_predictions"]
    assert "notes.txt is not an archive" in fields["id_audio"]
    assert ARCHIVE_IN_PREDICTIONS not in fields["id_audio"]
    assert select(response, "#upload-errors") == []


def test_the_services_problems_with_a_file_show_beside_that_file(post_upload_page, small_bench):
    bad = SimpleUploadedFile("submission.jsonl", b'{"id": "zz", "audio_path": "a.wav"}\n')
    response = post_upload_page(small_bench, predictions=bad)
    form = response.context["form"]
    assert form.errors["predictions"] == [
        "submission.jsonl line 1: unknown id 'zz' (not in the benchmark)"]
    assert not form.non_field_errors()


def test_a_refused_name_does_not_hide_what_is_wrong_in_the_predictions(post_upload_page,
                                                                       small_bench):
    bad = SimpleUploadedFile("submission.jsonl", b'{"id": "zz", "audio_path": "a.wav"}\n')
    response = post_upload_page(small_bench, model_name=LONG_NAME, predictions=bad)
    assert response.context["form"].errors == {
        "model_name": ["Name is 250 characters; the limit is 200"],
        "predictions": ["submission.jsonl line 1: unknown id 'zz' (not in the benchmark)"]}


def test_a_name_taken_by_another_author_shows_beside_the_name(post_upload_page, small_bench,
                                                              make_submission, other_author):
    make_submission(other_author, name="Editor", public=True)
    response = post_upload_page(small_bench)
    assert response.context["form"].errors["model_name"] == [
        "the name 'Editor' is taken on this benchmark by another author's public model (names "
        "that look alike count as the same)"]


def test_the_form_tells_the_browser_what_each_field_takes(client, author, small_bench):
    assert client.login(username="author", password=CAST_PASSWORD)
    html = client.get("/submit/").content.decode()
    assert one(html, "#id_predictions").get("accept") == ".json,.jsonl"
    assert one(html, "#id_audio").get("accept") == ".zip,.tar.gz,.tgz,.gz"
    # the browser would cut a pasted name without a word
    assert "maxlength" not in html
    name = one(html, "#id_model_name")
    assert (name.get("data-max-length"), name.get("data-label")) == ("200", "Name")
    assert one(html, "form#upload-form").get("data-archive-message") == ARCHIVE_IN_PREDICTIONS
    audio = one(html, 'div.field[data-file-check="audio"]')
    assert audio.select("#id_audio") and int(audio.get("data-max-bytes")) > 0


def test_a_text_board_says_it_takes_no_archive_at_all(client, author, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark_import(kind="airbench-chat", path=write(tmp_path / "Chat_meta.json", chat_meta()),
                     audio_root=None, slug="air-bench-chat")
    assert client.login(username="author", password=CAST_PASSWORD)
    response = client.post("/submit/", {
        "benchmark": "air-bench-chat", "model_name": "Listener",
        "predictions": SimpleUploadedFile("answers.jsonl", gzip.compress(b"{}\n"))})
    assert response.status_code == 400
    (message,) = response.context["form"].errors["predictions"]
    assert message.startswith("this is an archive: air-bench-chat takes a predictions file")
    assert "Output audio" not in message


# --- the API: every problem in one answer


def test_the_api_names_every_problem_in_one_answer(post_upload_api, small_bench):
    response = post_upload_api(model_name=LONG_NAME, organisation="O" * 201, link="ftp:/x",
                               predictions=SimpleUploadedFile("predictions.json",
                                                              small_bench["zip"]),
                               audio=SimpleUploadedFile("predictions.jsonl", small_bench["jsonl"]))
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "model_name: Name is 250 characters; the limit is 200",
        "predictions: this is an archive: choose it under Output audio",
        "audio: predictions.jsonl is not an archive: Output audio takes a .zip or .tar.gz of "
        "the output files (a predictions file goes under Predictions)",
        "organisation: Organisation is 201 characters; the limit is 200",
        "link: Enter a valid URL."]}


def test_the_api_reads_the_predictions_through_even_when_a_field_is_refused(post_upload_api,
                                                                            small_bench):
    bad = SimpleUploadedFile("submission.jsonl", b'{"id": "zz", "audio_path": "a.wav"}\n')
    response = post_upload_api(model_name=LONG_NAME, link="ftp:/x",
                               **files(small_bench, predictions=bad))
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "model_name: Name is 250 characters; the limit is 200",
        "link: Enter a valid URL.",
        "predictions: submission.jsonl line 1: unknown id 'zz' (not in the benchmark)"]}


def test_the_api_says_an_option_a_board_does_not_read_beside_a_refused_field(post_upload_api,
                                                                             tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    benchmark_import(kind="airbench-chat", path=write(tmp_path / "Chat_meta.json", chat_meta()),
                     audio_root=None, slug="air-bench-chat")
    response = post_upload_api(benchmark="air-bench-chat", model_name="", align="true",
                               predictions=SimpleUploadedFile("answers.jsonl", b'{"uniq_id": 0, '
                                                  b'"response": "A"}\n'))
    assert response.status_code == 400
    assert response.json() == {"errors": ["model_name: This field may not be blank.",
                                          "align: option 'align' does not apply to "
                                          "air-bench-chat"]}


def test_the_api_refuses_an_archive_as_predictions_by_its_bytes(post_upload_api, small_bench):
    response = post_upload_api(model_name="Editor", **files(
        small_bench, predictions=SimpleUploadedFile("submission.jsonl", small_bench["zip"])))
    assert response.status_code == 400
    assert response.json() == {"errors": [f"predictions: {ARCHIVE_IN_PREDICTIONS}"]}


def test_the_api_takes_a_name_at_its_limit_whole(author, small_bench):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    response = client.post("/api/submissions/", {"benchmark": "mmae", "model_name": "N" * 200,
                                                 **files(small_bench)}, format="multipart")
    assert response.status_code == 201
    assert Submission.objects.get().model.name == "N" * 200


def test_the_service_refuses_what_the_doors_refuse(author, make_submission):
    with pytest.raises(ServiceError) as caught:
        make_submission(author, name=LONG_NAME, archive=json.dumps({"not": "zip"}).encode())
    assert caught.value.message_dict == {
        "model_name": ["Name is 250 characters; the limit is 200"],
        "audio": ["audio.zip is not an archive: Output audio takes a .zip or .tar.gz of the "
                  "output files"]}
