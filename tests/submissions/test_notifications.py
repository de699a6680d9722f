"""Emails to authors when a submission is scored, fails or is rejected: one per state."""

import importlib
import io
import zipfile

import pytest
from django.apps import apps
from django.conf import settings
from django.core import mail

from scoring.models import ScoringRun, SliceResult
from submissions import notifications, tasks
from submissions.models import Submission
from submissions.services import submission_validate

NOTIFY_MIGRATION = importlib.import_module(
    "submissions.migrations.0004_submission_notified_state")


@pytest.fixture
def queued(author, make_submission):
    """A submission of the author's that passed validation: its run is queued."""
    submission = make_submission(author)
    assert submission_validate(submission.id)
    submission.refresh_from_db()
    return submission


def end_run(submission, status, *, error="", figures=None):
    ScoringRun.objects.filter(id=submission.current_run_id).update(status=status, error=error)
    if figures:
        SliceResult.objects.create(run_id=submission.current_run_id, dimension="overall",
                                   bucket="", n=6, values={"n": 6, **figures})


def bad_archive(small_bench) -> bytes:
    sample_id = small_bench["samples"][0]["id"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"systems/sys/{sample_id}.wav", b"RIFF....WAVE not audio")
    return buffer.getvalue()


def test_a_finished_submission_emails_its_author_the_link_and_overall_figures(queued):
    end_run(queued, "finished", figures={"IFR": 61.25, "CR": 80.5, "EMR": 33.333})
    assert notifications.submission_notify(submission_id=queued.id) is True
    [email] = mail.outbox
    assert email.to == ["author@example.com"]
    assert email.subject == f"Submission {queued.id} (Model A on mmae) is scored"
    assert f"{settings.SITE_URL}/submissions/{queued.id}/" in email.body
    assert "  EMR: 33.33\n  IFR: 61.25\n  CR: 80.50\n" in email.body  # the kind's order
    assert "The submission is private" in email.body
    queued.refresh_from_db()
    assert queued.notified_state == "finished"


def test_a_partial_public_submission_says_how_much_had_an_output(queued):
    Submission.objects.filter(id=queued.id).update(coverage=0.83, public=True)
    end_run(queued, "finished", figures={"IFR": 50.0, "CR": 50.0, "EMR": 50.0})
    notifications.submission_notify(submission_id=queued.id)
    [email] = mail.outbox
    assert "scored 0: 83% of them have one." in email.body
    assert "private" not in email.body


def test_a_second_delivery_sends_no_second_email(queued):
    end_run(queued, "finished", figures={"IFR": 50.0, "CR": 50.0, "EMR": 50.0})
    assert notifications.submission_notify(submission_id=queued.id) is True
    assert notifications.submission_notify(submission_id=queued.id) is False
    tasks.notify_authors()
    assert len(mail.outbox) == 1


def test_a_failed_run_emails_the_reason(queued):
    end_run(queued, "failed", error="batch 0 broke 5 times: judge unreachable")
    assert notifications.submission_notify(submission_id=queued.id) is True
    [email] = mail.outbox
    assert email.subject == f"Submission {queued.id} (Model A on mmae) failed"
    assert "batch 0 broke 5 times: judge unreachable" in email.body
    assert "does not count against your quota" in email.body


def test_a_rejection_by_validation_emails_the_author_at_once(
        author, make_submission, small_bench, django_capture_on_commit_callbacks):
    submission = make_submission(author, archive=bad_archive(small_bench))
    with django_capture_on_commit_callbacks(execute=True):
        submission_validate(submission.id)
    submission.refresh_from_db()
    assert submission.state == "rejected" and submission.notified_state == "rejected"
    [email] = mail.outbox
    assert email.subject == f"Submission {submission.id} (Model A on mmae) was rejected"
    assert "not readable as WAV or FLAC audio" in email.body
    assert f"/submissions/{submission.id}/" in email.body
    tasks.notify_authors()
    assert len(mail.outbox) == 1


