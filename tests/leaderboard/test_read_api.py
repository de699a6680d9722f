import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken


def as_user(user):
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def test_benchmarks_lists_the_newest_version_of_each(board, client):
    body = client.get("/api/benchmarks/").json()
    assert [(b["slug"], b["version"], b["samples"], b["criteria"]) for b in body] == [
        ("mmae", 1, 4, 30)]
    assert body[0]["board"] == "http://testserver/api/leaderboards/mmae/"


def test_a_models_public_submissions_with_their_figures(board, client):
    benchmark, score_by_slices = board
    public = score_by_slices("Editor", (50.0, 60.0, 10.0),
                             intervals={("overall", ""): {"EMR": (5.0, 15.0)}})
    score_by_slices("Editor", (99.0, 99.0, 99.0), public=False)
    body = client.get(f"/api/models/{public.model_id}/").json()
    assert body["name"] == "Editor" and body["organisation"] == "Lab"
    assert [(s["id"], s["IFR"], s["EMR"], s["EMR_lo"], s["EMR_hi"], s["public"])
            for s in body["submissions"]] == [(public.id, 50.0, 10.0, 5.0, 15.0, True)]


def test_a_model_with_only_private_submissions_is_404_for_others(board, author, other_author):
    benchmark, score_by_slices = board
    private = score_by_slices("Secret", (50.0, 50.0, 5.0), public=False)
    path = f"/api/models/{private.model_id}/"
    assert as_user(None).get(path).status_code == 404
    assert as_user(other_author).get(path).status_code == 404
    mine = as_user(author).get(path).json()
    assert [s["public"] for s in mine["submissions"]] == [False]


def test_a_public_submissions_slices_are_open_to_all(board, client):
    benchmark, score_by_slices = board
    submission = score_by_slices("Editor", (50.0, 60.0, 10.0),
                                 slices={("modality", "sound"): (40.0, 70.0, 5.0)})
    body = client.get(f"/api/submissions/{submission.id}/slices/").json()
    assert body["model"] == "Editor" and body["benchmark"] == "mmae"
    assert [(s["dimension"], s["bucket"], s["IFR"], s["CR"], s["EMR"], s["n"])
            for s in body["slices"]] == [("overall", None, 50.0, 60.0, 10.0, 4),
                                         ("modality", "sound", 40.0, 70.0, 5.0, 4)]


@pytest.mark.parametrize("who", [None, "other_author"])
def test_a_private_submissions_slices_are_404_for_others(request, board, who):
    benchmark, score_by_slices = board
    submission = score_by_slices("Secret", (50.0, 50.0, 5.0), public=False)
    user = request.getfixturevalue(who) if who else None
    assert as_user(user).get(f"/api/submissions/{submission.id}/slices/").status_code == 404


def test_an_unfinished_submission_has_no_slices(board, author):
    benchmark, score_by_slices = board
    submission = score_by_slices("Busy", (50.0, 50.0, 5.0), status="scoring")
    response = as_user(author).get(f"/api/submissions/{submission.id}/slices/")
    assert response.status_code == 404
    assert response.json() == {"errors": [
        f"submission {submission.id} has no finished scoring yet"]}


def test_an_unknown_benchmark_answers_404_naming_it_whatever_the_format(client, db):
    response = client.get("/api/leaderboards/nope/")
    assert response.status_code == 404
    assert response.json() == {"errors": ["no benchmark 'nope'"]}
    # Asked for as CSV, the error is still JSON: a browser shows it rather than saving it.
    response = client.get("/api/leaderboards/nope/?format=csv")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"errors": ["no benchmark 'nope'"]}
