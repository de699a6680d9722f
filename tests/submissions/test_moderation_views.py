"""The staff moderation pages and actions, and the author's visibility and representative
buttons: staff only (404 for anyone else), POST with a reason, audited, bad input refused."""

import pytest

from audit.models import AuditEvent
from submissions.models import QuotaOverride, Submission
from tests.html import one, texts

STAFF_PAGES = ["/staff/submissions/", "/staff/submissions/{pk}/", "/staff/quotas/",
               "/staff/audit/"]
STAFF_ACTIONS = {
    "/staff/submissions/{pk}/hide/": {"hidden": "true", "reason": "spam"},
    "/staff/submissions/{pk}/flag/": {"flagged": "true", "reason": "copied outputs"},
    "/staff/submissions/{pk}/delete/": {"reason": "spam", "confirm": "{pk}"},
    "/staff/quotas/": {"username": "author", "per_day": "90", "reason": "lab"},
}


def unchanged(submission) -> bool:
    return (Submission.objects.filter(pk=submission.pk, hidden=False, flag_reason="").exists()
            and not AuditEvent.objects.exists() and not QuotaOverride.objects.exists())


@pytest.mark.parametrize("who", ["anonymous", "author", "other_author"])
@pytest.mark.parametrize("url", STAFF_PAGES + list(STAFF_ACTIONS))
def test_everyone_but_staff_gets_404_on_every_staff_page(client, score_with_files, request, who,
                                                         url):
    submission = score_with_files()
    if who != "anonymous":
        client.force_login(request.getfixturevalue(who))
    assert client.get(url.format(pk=submission.pk)).status_code == 404
    data = {k: v.format(pk=submission.pk) for k, v in STAFF_ACTIONS.get(url, {
        "reason": "x"}).items()}
    assert client.post(url.format(pk=submission.pk), data).status_code == 404
    assert unchanged(submission)


@pytest.mark.parametrize("url", STAFF_PAGES)
def test_staff_see_every_staff_page(client, score_with_files, staff, url):
    submission = score_with_files()
    client.force_login(staff)
    response = client.get(url.format(pk=submission.pk))
    assert response.status_code == 200
    assert b"Audit log" in response.content  # the staff pages' tabs


@pytest.mark.parametrize("url", [u for u in STAFF_ACTIONS if u != "/staff/quotas/"])
def test_an_action_is_post_only(client, score_with_files, staff, url):
    submission = score_with_files()
    client.force_login(staff)
    assert client.get(url.format(pk=submission.pk)).status_code == 405


def test_the_moderation_list_filters_flagged_and_hidden(client, score_with_files, staff):
    score_with_files("Plain Model")
    flagged, hidden = score_with_files("Flagged Model"), score_with_files("Hidden Model")
    Submission.objects.filter(pk=flagged.pk).update(flag_reason="copied")
    Submission.objects.filter(pk=hidden.pk).update(hidden=True)
    client.force_login(staff)
    every = client.get("/staff/submissions/").content.decode()
    assert all(name in every for name in ("Plain Model", "Flagged Model", "Hidden Model"))
    only_flagged = client.get("/staff/submissions/?flagged=on").content.decode()
    assert "Flagged Model" in only_flagged and "Plain Model" not in only_flagged
    only_hidden = client.get("/staff/submissions/?hidden=on&benchmark=mmae").content.decode()
    assert "Hidden Model" in only_hidden and "Flagged Model" not in only_hidden
    by_state = client.get("/staff/submissions/?state=finished&q=plain").content.decode()
    assert "Plain Model" in by_state and "Hidden Model" not in by_state


def test_an_unknown_filter_value_is_a_400_naming_it(client, staff, db):
    client.force_login(staff)
    response = client.get("/staff/submissions/?state=lost")
    assert response.status_code == 400
    assert "Select a valid choice. lost is not one of the available choices." \
        in response.content.decode()