def test_the_sweep_emails_each_ended_submission_once(author, other_author, make_submission,
                                                     queued):
    failed = make_submission(other_author)
    submission_validate(failed.id)
    failed.refresh_from_db()
    end_run(queued, "finished", figures={"IFR": 1.0, "CR": 2.0, "EMR": 3.0})
    end_run(failed, "failed", error="aggregation failed: boom")
    rejected = make_submission(author, name="Model B")
    Submission.objects.filter(id=rejected.id).update(status="rejected")  # as a moderator would
    still_scoring = make_submission(author, name="Model C")

    assert notifications.submissions_to_notify() == sorted([queued.id, failed.id, rejected.id])
    tasks.notify_authors()
    tasks.notify_authors()
    assert sorted((m.to[0], m.subject.rsplit(" ", 1)[-1]) for m in mail.outbox) == [
        ("author@example.com", "rejected"), ("author@example.com", "scored"),
        ("other@example.com", "failed")]
    assert notifications.submissions_to_notify() == []
    assert Submission.objects.get(id=still_scoring.id).notified_state == ""


def test_a_new_end_after_a_rescore_is_emailed_again(queued):
    end_run(queued, "finished", figures={"IFR": 1.0, "CR": 2.0, "EMR": 3.0})
    tasks.notify_authors()
    end_run(queued, "failed", error="the rescore broke")
    tasks.notify_authors()
    assert [m.subject.rsplit(" ", 1)[-1] for m in mail.outbox] == ["scored", "failed"]


def test_a_claim_taken_by_another_delivery_sends_nothing(queued, monkeypatch):
    end_run(queued, "finished")
    real_filter = Submission.objects.filter

    def filter_after_a_rival_claim(*args, **kwargs):
        # Another delivery claims it between this one's read and its claim.
        if "notified_state" in kwargs:
            real_filter(id=queued.id).update(notified_state="finished")
        return real_filter(*args, **kwargs)

    monkeypatch.setattr(Submission.objects, "filter", filter_after_a_rival_claim)
    assert notifications.submission_notify(submission_id=queued.id) is False
    monkeypatch.undo()
    assert mail.outbox == []


def test_a_failed_send_gives_the_claim_back_for_the_next_sweep(queued, monkeypatch):
    end_run(queued, "finished")

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("no mail server")

    monkeypatch.setattr(notifications, "send_mail", refuse)
    tasks.notify_authors()  # logs the failure, raises nothing
    queued.refresh_from_db()
    assert queued.notified_state == ""
    monkeypatch.undo()
    tasks.notify_authors()
    assert len(mail.outbox) == 1


def test_an_author_without_an_email_address_is_skipped(queued, author):
    author.email = ""
    author.save()
    end_run(queued, "finished")
    assert notifications.submission_notify(submission_id=queued.id) is False
    assert mail.outbox == []
    assert notifications.submissions_to_notify() == []


def test_a_cancelled_or_running_submission_is_not_emailed(queued):
    assert notifications.submission_notify(submission_id=queued.id) is False
    end_run(queued, "cancelled")
    assert notifications.submission_notify(submission_id=queued.id) is False
    assert mail.outbox == []


def test_submissions_that_ended_before_the_migration_are_not_emailed(queued, author,
                                                                     make_submission):
    end_run(queued, "finished")
    rejected = make_submission(author, name="Model B")
    Submission.objects.filter(id=rejected.id).update(status="rejected")
    NOTIFY_MIGRATION.mark_ended_as_notified(apps, None)
    assert notifications.submissions_to_notify() == []


def test_the_sweep_is_on_the_beat_schedule():
    entry = settings.CELERY_BEAT_SCHEDULE["notify-authors"]
    assert entry["task"] == tasks.notify_authors.name == "submissions.tasks.notify_authors"
    assert entry["schedule"] == 15


def test_a_finished_run_is_emailed_once_however_often_the_sweep_runs(queued):
    end_run(queued, "finished", figures={"IFR": 50.0, "CR": 50.0, "EMR": 50.0})
    tasks.notify_authors()
    tasks.notify_authors()  # a redelivery sends nothing more
    assert len(mail.outbox) == 1
    assert f"/submissions/{queued.id}/" in mail.outbox[0].body
