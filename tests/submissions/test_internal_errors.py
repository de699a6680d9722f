"""Faults of ours (the database, the disk, a bug) at each stage never reject an upload: they
are retried, then fail on our side (staff alerted, no quota charged), and a retry once the
fault is gone finishes the work. Tasks run eagerly here (`apply`), their retries with them."""

import errno
from datetime import timedelta

import pytest
from django.core import mail
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from audit.models import AuditEvent
from scoring import aggregation, query_loop, runs
from scoring import tasks as scoring_tasks
from scoring.models import Answer, RunBatch, ScoringRun, SliceResult
from submissions import archives, moderation, services, tasks
from submissions.models import Submission
from submissions.services import failures_to_retry, quota_left, submission_retry
from tests.conftest import CAST_PASSWORD, judge_config
from tests.submissions.test_services import media_files


class Fault:
    """Replaces `name` of `target` with a function that raises `error` on its first `times`
    calls (every call when None), then does what the original does."""

    def __init__(self, monkeypatch, target, name, error, times=None):
        self.original, self.error, self.times, self.calls = getattr(target, name), error, \
            times, 0
        monkeypatch.setattr(target, name, self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.times is None or self.calls <= self.times:
            raise self.error
        return self.original(*args, **kwargs)

    def remove(self):
        self.times = 0


def countdowns(monkeypatch, task) -> list:
    """The countdown of every retry `task` schedules."""
    seen = []
    original = task.signature_from_request

    def record(*args, **kwargs):
        seen.append(kwargs.get("countdown"))
        return original(*args, **kwargs)

    monkeypatch.setattr(task, "signature_from_request", record)
    return seen


FAULTS = {
    "database": lambda mp: Fault(mp, runs, "run_create", OperationalError("database is locked")),
    "full disk": lambda mp: Fault(mp, archives, "_copy_limited",
                                  OSError(errno.ENOSPC, "No space left on device")),
    "bug (RuntimeError)": lambda mp: Fault(mp, services, "limits_for",
                                           RuntimeError("unexpected state")),
    "bug (KeyError)": lambda mp: Fault(mp, services, "get_kind", KeyError("mmae")),
}


@pytest.fixture
def retries(settings):
    settings.SUBMISSION_VALIDATION_RETRIES = 2
    settings.SUBMISSION_VALIDATION_RETRY_SECONDS = 10
    settings.SUBMISSION_RETRY_AFTER_SECONDS = 600
    settings.SUBMISSION_RETRY_TIMES = 2
    settings.SUBMISSIONS_PER_DAY = 1


def validate(submission, capture) -> Submission:
    with capture(execute=True):
        services.validate_submission.apply(args=(submission.id,))
    return Submission.objects.select_related("current_run").get(id=submission.id)


@pytest.mark.slow
@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_of_ours_in_validation_is_retried_then_fails_on_our_side(
        fault, author, staff, make_submission, retries, monkeypatch,
        django_capture_on_commit_callbacks):
    submission = make_submission(author)
    injected = FAULTS[fault](monkeypatch)
    waits = countdowns(monkeypatch, services.validate_submission)
    submission = validate(submission, django_capture_on_commit_callbacks)

    assert injected.calls == 3 and waits == [10, 30]  # tried 3 times, with backoff
    assert submission.status == "failed" and submission.state == "failed"
    assert "rejected" not in submission.status_times and not submission.report.get("errors")
    assert submission.error.startswith("validation broke 3 times; last error: ")
    assert {"upload/archive/audio.zip", "upload/predictions/submission.jsonl"} <= {
        f.split("/", 2)[2] for f in media_files()}  # the upload is kept
    assert quota_left(author)["today"] == 1  # no quota charged
    alert, told = sorted(mail.outbox, key=lambda m: m.to[0] != "staff@example.com")
    assert alert.to == ["staff@example.com"]
    assert f"validation of submission {submission.id} failed" in alert.subject
    assert submission.error in alert.body
    assert told.to == ["author@example.com"] and "failed" in told.subject
    assert "failed on our side, not yours: nothing is wrong with your upload" in told.body
    assert "It will be retried automatically" in told.body

    injected.remove()
    assert submission_retry(submission_id=submission.id) is True
    submission = validate(submission, django_capture_on_commit_callbacks)
    assert submission.state == "queued" and submission.coverage == 1.0
    assert set(submission.current_run.outputs) == set(
        submission.benchmark.items.values_list("key", flat=True))


def test_a_fault_that_passes_is_retried_and_validation_finishes(
        author, make_submission, retries, monkeypatch, django_capture_on_commit_callbacks):
    submission = make_submission(author)
    injected = Fault(monkeypatch, runs, "run_create", OperationalError("gone"), times=2)
    submission = validate(submission, django_capture_on_commit_callbacks)
    assert injected.calls == 3
    assert submission.state == "queued" and submission.retries == 0
    assert mail.outbox == []  # nobody alerted, the author not told of a failure


def test_between_tries_the_submission_is_back_to_uploaded(author, make_submission, retries,
                                                          monkeypatch):
    submission = make_submission(author)
    injected = Fault(monkeypatch, runs, "run_create", OperationalError("database is locked"))
    seen = []
    real_put_back = services.submission_validation_broke

    def put_back(submission_id):
        real_put_back(submission_id)
        seen.append(Submission.objects.get(id=submission_id).status)

    monkeypatch.setattr(services, "submission_validation_broke", put_back)
    services.validate_submission.apply(args=(submission.id,))
    # Uploaded after each try that is retried, so that the retry (or the sweeper) claims it.
    assert seen == ["uploaded", "uploaded"] and injected.calls == 3
    assert Submission.objects.get(id=submission.id).status == "failed"


def test_the_sweeper_retries_a_failure_after_a_growing_backoff_a_bounded_number_of_times(
        author, make_submission, retries, monkeypatch, django_capture_on_commit_callbacks):
    submission = make_submission(author)
    Fault(monkeypatch, runs, "run_create", OperationalError("database is locked"))
    validate(submission, django_capture_on_commit_callbacks)
    sent = []
    monkeypatch.setattr(services.validate_submission, "delay", sent.append)
    for retried, wait in ((0, 600), (1, 1800)):
        row = Submission.objects.get(id=submission.id)
        failed_at = timezone.datetime.fromisoformat(row.status_times["failed"])
        assert failures_to_retry(now=failed_at + timedelta(seconds=wait - 5)) == []
        assert failures_to_retry(now=failed_at + timedelta(seconds=wait + 5)) == [submission.id]
        # As if it had failed that long ago, for the sweep task itself.
        row.status_times["failed"] = (failed_at - timedelta(seconds=wait + 5)).isoformat()
        Submission.objects.filter(id=submission.id).update(status_times=row.status_times)
        with django_capture_on_commit_callbacks(execute=True):
            tasks.sweep_validations()
        row = Submission.objects.get(id=submission.id)
        assert row.status == "uploaded" and row.retries == retried + 1
        assert sent[-1] == submission.id
        validate(submission, django_capture_on_commit_callbacks)  # breaks again
    row = Submission.objects.get(id=submission.id)
    assert row.status == "failed" and row.retries == 2
    assert failures_to_retry(now=timezone.now() + timedelta(days=30)) == []  # bounded
    assert "Staff have been told and will retry it" in row.failure_notice()


def test_the_status_page_and_the_api_tell_the_author_in_plain_words(
        client, author, make_submission, retries, monkeypatch,
        django_capture_on_commit_callbacks):
    submission = make_submission(author)
    Fault(monkeypatch, archives, "_copy_limited", OSError(errno.ENOSPC, "No space left"))
    validate(submission, django_capture_on_commit_callbacks)
    client.login(username="author", password=CAST_PASSWORD)
    status = reverse("leaderboard:submission-status", args=[submission.id])
    page = client.get(status).content.decode()
    assert "Validating this submission failed on our side, not yours" in page
    assert "rejected" not in page and "No space left" not in page
    answer = api_as(author).get(f"/api/submissions/{submission.id}/").json()
    assert answer["status"] == "failed"
    assert answer["failure"] == "validation failed on our side"
    assert answer["notice"].startswith("Validating this submission failed on our side")


# --- staff ----------------------------------------------------------------------------------


@pytest.fixture
def failed_validation(author, make_submission, retries, monkeypatch,
                      django_capture_on_commit_callbacks):
    submission = make_submission(author)
    fault = Fault(monkeypatch, runs, "run_create", OperationalError("database is locked"))
    validate(submission, django_capture_on_commit_callbacks)
    fault.remove()
    return submission


def test_staff_retry_from_the_submissions_page_with_a_reason_and_it_is_audited(
        client, staff, failed_validation, monkeypatch):
    monkeypatch.setattr(moderation, "broker_check", lambda: None)
    client.login(username="staff", password=CAST_PASSWORD)
    listing = client.get(reverse("staff:submissions"), {"state": "failed"}).content.decode()
    assert reverse("staff:retry", args=[failed_validation.id]) in listing
    page = client.get(reverse("staff:submission", args=[failed_validation.id])).content.decode()
    assert f"Retry submission {failed_validation.id}" in page
    assert "OperationalError: database is locked" in page  # staff see what broke
    url = reverse("staff:retry", args=[failed_validation.id])
    assert client.post(url, {"reason": ""}).status_code == 400
    assert Submission.objects.get(id=failed_validation.id).status == "failed"
    answer = client.post(url, {"reason": "database fixed", "next": "list"})
    assert answer.status_code == 302 and answer["Location"] == reverse("staff:submissions")
    assert Submission.objects.get(id=failed_validation.id).status == "uploaded"
    event = AuditEvent.objects.get(object_id=str(failed_validation.id))
    assert (event.actor, event.reason, event.public) == (staff, "database fixed", False)
    assert event.before["status"] == "failed" and event.after == {"status": "uploaded"}
    again = client.post(url, {"reason": "twice"})
    assert again.status_code == 400
    assert "only one that failed on our side can be retried" in again.content.decode()


def api_as(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return api


def test_staff_retry_through_the_api(author, staff, failed_validation, monkeypatch):
    monkeypatch.setattr(moderation, "broker_check", lambda: None)
    url = f"/api/submissions/{failed_validation.id}/retry/"
    refused = api_as(author).post(url, {"reason": "mine"})
    assert refused.status_code == 403
    assert refused.json() == {"errors": ["only staff may moderate submissions"]}
    assert api_as(staff).post(url, {}).status_code == 400
    answer = api_as(staff).post(url, {"reason": "disk freed"})
    assert answer.status_code == 200 and answer.json()["status"] == "uploaded"
    again = api_as(staff).post(url, {"reason": "again"})
    assert again.status_code == 409
    assert again.json() == {"errors": [f"submission {failed_validation.id} is uploaded: only "
                                       "one that failed on our side can be retried"]}


@pytest.mark.parametrize("who", [None, "author"])
def test_retry_is_404_to_anyone_but_staff(client, who, failed_validation):
    if who:
        client.login(username=who, password=CAST_PASSWORD)
    url = reverse("staff:retry", args=[failed_validation.id])
    assert client.post(url, {"reason": "x"}).status_code == 404
    assert Submission.objects.get(id=failed_validation.id).status == "failed"


def test_retry_is_post_only(client, staff, failed_validation):
    client.login(username="staff", password=CAST_PASSWORD)
    assert client.get(reverse("staff:retry", args=[failed_validation.id])).status_code == 405


# --- scoring and aggregation ----------------------------------------------------------------


@pytest.fixture
def bench_judge(small_bench, thread_simulator_factory, settings):
    """A judge simulator as the small bench's current config, batches of two items."""
    settings.SCORING_BATCH_ITEMS = 2  # 6 samples: 3 batches
    settings.SCORING_MAX_CLAIMS = 2
    settings.SCORING_CLAIM_AHEAD_SECONDS = 0  # each batch by its own task, in order
    sim = thread_simulator_factory(latency_ms=1)
    judge_config(sim.urls, benchmark=small_bench["benchmark"])
    return sim


def queued_submission(author, make_submission) -> Submission:
    submission = make_submission(author)
    services.submission_validate(submission.id)
    return Submission.objects.select_related("current_run").get(id=submission.id)


def overall(run_id) -> dict:
    return SliceResult.objects.get(run_id=run_id, dimension="overall", bucket="").values


def reference_figures(submission, sim) -> dict:
    """The figures of the same outputs scored cleanly under an identical judge config (a
    config of its own, so that no answer comes from the judgment cache)."""
    run = submission.current_run
    config = judge_config(sim.urls, max_attempts=4)
    reference = runs.run_create(benchmark=run.benchmark, audio_root=run.audio_root,
                                outputs=run.outputs, missing=run.missing, config=config)
    score(reference.id)
    return overall(reference.id)


def score(run_id: int) -> None:
    """What workers do: every pending batch of the run scored, then the run aggregated."""
    for batch_id in runs.pending_batch_ids(run_id):
        scoring_tasks.score_batch.apply(args=(batch_id,))  # the last queues the aggregation
    runs.run_try_aggregate(run_id)
    if ScoringRun.objects.get(id=run_id).status == ScoringRun.Status.AGGREGATING:
        scoring_tasks.aggregate_run.apply(args=(run_id,))


@pytest.mark.slow
def test_a_batch_that_keeps_breaking_fails_on_our_side_and_a_retry_resumes_it(
        bench_judge, author, staff, make_submission, monkeypatch, settings):
    submission = queued_submission(author, make_submission)
    run = submission.current_run
    broken = RunBatch.objects.get(run=run, index=2).id
    real_open = query_loop._batch_open

    def open_batch(batch_id):
        if batch_id == broken:
            raise OperationalError("server closed the connection unexpectedly")
        return real_open(batch_id)

    monkeypatch.setattr(query_loop, "_batch_open", open_batch)
    for _ in range(settings.SCORING_MAX_CLAIMS):
        score(run.id)
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error == ("failed on our side: scoring batch 2 broke 2 times; last error: "
                         "OperationalError: server closed the connection unexpectedly")
    [alert] = mail.outbox
    assert alert.to == ["staff@example.com"] and f"scoring run {run.id} failed" in alert.subject
    assert quota_left(author)["today"] == settings.SUBMISSIONS_PER_DAY
    kept = Answer.objects.filter(run=run).count()
    assert 0 < kept < run.total_queries  # the other batches' answers

    monkeypatch.setattr(query_loop, "_batch_open", real_open)
    asked = bench_judge.completions()
    monkeypatch.setattr(moderation, "broker_check", lambda: None)
    moderation.submission_retry_failed(actor=staff, submission=submission,
                                       reason="database back")
    run.refresh_from_db()
    assert run.status == "queued" and run.error == ""
    assert list(run.batches.order_by("index").values_list("status", "claims")) == [
        ("done", 1), ("done", 1), ("pending", 0)]
    score(run.id)
    run.refresh_from_db()
    assert run.status == "finished"
    assert bench_judge.completions() - asked == run.total_queries - kept  # only batch 2 asked
    assert overall(run.id) == reference_figures(submission, bench_judge)


@pytest.mark.slow
def test_an_aggregation_that_breaks_twice_finishes_after_retries(
        bench_judge, author, make_submission, monkeypatch, settings):
    settings.SCORING_AGGREGATE_RETRIES = 3
    settings.SCORING_AGGREGATE_RETRY_SECONDS = 10
    submission = queued_submission(author, make_submission)
    injected = Fault(monkeypatch, aggregation, "run_aggregate", OperationalError("deadlock"),
                     times=2)
    waits = countdowns(monkeypatch, scoring_tasks.aggregate_run)
    score(submission.current_run_id)
    run = ScoringRun.objects.get(id=submission.current_run_id)
    assert injected.calls == 3 and waits == [10, 30]
    assert run.status == "finished" and mail.outbox == []
    assert overall(run.id) == reference_figures(submission, bench_judge)


@pytest.mark.slow
def test_an_aggregation_that_keeps_breaking_fails_on_our_side_then_the_sweeper_resumes_it(
        bench_judge, author, staff, make_submission, monkeypatch, settings,
        django_capture_on_commit_callbacks):
    settings.SCORING_AGGREGATE_RETRIES = 1
    settings.SUBMISSION_RETRY_AFTER_SECONDS = 0
    submission = queued_submission(author, make_submission)
    injected = Fault(monkeypatch, aggregation, "run_aggregate", KeyError("overall"))
    score(submission.current_run_id)
    run = ScoringRun.objects.get(id=submission.current_run_id)
    assert injected.calls == 2 and run.status == "failed"
    assert run.error == "failed on our side: aggregation broke 2 times; last error: " \
        "KeyError: 'overall'"
    assert [m.to for m in mail.outbox] == [["staff@example.com"]]
    submission.refresh_from_db()
    assert "Scoring this submission failed on our side" in submission.failure_notice()

    injected.remove()
    sent = []
    monkeypatch.setattr(scoring_tasks.aggregate_run, "delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.sweep_validations()
    assert sent == [run.id]  # every batch was done: straight to aggregation
    scoring_tasks.aggregate_run.apply(args=(run.id,))
    run.refresh_from_db()
    assert run.status == "finished"
    assert Submission.objects.get(id=submission.id).retries == 1
