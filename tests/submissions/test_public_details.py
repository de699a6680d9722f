"""A public, published submission's results files (results.jsonl, per_sample.json,
taxonomy.json) are anyone's to download, from its page and the API; its author's other runs,
a hidden submission's files and a private one's stay theirs and staff's (404 to anyone else)."""

import json

import pytest
from rest_framework.test import APIClient

from submissions.models import Submission
from tests.conftest import CAST_PASSWORD
from tests.factories import seeded_board
from tests.html import parse

FILES = ("results.jsonl", "per_sample.json", "taxonomy.json")


@pytest.fixture
def published(db, tmp_path):
    """A public submission with a finished run's per-item results (seed_board's)."""
    seeded_board(tmp_path / "b", items=4, submissions=1, seed=3)
    return Submission.objects.select_related("owner").get()


def body(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("who", ["anonymous", "other_author"])
def test_anyone_downloads_a_published_submissions_details(request, client, published, name,
                                                          who):
    api = APIClient()
    if who != "anonymous":
        user = request.getfixturevalue(who)
        api.force_authenticate(user)
        assert client.login(username=user.username, password=CAST_PASSWORD)
    for response in (api.get(f"/api/submissions/{published.id}/files/{name}"),
                     client.get(f"/submissions/{published.id}/files/{name}")):
        assert response.status_code == 200
        assert response["Content-Disposition"] == \
            f'attachment; filename="{published.id}-{name}"'
        text = body(response).decode()
        if name.endswith(".json"):
            json.loads(text)
        else:
            assert all(json.loads(line) for line in text.splitlines())


def test_the_submission_page_links_its_details_for_everyone(client, published):
    page = parse(client.get(f"/s/{published.id}/"))
    for name in FILES:
        assert page.select(f'a[href="/submissions/{published.id}/files/{name}"]')


def test_its_runs_by_id_stay_its_authors_and_staffs(published, staff):
    """Anyone else gets the current run's files only: `?run=` names the author's runs."""
    url = f"/api/submissions/{published.id}/files/taxonomy.json?run={published.current_run_id}"
    assert APIClient().get(url).status_code == 404
    for user in (published.owner, staff):
        api = APIClient()
        api.force_authenticate(user)
        assert api.get(url).status_code == 200


@pytest.mark.parametrize("change", [{"public": False}, {"hidden": True}])
def test_a_private_or_hidden_submissions_details_are_404_to_anyone_else(
        client, published, other_author, change):
    Submission.objects.filter(pk=published.pk).update(**change)
    url = f"/api/submissions/{published.id}/files/per_sample.json"
    assert APIClient().get(url).status_code == 404
    api = APIClient()
    api.force_authenticate(other_author)
    assert api.get(url).status_code == 404
    assert client.get(f"/submissions/{published.id}/files/per_sample.json").status_code == 404
    api.force_authenticate(published.owner)
    assert api.get(url).status_code == 200
