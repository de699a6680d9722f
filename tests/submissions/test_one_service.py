"""Each operation has one service that the page, the API and the command call alike: the
same change through each door, and the same refusal, worded the same, through each."""

from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from audit.models import AuditEvent
from scoring.models import ScoringRun
from submissions import moderation, rescoring, services
from submissions.models import Submission
from tests.submissions.test_api import payload

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def spy():
    """Counts the calls of a module-level function while it keeps working."""
    def make(module, name):
        patcher = mock.patch.object(module, name, wraps=getattr(module, name))
        spies.append(patcher)
        return patcher.start()
    spies = []
    yield make
    for patcher in spies:
        patcher.stop()


# --- rescore --------------------------------------------------------------------------------


def rescore_through(door, submission, staff, client, **extra):
    if door == "page":
        client.force_login(staff)
        return client.post("/staff/rescore/", {
            "benchmark": "mmae", "config": submission.benchmark.judge_config_id,
            "scope": "one", "submission": submission.pk, "reason": "judge fix",
            "action": "rescore", "expected": 1, "confirm": "mmae", **extra})
    if door == "api":
        return api(staff).post(f"/api/submissions/{submission.pk}/rescore/",
                               {"reason": "judge fix", **extra}, format="json")
    call_command("rescore", "--benchmark", "mmae", "--submission", str(submission.pk),
                 "--reason", "judge fix", "--actor", "staff", "--yes")
    return None


@pytest.mark.parametrize("door", ["page", "api", "command"])
def test_a_rescore_goes_through_the_one_service_from_each_door(score_with_files, staff, client, spy,
                                                               door):
    submission = score_with_files()
    service = spy(rescoring, "submissions_rescore")
    rescore_through(door, submission, staff, client)
    assert service.call_count == 1
    run = ScoringRun.objects.get(purpose="rescore")
    assert run.submissions.get() == submission
    event = AuditEvent.objects.get()
    assert (event.action, event.reason, event.actor) == ("rescore", "judge fix", staff)


@pytest.mark.parametrize("door", ["page", "api", "command"])
def test_a_submission_that_cannot_be_rescored_is_refused_alike_by_each_door(
        score_with_files, staff, client, door):
    submission = score_with_files(status="scoring")
    why = (f"submission {submission.pk} is not finished or failed, or has a run in "
           "progress: nothing to rescore")
    if door == "command":
        with pytest.raises(CommandError, match=why):
            rescore_through(door, submission, staff, client)
    else:
        response = rescore_through(door, submission, staff, client)
        if door == "api":
            assert response.status_code == 409 and response.json() == {"errors": [why]}
        else:
            assert response.status_code == 400
            assert why in response.content.decode()
    assert not ScoringRun.objects.filter(purpose="rescore").exists()
    assert not AuditEvent.objects.exists()


# --- the author's choices -------------------------------------------------------------------


def choose_through(door, submission, author, client, *, representative):
    if door == "page":
        client.force_login(author)
        response = client.post(f"/submissions/{submission.pk}/representative/",
                               {"chosen": "true" if representative else "false"},
                               follow=True)
        return response.status_code, response.content.decode()
    response = api(author).patch(f"/api/submissions/{submission.pk}/",
                                 {"representative": representative}, format="json")
    return response.status_code, response.content.decode()


@pytest.mark.parametrize("door", ["page", "api"])
def test_the_authors_choice_goes_through_the_one_service(score_with_files, author, client, spy,
                                                         door):
    submission = score_with_files()
    service = spy(moderation, "submission_author_choices")
    code, _ = choose_through(door, submission, author, client, representative=True)
    assert code == 200 and service.call_count == 1
    assert Submission.objects.get(pk=submission.pk).representative
    assert AuditEvent.objects.get().after == {"representative": submission.pk}


@pytest.mark.parametrize(("door", "code"), [("page", 200), ("api", 400)])
def test_a_refused_choice_says_the_same_through_each_door(score_with_files, author, client, door,
                                                          code):
    submission = score_with_files(public=False)
    status, body = choose_through(door, submission, author, client, representative=True)
    assert status == code
    assert (f"submission {submission.pk} cannot represent Model A on the board: it is "
            "private") in body
    assert not Submission.objects.filter(representative=True).exists()
    assert not AuditEvent.objects.exists()


# --- cancelling -----------------------------------------------------------------------------


@pytest.mark.parametrize("door", ["page", "api"])
def test_cancelling_a_finished_submission_is_refused_alike(score_with_files, author, client, door):
    submission = score_with_files()
    why = f"submission {submission.pk} is finished; only a queued or scoring one can be " \
          "cancelled"
    if door == "page":
        client.force_login(author)
        body = client.post(f"/submissions/{submission.pk}/cancel/", follow=True) \
            .content.decode()
        assert why in body
    else:
        response = api(author).post(f"/api/submissions/{submission.pk}/cancel/")
        assert response.status_code == 409 and response.json() == {"errors": [why]}
    assert ScoringRun.objects.get().status == "finished"


@pytest.mark.parametrize("door", ["page", "api"])
def test_cancelling_goes_through_the_one_service(score_with_files, author, client, door):
    submission = score_with_files(status="queued")
    if door == "page":
        client.force_login(author)
        client.post(f"/submissions/{submission.pk}/cancel/")
    else:
        assert api(author).post(f"/api/submissions/{submission.pk}/cancel/").status_code == 200
    assert ScoringRun.objects.get().status == "cancelled"


# --- moderation -----------------------------------------------------------------------------


