"""The moderation services: each change is audited with before, after and reason; a refused
one changes nothing and records nothing."""

import pytest
from django.core.exceptions import PermissionDenied

from audit.models import AuditEvent
from config.errors import ServiceError
from scoring.models import ScoringRun, SliceResult
from submissions import moderation
from submissions.models import QuotaOverride, Submission
from submissions.services import quota_left, submission_folder

Action = AuditEvent.Action


def only_event() -> AuditEvent:
    events = list(AuditEvent.objects.all())
    assert len(events) == 1, events
    return events[0]


def test_hiding_is_recorded_with_before_after_and_reason(score_with_files, staff):
    submission = score_with_files()
    moderation.submission_hide(actor=staff, submission=submission, reason="spam upload")
    submission.refresh_from_db()
    assert submission.hidden
    event = only_event()
    assert (event.action, event.actor, event.actor_name) == (Action.HIDE, staff, "staff")
    assert (event.before, event.after, event.reason) == ({"hidden": False}, {"hidden": True},
                                                         "spam upload")
    assert (event.object_type, event.object_id) == ("submissions.submission",
                                                    str(submission.pk))
    assert event.benchmark_slug == "mmae" and event.public


def test_unhiding_puts_it_back_and_is_recorded(score_with_files, staff):
    submission = score_with_files()
    moderation.submission_hide(actor=staff, submission=submission, reason="checking")
    moderation.submission_hide(actor=staff, submission=submission, reason="fine after all",
                               hidden=False)
    submission.refresh_from_db()
    assert not submission.hidden
    latest = AuditEvent.objects.order_by("-id").first()
    assert (latest.before, latest.after, latest.reason) == ({"hidden": True},
                                                            {"hidden": False},
                                                            "fine after all")


def test_flagging_keeps_the_public_reason_and_records_it(score_with_files, staff):
    submission = score_with_files()
    moderation.submission_flag(actor=staff, submission=submission,
                               reason="outputs copied from another model")
    submission.refresh_from_db()
    assert submission.flagged and submission.flag_reason == "outputs copied from another model"
    event = only_event()
    assert event.action == Action.FLAG and event.public
    assert (event.before, event.after) == (
        {"flag_reason": ""}, {"flag_reason": "outputs copied from another model"})


def test_removing_a_flag_clears_it_and_records_why(score_with_files, staff):
    submission = score_with_files()
    moderation.submission_flag(actor=staff, submission=submission, reason="suspicious")
    moderation.submission_flag(actor=staff, submission=submission, reason="author explained",
                               flagged=False)
    submission.refresh_from_db()
    assert submission.flag_reason == "" and not submission.flagged
    latest = AuditEvent.objects.order_by("-id").first()
    assert (latest.before, latest.after, latest.reason) == (
        {"flag_reason": "suspicious"}, {"flag_reason": ""}, "author explained")


def test_moderating_a_private_submission_is_not_public(score_with_files, staff):
    submission = score_with_files(public=False)
    moderation.submission_flag(actor=staff, submission=submission, reason="odd")
    moderation.submission_hide(actor=staff, submission=submission, reason="odd")
    assert not AuditEvent.objects.filter(public=True).exists()
    assert AuditEvent.objects.count() == 2


def test_deletion_removes_the_row_its_runs_results_and_files(
        score_with_files, staff, django_capture_on_commit_callbacks):
    submission = score_with_files()
    run_id, folder = submission.current_run_id, submission_folder(submission)
    assert (folder / "audio" / "s1.wav").exists()
    with django_capture_on_commit_callbacks(execute=True):
        before = moderation.submission_delete(actor=staff, submission=submission,
                                              reason="uploaded by mistake")
    assert not Submission.objects.filter(pk=submission.pk).exists()
    assert not ScoringRun.objects.filter(pk=run_id).exists()
    assert not SliceResult.objects.filter(run_id=run_id).exists()
    assert not folder.exists()
    event = only_event()
    assert event.action == Action.DELETION and event.reason == "uploaded by mistake"
    assert event.before == before and event.after == {}
    assert (before["id"], before["model"], before["owner"], before["status"],
            before["runs"]) == (submission.pk, "Model A", "author", "finished", [run_id])


