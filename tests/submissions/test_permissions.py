"""A private submission: its author and staff see it; everyone else gets 404 everywhere."""

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken
from scoring.models import ScoringRun
from submissions.services import submission_validate
from tests.conftest import CAST_PASSWORD

PAGES = [
    ("get", "/submissions/{id}/"),
    ("get", "/submissions/{id}/progress/"),
    ("get", "/submissions/{id}/files/results.jsonl"),
    ("get", "/submissions/{id}/files/taxonomy.json"),
    ("post", "/submissions/{id}/cancel/"),
]
API = [
    "/api/submissions/{id}/",
    "/api/submissions/{id}/files/results.jsonl",
    "/api/submissions/{id}/files/per_sample.json",
    "/api/submissions/{id}/files/taxonomy.json",
]


@pytest.fixture
def private(author, make_submission):
    submission = make_submission(author, public=False)
    submission_validate(submission.id)
    ScoringRun.objects.update(status=ScoringRun.Status.FINISHED)
    submission.refresh_from_db()
    return submission


def browser(client, user):
    if user is not None:
        assert client.login(username=user.username, password=CAST_PASSWORD)
    return client


def api_client(user):
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


@pytest.mark.parametrize("method, path", PAGES)
@pytest.mark.parametrize("who", ["other_author", "anonymous"])
def test_pages_and_downloads_are_404_for_anyone_else(request, client, private, method, path,
                                                      who):
    user = None if who == "anonymous" else request.getfixturevalue(who)
    response = getattr(browser(client, user), method)(path.format(id=private.id))
    assert response.status_code == 404


@pytest.mark.parametrize("path", API)
@pytest.mark.parametrize("who", ["other_author", "anonymous"])
def test_api_calls_and_downloads_are_404_for_anyone_else(request, private, path, who):
    user = None if who == "anonymous" else request.getfixturevalue(who)
    response = api_client(user).get(path.format(id=private.id))
    assert response.status_code == 404


def test_the_list_api_shows_only_the_callers_submissions(private, other_author, author):
    assert api_client(other_author).get("/api/submissions/").json() == []
    assert [s["id"] for s in api_client(author).get("/api/submissions/").json()] == [private.id]


def test_the_list_page_shows_only_the_callers_submissions(client, private, other_author):
    response = browser(client, other_author).get("/submissions/")
    assert response.status_code == 200
    assert f"/submissions/{private.id}/" not in response.content.decode()


@pytest.mark.parametrize("who", ["author", "staff"])
def test_the_author_and_staff_see_it(request, client, private, who):
    user = request.getfixturevalue(who)
    assert browser(client, user).get(f"/submissions/{private.id}/").status_code == 200
    assert api_client(user).get(f"/api/submissions/{private.id}/").status_code == 200
    download = api_client(user).get(f"/api/submissions/{private.id}/files/taxonomy.json")
    assert download.status_code == 200
    assert download["Content-Disposition"] == \
        f'attachment; filename="{private.id}-taxonomy.json"'


def test_another_user_cannot_cancel_it(client, private, other_author):
    browser(client, other_author).post(f"/submissions/{private.id}/cancel/")
    private.current_run.refresh_from_db()
    assert private.current_run.status == "finished"


def test_an_unknown_file_name_is_404_even_for_the_author(private, author):
    response = api_client(author).get(f"/api/submissions/{private.id}/files/secrets.txt")
    assert response.status_code == 404