def moderate_through(door, action, submission, staff, client, reason="spam"):
    """hide or delete through the page, the API or the command."""
    if door == "page":
        client.force_login(staff)
        data = {"hidden": "true", "reason": reason, "confirm": str(submission.pk)}
        response = client.post(f"/staff/submissions/{submission.pk}/{action}/", data)
        return response.status_code, response.content.decode()
    if door == "api":
        response = api(staff).post(f"/api/submissions/{submission.pk}/{action}/",
                                   {"reason": reason}, format="json")
        return response.status_code, response.content.decode()
    try:
        call_command("moderate", str(submission.pk), f"--{action}", "--reason", reason,
                     "--actor", "staff", "--yes")
    except CommandError as exc:
        return "refused", str(exc)
    return "done", ""


@pytest.mark.parametrize("door", ["page", "api", "command"])
@pytest.mark.parametrize("action", ["hide", "delete"])
def test_moderation_goes_through_the_one_service_from_each_door(score_with_files, staff, client,
                                                                spy, door, action):
    submission = score_with_files()
    service = spy(moderation, f"submission_{action}")
    code, _ = moderate_through(door, action, submission, staff, client)
    assert code in (200, 302, "done") and service.call_count == 1
    event = AuditEvent.objects.get()
    assert (event.action, event.reason, event.actor) == (
        {"hide": "hide", "delete": "deletion"}[action], "spam", staff)
    if action == "hide":
        assert Submission.objects.get(pk=submission.pk).hidden
    else:
        assert not Submission.objects.filter(pk=submission.pk).exists()


@pytest.mark.parametrize(("door", "code"), [("page", 400), ("api", 400),
                                            ("command", "refused")])
def test_hiding_twice_is_refused_alike_by_each_door(score_with_files, staff, client, door, code):
    submission = score_with_files()
    moderation.submission_hide(actor=staff, submission=submission, reason="spam")
    status, body = moderate_through(door, "hide", submission, staff, client)
    assert status == code and f"submission {submission.pk} is already hidden" in body
    assert AuditEvent.objects.count() == 1


@pytest.mark.parametrize(("door", "code"), [("api", 403), ("command", "refused")])
def test_only_staff_moderate_through_the_api_and_the_command(score_with_files, author, client, door,
                                                             code):
    submission = score_with_files()
    if door == "api":
        status = api(author).post(f"/api/submissions/{submission.pk}/hide/",
                                  {"reason": "x"}, format="json").status_code
    else:
        with pytest.raises(CommandError, match="no staff user 'author'"):
            call_command("moderate", str(submission.pk), "--hide", "--reason", "x",
                         "--actor", "author")
        status = "refused"
    assert status == code
    assert not Submission.objects.get(pk=submission.pk).hidden
    assert not AuditEvent.objects.exists()


def quota_through(door, staff, client, **limits):
    if door == "page":
        client.force_login(staff)
        data = {"username": "author", "reason": "a lab", **{k: v for k, v in limits.items()
                                                             if v is not None}}
        response = client.post("/staff/quotas/", data)
        return response.status_code, response.content.decode()
    if door == "api":
        response = api(staff).post("/api/quotas/", {"username": "author", "reason": "a lab",
                                                    **limits}, format="json")
        return response.status_code, response.content.decode()
    args = [f"--{k.replace('_', '-')}={v}" for k, v in limits.items() if v is not None]
    try:
        call_command("quota", "author", *args, "--reason", "a lab", "--actor", "staff")
    except CommandError as exc:
        return "refused", str(exc)
    return "done", ""


@pytest.mark.parametrize("door", ["page", "api", "command"])
def test_a_quota_goes_through_the_one_service_from_each_door(author, staff, client, spy,
                                                             door):
    service = spy(moderation, "quota_override")
    quota_through(door, staff, client, per_day=7, in_flight=None)
    assert service.call_count == 1
    assert (author.quota_override.per_day, author.quota_override.in_flight) == (7, None)
    assert AuditEvent.objects.get().after["per_day"] == 7


@pytest.mark.parametrize(("door", "code"), [("page", 400), ("api", 400),
                                            ("command", "refused")])
def test_removing_no_override_is_refused_alike_by_each_door(author, staff, client, door,
                                                           code):
    status, body = quota_through(door, staff, client, per_day=None, in_flight=None)
    assert status == code and "author has no quota override to remove" in body
    assert not AuditEvent.objects.exists()


# --- submitting (manage.py submit posts to the API: tests/submissions/test_submit_command.py)


@pytest.mark.parametrize(("door", "code"), [("page", 429), ("api", 429)])
def test_an_upload_over_quota_is_refused_alike_by_the_page_and_the_api(
        small_bench, author, client, settings, spy, door, code):
    settings.SUBMISSIONS_PER_DAY = 0
    service = spy(services, "_quota_refused")
    if door == "page":
        client.force_login(author)
        response = client.post("/submit/", payload(small_bench))
    else:
        response = api(author).post("/api/submissions/", payload(small_bench),
                                    format="multipart")
    assert response.status_code == code and service.call_count == 1
    assert "daily quota reached: 0 submissions in 24 hours" in response.content.decode()
    assert not Submission.objects.exists()


@pytest.mark.parametrize(("door", "code"), [("page", 400), ("api", 400),
                                            ("command", "refused")])
@pytest.mark.parametrize("field", ["per_day", "in_flight"])
def test_a_quota_past_the_column_s_range_is_refused_naming_the_field(author, staff, client,
                                                                     door, code, field):
    status, body = quota_through(door, staff, client, **{"per_day": None, "in_flight": None,
                                                         field: 2**31})
    assert status == code
    assert field in body and "2147483647" in body
    assert not AuditEvent.objects.exists()