def test_a_submission_still_being_scored_cannot_be_deleted(score_with_files, staff):
    submission = score_with_files(status="scoring")
    with pytest.raises(ServiceError, match=rf"has a scoring run in progress "
                       rf"\(run {submission.current_run_id}\): cancel it"):
        moderation.submission_delete(actor=staff, submission=submission, reason="spam")
    assert Submission.objects.filter(pk=submission.pk).exists()
    assert not AuditEvent.objects.exists()


def test_a_submission_being_rescored_cannot_be_deleted(score_with_files, staff):
    submission = score_with_files()
    rescore = ScoringRun.objects.get(pk=submission.current_run_id)
    rescore.pk, rescore.status = None, ScoringRun.Status.QUEUED
    rescore.save()
    submission.runs.add(rescore)
    with pytest.raises(ServiceError, match=f"run {rescore.pk}"):
        moderation.submission_delete(actor=staff, submission=submission, reason="spam")
    assert ScoringRun.objects.filter(submissions=submission).count() == 2


def test_a_submission_being_validated_cannot_be_deleted(make_submission, author, staff):
    submission = make_submission(author)
    with pytest.raises(ServiceError, match="is uploaded: wait for its "
                       "validation to end"):
        moderation.submission_delete(actor=staff, submission=submission, reason="spam")
    assert Submission.objects.filter(pk=submission.pk).exists()


@pytest.mark.parametrize("act", [
    lambda staff, s: moderation.submission_hide(actor=staff, submission=s, reason="  "),
    lambda staff, s: moderation.submission_flag(actor=staff, submission=s, reason=""),
    lambda staff, s: moderation.submission_delete(actor=staff, submission=s, reason=""),
    lambda staff, s: moderation.quota_override(actor=staff, user=s.owner, per_day=50,
                                               in_flight=None, reason=""),
], ids=["hide", "flag", "delete", "quota"])
def test_a_staff_action_without_a_reason_is_refused_and_changes_nothing(score_with_files, staff,
                                                                        act):
    submission = score_with_files()
    with pytest.raises(ServiceError, match="give a reason"):
        act(staff, submission)
    submission.refresh_from_db()
    assert (submission.hidden, submission.flag_reason) == (False, "")
    assert not QuotaOverride.objects.exists()
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize("act", [
    lambda user, s: moderation.submission_hide(actor=user, submission=s, reason="r"),
    lambda user, s: moderation.submission_flag(actor=user, submission=s, reason="r"),
    lambda user, s: moderation.submission_delete(actor=user, submission=s, reason="r"),
    lambda user, s: moderation.quota_override(actor=user, user=user, per_day=99,
                                              in_flight=None, reason="r"),
], ids=["hide", "flag", "delete", "quota"])
def test_only_staff_may_moderate_even_their_own_submission(score_with_files, author, act):
    submission = score_with_files()
    with pytest.raises(PermissionDenied):
        act(author, submission)
    assert Submission.objects.filter(pk=submission.pk, hidden=False, flag_reason="").exists()
    assert not AuditEvent.objects.exists()


def test_moderating_an_unknown_submission_says_so(staff):
    with pytest.raises(ServiceError, match="no submission 987"):
        moderation.submission_hide(actor=staff, submission=Submission(pk=987), reason="spam")
    assert not AuditEvent.objects.exists()


def test_hiding_twice_is_refused_and_recorded_once(score_with_files, staff):
    submission = score_with_files()
    moderation.submission_hide(actor=staff, submission=submission, reason="spam")
    with pytest.raises(ServiceError, match="already hidden"):
        moderation.submission_hide(actor=staff, submission=submission, reason="spam")
    assert AuditEvent.objects.count() == 1


def test_the_author_switches_visibility_and_it_is_recorded_privately(score_with_files, author):
    submission = score_with_files(public=False)
    moderation.submission_set_public(actor=author, submission=submission, public=True)
    submission.refresh_from_db()
    assert submission.public
    event = only_event()
    assert (event.action, event.before, event.after, event.public) == (
        Action.VISIBILITY, {"public": False}, {"public": True}, False)


