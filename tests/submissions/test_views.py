import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission
from submissions.services import submission_validate
from tests.conftest import CAST_PASSWORD, _use_broker, free_ports
from tests.html import one, select, texts


@pytest.fixture
def logged_in(client, author):
    assert client.login(username="author", password=CAST_PASSWORD)
    return client


def form(bench, **overrides):
    data = {"benchmark": "mmae", "model_name": "Editor", "public": "on",
            "predictions": SimpleUploadedFile("submission.jsonl", bench["jsonl"]),
            "audio": SimpleUploadedFile("audio.zip", bench["zip"])}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_the_upload_page_needs_a_login(client, small_bench):
    response = client.get("/submit/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_upload_page_shows_the_quota_and_benchmarks(logged_in, small_bench, settings):
    settings.SUBMISSIONS_PER_DAY = 3
    html = logged_in.get("/submit/").content.decode()
    quota = one(html, "#quota")
    assert quota.text.startswith("Quota: 0 of 3 uploads used in the last 24 hours (3 left)")
    assert texts(quota, "strong") == ["0 of 3", "3"]
    mmae = one(html, "#id_benchmark option[value=mmae]")
    assert (mmae.get("data-files"), mmae.get("data-options")) == ("1", "")


def test_an_upload_redirects_to_its_status_page(logged_in, small_bench):
    response = logged_in.post("/submit/", form(small_bench))
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{submission.id}/"
    assert submission.public is True
    page = logged_in.get(response["Location"]).content.decode()
    assert one(page, "#state").text == "uploaded"
    assert select(page, f'[hx-get="/submissions/{submission.id}/progress/"]')


@pytest.mark.parametrize("overrides, message", [
    ({"predictions": None, "audio": None},
     "Upload a predictions file and an archive of the edited audio, or one archive holding "
     "both."),
    ({"model_name": ""}, "This field is required."),
    ({"benchmark": "nope"}, "Select a valid choice. nope is not one of the available choices."),
    ({"link": "ftp:/x"}, "Enter a valid URL."),
    ({"predictions": SimpleUploadedFile("submission.jsonl", b'{"id": "zz", "audio_path": '
                                        b'"a.wav"}\n')},
     "submission.jsonl line 1: unknown id &#x27;zz&#x27; (not in the benchmark)"),
    ({"predictions": SimpleUploadedFile("predictions.json", b"[" * 100_000 + b"]" * 100_000)},
     "predictions.json: invalid JSON at line 1, column 65: nested too deeply (more than 64 "
     "levels)"),
])
def test_bad_input_shows_the_problem_and_stores_nothing(logged_in, small_bench, overrides,
                                                        message):
    response = logged_in.post("/submit/", form(small_bench, **overrides))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Submission.objects.count() == 0


def test_the_quota_shows_on_the_form(logged_in, small_bench, settings):
    settings.SUBMISSIONS_PER_DAY = 0
    response = logged_in.post("/submit/", form(small_bench))
    assert response.status_code == 429  # over a limit of the caller's, as the API says
    assert "Retry-After" not in response  # a limit of 0 never lets one through
    assert "daily quota reached" in response.content.decode()


def test_a_rejected_submission_shows_its_report_and_stops_polling(logged_in, small_bench,
                                                                  author, make_submission):
    submission = make_submission(author, archive=b"PK\x03\x04 but not an archive")
    submission_validate(submission.id)
    page = logged_in.get(f"/submissions/{submission.id}/progress/").content.decode()
    assert one(page, "#state").text == "rejected"
    assert "audio.zip: not a .zip or .tar.gz archive" in page
    assert "hx-get" not in page


def test_a_rejected_submission_says_its_missing_samples_would_score_0(logged_in, small_bench,
                                                                     author, make_submission):
    """Nothing of a rejected upload is scored: its missing samples would score 0, not do."""
    first, *_, last = [s["id"] for s in small_bench["samples"]]
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(small_bench["zip"])) as whole, \
            zipfile.ZipFile(buffer, "w") as archive:
        for name in whole.namelist():
            if name.endswith(f"/{first}.wav"):
                archive.writestr(name, b"RIFF but no audio")
            elif not name.endswith(f"/{last}.wav"):
                archive.writestr(name, whole.read(name))
    submission = make_submission(author, archive=buffer.getvalue())
    submission_validate(submission.id)
    page = logged_in.get(f"/submissions/{submission.id}/progress/").content.decode()
    assert one(page, "#state").text == "rejected"
    assert one(page, "details summary").text == \
        "1 sample without a usable output (it would score 0)"
    assert "score 0" not in page.replace("(it would score 0)", "")


def test_a_queued_submission_shows_its_progress(logged_in, small_bench, author,
                                                make_submission):
    submission = make_submission(author)
    submission_validate(submission.id)
    page = logged_in.get(f"/submissions/{submission.id}/").content.decode()
    assert one(page, "#state").text == "queued"
    assert "Position in the queue: 1" in page
    assert "0 of " in page and "judge queries" in page


def test_the_list_shows_the_authors_submissions(logged_in, author, make_submission):
    submission = make_submission(author, name="Listed Model")
    html = logged_in.get("/submissions/").content.decode()
    (row,) = [row for row in select(html, "table.submissions tbody tr")
              if row.select(f'a[href="/submissions/{submission.id}/"]')]
    assert row.one("td.model").text == "Listed Model"


# Redis down: the cache reads as empty, and the broker that would queue the validation is
# unreachable, so the upload is refused before anything is stored.

@pytest.fixture
def redis_down(settings):
    dead = f"redis://127.0.0.1:{free_ports(1)[0]}/0"
    settings.CACHES = {**settings.CACHES, "default": {
        "BACKEND": "config.cache.FailSoftRedisCache", "LOCATION": dead}}
    _use_broker(dead)
    yield
    _use_broker("memory://")


def test_an_upload_while_redis_is_down_answers_503_and_stores_nothing(logged_in, small_bench,
                                                                      redis_down, settings):
    settings.THROTTLE_UPLOAD = "1/h"
    folder = settings.MEDIA_ROOT / "submissions"
    for _ in range(2):  # the upload limit's counter is unreadable too: it lets both through
        response = logged_in.post("/submit/", form(small_bench))
        assert response.status_code == 503
        assert response["Retry-After"] == "60"
        assert "uploads are paused: the queue that validates and scores them cannot be " \
            "reached. Nothing was stored" in response.content.decode()
    assert Submission.objects.count() == 0
    assert not folder.exists() or not any(folder.iterdir())
    assert logged_in.get("/submit/").status_code == 200
