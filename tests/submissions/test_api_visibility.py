"""PATCH /api/submissions/<id>/: the author's public/private switch and representative choice."""

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken
from audit.models import AuditEvent
from submissions.models import Submission


def api_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def test_the_author_makes_a_submission_public(score_with_files, author):
    submission = score_with_files(public=False)
    response = api_for(author).patch(f"/api/submissions/{submission.pk}/", {"public": True},
                                     format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["public"], body["representative"], body["hidden"], body["flag"]) == (
        True, False, False, None)
    assert Submission.objects.get(pk=submission.pk).public
    assert AuditEvent.objects.get().after == {"public": True}


def test_the_author_chooses_the_representative(score_with_files, author):
    first, second = score_with_files(), score_with_files()
    client = api_for(author)
    assert client.patch(f"/api/submissions/{first.pk}/", {"representative": True},
                        format="json").json()["representative"] is True
    client.patch(f"/api/submissions/{second.pk}/", {"representative": True}, format="json")
    assert list(Submission.objects.filter(representative=True)) == [second]


def test_asking_for_what_is_already_so_changes_nothing(score_with_files, author):
    submission = score_with_files()
    response = api_for(author).patch(f"/api/submissions/{submission.pk}/", {"public": True},
                                      format="json")
    assert response.status_code == 200 and response.json()["public"] is True
    assert not AuditEvent.objects.exists()


def test_both_changes_happen_or_neither(score_with_files, author):
    submission = score_with_files()
    response = api_for(author).patch(f"/api/submissions/{submission.pk}/",
                                     {"public": False, "representative": True}, format="json")
    assert response.status_code == 400
    assert response.json() == {"errors": [
        f"submission {submission.pk} cannot represent Model A on the board: it is private"]}
    assert Submission.objects.filter(pk=submission.pk, public=True,
                                     representative=False).exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(("body", "error"), [
    ({}, "give public, representative or both"),
    ({"public": "perhaps"}, "public: Must be a valid boolean."),
])
def test_bad_input_is_a_400_naming_the_problem(score_with_files, author, body, error):
    submission = score_with_files(public=False)
    response = api_for(author).patch(f"/api/submissions/{submission.pk}/", body,
                                     format="json")
    assert response.status_code == 400
    assert response.json() == {"errors": [error]}
    assert not Submission.objects.get(pk=submission.pk).public


@pytest.mark.parametrize(("who", "code"), [(None, 404), ("other_author", 404), ("staff", 403)])
def test_only_the_author_may_patch(score_with_files, request, who, code):
    submission = score_with_files(public=False)
    user = request.getfixturevalue(who) if who else None
    response = api_for(user).patch(f"/api/submissions/{submission.pk}/", {"public": True},
                                   format="json")
    assert response.status_code == code
    assert not Submission.objects.get(pk=submission.pk).public
    assert not AuditEvent.objects.exists()


def test_an_unknown_submission_is_a_404(author, db):
    response = api_for(author).patch("/api/submissions/4242/", {"public": True},
                                     format="json")
    assert response.status_code == 404


def test_the_schema_documents_the_patch(client, db):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/submissions/{id}/"]["patch"]
    assert operation["operationId"] == "submissions_update"
    body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][body.rsplit("/", 1)[1]]["properties"]
    assert set(fields) == {"public", "representative"}
