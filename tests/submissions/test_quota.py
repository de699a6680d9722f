"""The quota an author sees above the upload form is the one the service enforces: what is
used and left, and when the next upload is possible; a spent quota disables the form."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from config.errors import ServiceError
from submissions.models import QuotaOverride, Submission
from submissions.quota import quota_left
from tests.conftest import CAST_PASSWORD
from tests.html import assert_in_html, one, select, texts


@pytest.fixture
def uploads(author, make_submission):
    """The author's uploads made `hours` ago each (at a quarter past a second)."""
    def make(*hours, status=None):
        now = timezone.now().replace(microsecond=250_000)
        made = []
        for age in hours:
            submission = make_submission(author)
            when = now - timedelta(hours=age)
            Submission.objects.filter(pk=submission.pk).update(
                created_at=when, **({"status": status} if status else {}))
            made.append(when)
        return made
    return make


@pytest.fixture
def upload_page(client, author):
    assert client.login(username="author", password=CAST_PASSWORD)
    return lambda: client.get("/submit/").content.decode()


def test_the_next_upload_is_possible_once_the_oldest_in_the_window_is_a_day_old(
        author, uploads, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 2, 10
    oldest, _ = uploads(5, 1)
    again = oldest + timedelta(days=1, microseconds=750_000)  # the next whole second
    left = quota_left(author)
    assert (left["used"], left["today"], left["next_at"]) == (2, 0, again)
    assert quota_left(author, now=again - timedelta(seconds=1))["today"] == 0
    assert quota_left(author, now=again)["today"] == 1  # the enforcement lets it through then


def test_a_lowered_limit_waits_for_enough_of_the_oldest(author, uploads, settings):
    settings.SUBMISSIONS_IN_FLIGHT = 10
    _, second, _ = uploads(20, 10, 2)
    QuotaOverride.objects.create(user=author, per_day=2, set_by=author, reason="lowered")
    # Three in the window, two allowed: the two oldest must age out before one more.
    assert quota_left(author)["next_at"] == second + timedelta(days=1, microseconds=750_000)


def test_rejected_uploads_and_a_limit_of_zero_give_no_time(author, uploads, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    uploads(3, status=Submission.Status.REJECTED)
    assert quota_left(author)["used"] == 0 and quota_left(author)["next_at"] is None
    settings.SUBMISSIONS_PER_DAY = 0
    assert quota_left(author)["today"] == 0 and quota_left(author)["next_at"] is None


def test_the_page_shows_the_time_the_service_refuses_until(author, uploads, upload_page,
                                                           make_submission, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 1, 10
    uploads(3)  # one upload, three hours ago
    with pytest.raises(ServiceError) as refused:
        make_submission(author)
    html = upload_page()
    quota = one(html, "#quota")
    assert quota.text.startswith("Quota: 1 of 1 uploads used in the last 24 hours (0 left)")
    assert texts(quota, "strong") == ["1 of 1", "0"]
    assert_in_html(f'<p class="notice error" id="quota-spent">No upload is possible now: '
                   f'{escape(refused.value.problems[0])}.</p>', html)
    assert "the next upload is possible at " in refused.value.problems[0]


def test_a_spent_quota_disables_the_form(uploads, upload_page, settings):
    settings.SUBMISSIONS_PER_DAY = 1
    uploads(1)
    html = upload_page()
    assert len(select(html, "fieldset[disabled]")) == len(select(html, "fieldset")) == 2
    assert_in_html('<button type="submit" class="primary" disabled>Upload</button>', html)


def test_uploads_being_scored_say_when_one_more_is_possible(uploads, upload_page, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 5, 1
    uploads(1)  # uploaded, not yet validated: in flight
    html = upload_page()
    assert "; 1 of 1 being scored at once." in one(html, "#quota").text
    assert one(html, "#quota-spent").text == "No upload is possible now: 1 submission(s) are " \
        "still being scored; wait for one to finish."
    assert len(select(html, "fieldset[disabled]")) == len(select(html, "fieldset")) == 2


def test_an_open_quota_leaves_the_form_enabled(uploads, upload_page, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 3, 3
    uploads(2, 1)
    html = upload_page()
    quota = one(html, "#quota")
    assert quota.text.startswith("Quota: 2 of 3 uploads used in the last 24 hours")
    assert texts(quota, "strong")[0] == "2 of 3"
    assert select(html, "#quota-spent") == [] and "disabled" not in html


def test_a_refusal_says_when_to_try_again(author, uploads, make_submission, settings,
                                          small_bench):
    """The API's 429 carries Retry-After: the seconds until the daily quota lets one more
    through, or a minute while the uploads in flight are full."""
    from rest_framework.test import APIClient

    from accounts.models import ApiToken
    from submissions.quota import IN_FLIGHT_RETRY_SECONDS
    from tests.submissions.conftest import upload_files

    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 1, 10
    (made,) = uploads(3)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")

    def post():
        predictions, archive = upload_files(small_bench)
        return client.post("/api/submissions/", {"benchmark": "mmae", "model_name": "Model A",
                                                 "predictions": predictions, "audio": archive},
                           format="multipart")

    response = post()
    assert response.status_code == 429
    wait = (made + timedelta(days=1) - timezone.now()).total_seconds()
    assert abs(int(response["Retry-After"]) - wait) <= 2
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 10, 1  # one in flight
    response = post()
    assert response.status_code == 429
    assert response["Retry-After"] == str(IN_FLIGHT_RETRY_SECONDS)