def test_staff_hide_a_submission_with_a_reason(client, score_with_files, staff):
    submission = score_with_files()
    client.force_login(staff)
    response = client.post(f"/staff/submissions/{submission.pk}/hide/",
                           {"hidden": "true", "reason": "spam"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/staff/submissions/{submission.pk}/"
    assert f"submission {submission.pk} is hidden" in response.content.decode()
    assert Submission.objects.get(pk=submission.pk).hidden
    assert AuditEvent.objects.get().reason == "spam"


def test_staff_flag_with_a_public_reason(client, score_with_files, staff):
    submission = score_with_files()
    client.force_login(staff)
    client.post(f"/staff/submissions/{submission.pk}/flag/",
                {"flagged": "true", "reason": "outputs copied from model X"})
    assert Submission.objects.get(pk=submission.pk).flag_reason == \
        "outputs copied from model X"
    page = client.get(f"/staff/submissions/{submission.pk}/").content.decode()
    assert "Flagged: outputs copied from model X" in page
    assert "Remove the flag" in page


@pytest.mark.parametrize(("url", "data", "error"), [
    ("hide", {"hidden": "true", "reason": ""}, "This field is required."),
    ("flag", {"flagged": "true"}, "This field is required."),
    ("flag", {"flagged": "maybe", "reason": "r"}, "Select a valid choice."),
    ("delete", {"reason": "spam", "confirm": "12345"}, "to confirm the deletion"),
    ("delete", {"reason": "", "confirm": "{pk}"}, "This field is required."),
], ids=["hide-no-reason", "flag-no-reason", "flag-bad-choice", "delete-wrong-confirm",
        "delete-no-reason"])
def test_bad_input_is_a_400_naming_the_problem_and_changes_nothing(client, score_with_files, staff,
                                                                   url, data, error):
    submission = score_with_files()
    client.force_login(staff)
    response = client.post(f"/staff/submissions/{submission.pk}/{url}/",
                           {k: v.format(pk=submission.pk) for k, v in data.items()})
    assert response.status_code == 400
    assert error in response.content.decode()
    assert unchanged(submission)


def test_removing_a_flag_that_is_not_there_is_refused(client, score_with_files, staff):
    submission = score_with_files()
    client.force_login(staff)
    response = client.post(f"/staff/submissions/{submission.pk}/flag/",
                           {"flagged": "false", "reason": "r"})
    assert response.status_code == 400
    assert f"submission {submission.pk} is not flagged" in response.content.decode()
    assert unchanged(submission)


def test_an_unknown_submission_is_a_404_for_staff_too(client, staff, db):
    client.force_login(staff)
    assert client.get("/staff/submissions/4242/").status_code == 404
    assert client.post("/staff/submissions/4242/hide/",
                       {"hidden": "true", "reason": "r"}).status_code == 404
    assert not AuditEvent.objects.exists()


def test_staff_delete_with_the_typed_number(client, score_with_files, staff,
                                            django_capture_on_commit_callbacks):
    submission = score_with_files()
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/staff/submissions/{submission.pk}/delete/",
                               {"reason": "spam", "confirm": str(submission.pk)}, follow=True)
    assert response.redirect_chain[-1][0] == "/staff/submissions/"
    assert f"submission {submission.pk} (Model A on mmae) is deleted" \
        in response.content.decode()
    assert not Submission.objects.filter(pk=submission.pk).exists()
    assert client.get(f"/submissions/{submission.pk}/").status_code == 404
    assert AuditEvent.objects.get().action == AuditEvent.Action.DELETION


def test_staff_set_and_remove_a_quota_override(client, author, staff):
    client.force_login(staff)
    response = client.post("/staff/quotas/", {"username": "author", "per_day": "60",
                                              "in_flight": "", "reason": "a lab"}, follow=True)
    assert "author may now submit 60 per 24 hours" in response.content.decode()
    assert QuotaOverride.objects.get(user=author).per_day == 60
    client.force_login(author)
    mine = client.get("/submissions/").content.decode()
    quota = one(mine, "#quota")
    assert texts(quota, "strong")[0] == "0 of 60" and "Quota: 0 of 60 uploads used" in quota.text
    assert "your own limits, set by staff" in mine
    client.force_login(staff)
    client.post("/staff/quotas/", {"username": "author", "reason": "done"})
    assert not QuotaOverride.objects.exists()
    assert AuditEvent.objects.filter(action="quota").count() == 2


def test_a_quota_for_an_unknown_user_is_refused(client, staff):
    client.force_login(staff)
    response = client.post("/staff/quotas/", {"username": "nobody", "per_day": "5",
                                              "reason": "r"})
    assert response.status_code == 400
    assert "no user &#x27;nobody&#x27;" in response.content.decode()
    assert not QuotaOverride.objects.exists() and not AuditEvent.objects.exists()


def test_the_audit_log_lists_and_filters_events(client, score_with_files, staff):
    submission = score_with_files()
    client.force_login(staff)
    client.post(f"/staff/submissions/{submission.pk}/flag/",
                {"flagged": "true", "reason": "copied"})
    client.post(f"/staff/submissions/{submission.pk}/hide/",
                {"hidden": "true", "reason": "spam wave"})
    page = client.get("/staff/audit/").content.decode()
    assert "copied" in page and "spam wave" in page
    assert '{"flag_reason": "copied"}' in texts(page, "code.json")  # after, as JSON
    flags = client.get("/staff/audit/?action=flag").content.decode()
    assert "copied" in flags and "spam wave" not in flags
    assert client.get("/staff/audit/?action=nonsense").status_code == 400


# --- the author's buttons ------------------------------------------------------------------


def test_the_author_makes_a_submission_private_from_its_page(client, score_with_files, author):
    submission = score_with_files()
    client.force_login(author)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "Make private" in page
    represent = one(page, ".author-controls input[name=chosen][value=true]").parent
    assert represent.one("button").text == "Pin this one for Model A on the board"
    assert represent.one("button span.cut.name").text == "Model A"
    response = client.post(f"/submissions/{submission.pk}/visibility/", {"public": "false"},
                           follow=True)
    assert f"submission {submission.pk} is now private" in response.content.decode()
    assert not Submission.objects.get(pk=submission.pk).public
    assert AuditEvent.objects.get().action == AuditEvent.Action.VISIBILITY


def test_the_author_chooses_the_representative_from_the_list(client, score_with_files, author):
    first, second = score_with_files(), score_with_files()
    client.force_login(author)
    response = client.post(f"/submissions/{first.pk}/representative/",
                           {"chosen": "true", "next": "list"}, follow=True)
    assert response.redirect_chain[-1][0] == "/submissions/"
    assert f"submission {first.pk} now represents Model A" in response.content.decode()
    assert list(Submission.objects.filter(representative=True)) == [first]
    assert not Submission.objects.get(pk=second.pk).representative


def test_a_refused_choice_is_shown_to_the_author(client, score_with_files, author):
    submission = score_with_files(public=False)
    client.force_login(author)
    response = client.post(f"/submissions/{submission.pk}/representative/",
                           {"chosen": "true"}, follow=True)
    assert "cannot represent Model A on the board: it is private" in response.content.decode()
    assert not Submission.objects.filter(representative=True).exists()


@pytest.mark.parametrize(("who", "code"), [("other_author", 404), ("staff", 403)])
@pytest.mark.parametrize("url", ["visibility", "representative"])
def test_only_the_author_uses_the_buttons(client, score_with_files, request, who, code, url):
    submission = score_with_files(public=False)
    client.force_login(request.getfixturevalue(who))
    response = client.post(f"/submissions/{submission.pk}/{url}/",
                           {"public": "true", "chosen": "true"})
    assert response.status_code == code
    assert not Submission.objects.get(pk=submission.pk).public
    assert not AuditEvent.objects.exists()


def test_an_anonymous_visitor_is_sent_to_log_in(client, score_with_files):
    submission = score_with_files(public=False)
    response = client.post(f"/submissions/{submission.pk}/visibility/", {"public": "true"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Submission.objects.get(pk=submission.pk).public


def test_a_staff_action_without_the_csrf_token_is_refused(score_with_files, staff):
    from django.test import Client

    submission = score_with_files()
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    response = client.post(f"/staff/submissions/{submission.pk}/hide/",
                           {"hidden": "true", "reason": "spam"})
    assert response.status_code == 403
    assert unchanged(submission)