@pytest.mark.parametrize("who", ["staff", "other_author"])
def test_only_the_author_switches_visibility(score_with_files, request, who):
    submission = score_with_files(public=False)
    with pytest.raises(PermissionDenied):
        moderation.submission_set_public(actor=request.getfixturevalue(who),
                                         submission=submission, public=True)
    assert not Submission.objects.get(pk=submission.pk).public


def test_choosing_a_representative_replaces_the_previous_choice(score_with_files, author):
    first, second = score_with_files(emr=40.0), score_with_files(emr=30.0)
    moderation.model_set_representative(actor=author, submission=first)
    moderation.model_set_representative(actor=author, submission=second)
    assert list(Submission.objects.filter(representative=True)) == [second]
    latest = AuditEvent.objects.order_by("-id").first()
    assert (latest.object_type, latest.before, latest.after) == (
        "submissions.modelentry", {"representative": first.pk},
        {"representative": second.pk})
    moderation.model_set_representative(actor=author, submission=second, chosen=False)
    assert not Submission.objects.filter(representative=True).exists()


@pytest.mark.parametrize(("kwargs", "why"), [
    ({"public": False}, "it is private"),
    ({"status": "failed"}, "it is failed, not finished"),
])
def test_a_private_or_unfinished_submission_cannot_represent_its_model(score_with_files, author,
                                                                       kwargs, why):
    submission = score_with_files(**kwargs)
    with pytest.raises(ServiceError, match=why):
        moderation.model_set_representative(actor=author, submission=submission)
    assert not Submission.objects.filter(representative=True).exists()
    assert not AuditEvent.objects.exists()


def test_a_hidden_submission_cannot_represent_its_model(score_with_files, author, staff):
    submission = score_with_files()
    moderation.submission_hide(actor=staff, submission=submission, reason="spam")
    with pytest.raises(ServiceError, match="staff have hidden it"):
        moderation.model_set_representative(actor=author, submission=submission)


def test_a_quota_override_changes_the_limits_and_is_recorded(author, staff, settings):
    settings.SUBMISSIONS_PER_DAY, settings.SUBMISSIONS_IN_FLIGHT = 5, 2
    moderation.quota_override(actor=staff, user=author, per_day=40, in_flight=None,
                              reason="a lab evaluating many checkpoints")
    left = quota_left(author)
    assert (left["per_day"], left["today"], left["in_flight_limit"]) == (40, 40, 2)
    event = only_event()
    assert (event.action, event.object_type, event.object_id, event.public) == (
        Action.QUOTA, "auth.user", str(author.pk), False)
    assert (event.before, event.after) == ({}, {"per_day": 40, "in_flight": None})
    moderation.quota_override(actor=staff, user=author, per_day=None, in_flight=None,
                              reason="evaluation done")
    assert quota_left(author)["per_day"] == 5
    assert not QuotaOverride.objects.exists()
    latest = AuditEvent.objects.order_by("-id").first()
    assert (latest.before, latest.after) == ({"per_day": 40, "in_flight": None}, {})


def test_a_quota_override_of_zero_stops_uploads(author, staff, make_submission):
    from config.errors import ServiceError

    moderation.quota_override(actor=staff, user=author, per_day=0, in_flight=None,
                              reason="abuse")
    with pytest.raises(ServiceError, match="daily quota reached: 0 submissions"):
        make_submission(author)


def test_a_negative_quota_is_refused(author, staff):
    with pytest.raises(ServiceError, match="per_day must be 0 or more"):
        moderation.quota_override(actor=staff, user=author, per_day=-1, in_flight=None,
                                  reason="r")
    assert not QuotaOverride.objects.exists() and not AuditEvent.objects.exists()


def test_removing_an_override_that_does_not_exist_is_refused(author, staff):
    with pytest.raises(ServiceError, match="has no quota override to remove"):
        moderation.quota_override(actor=staff, user=author, per_day=None, in_flight=None,
                                  reason="r")
    assert not AuditEvent.objects.exists()
