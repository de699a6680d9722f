"""Attempts disclosed: an author's scored submissions to a benchmark, public and private, are
counted, and neither making one private, nor staff hiding or deleting one, lowers the count."""

import pytest

from submissions.attempts import attempt_counts, attempt_dates, attempts_by_model
from submissions.models import DeletedAttempt, Submission
from submissions.moderation import submission_delete, submission_hide, submission_set_public
from tests.conftest import judge_config
from tests.factories import board_benchmark, rescored, scored_submission

pytestmark = pytest.mark.django_db

OVERALL = {("overall", ""): (50.0, 60.0, 10.0)}


@pytest.fixture
def benchmark():
    return board_benchmark()


def test_scored_submissions_count_public_and_private_and_nothing_unscored(
        benchmark, author, other_author):
    shown = scored_submission(benchmark, author, "Editor", OVERALL)
    scored_submission(benchmark, author, "Editor", OVERALL, public=False)
    scored_submission(benchmark, author, "Variant B", OVERALL, public=False)  # another model
    scored_submission(benchmark, author, "Editor", OVERALL, status="failed")
    scored_submission(benchmark, author, "Editor", OVERALL, status="scoring")
    scored_submission(benchmark, other_author, "Theirs", OVERALL)
    # A rejected upload never reached the judge: no run at all.
    Submission.objects.create(owner=author, model=shown.model, benchmark=benchmark,
                              status=Submission.Status.REJECTED)
    newer = board_benchmark(version=2, sha256="b" * 64)  # the same board, a later version
    scored_submission(newer, author, "Editor", OVERALL, public=False)
    elsewhere = board_benchmark(slug="other", sha256="c" * 64)
    scored_submission(elsewhere, author, "Editor", OVERALL)
    assert attempt_counts("mmae") == {author.id: 4, other_author.id: 1}
    assert attempt_counts("other") == {author.id: 1}
    theirs = Submission.objects.get(owner=other_author).model_id
    assert attempts_by_model("mmae", [shown.model_id, theirs]) == {shown.model_id: 4,
                                                                   theirs: 1}


def test_a_rescored_submission_is_one_attempt(benchmark, author):
    submission = scored_submission(benchmark, author, "Editor", OVERALL)
    rescored(submission, judge_config(["http://127.0.0.1:9"], seed=5), (1.0, 2.0, 3.0))
    assert attempt_counts("mmae") == {author.id: 1}


def test_making_private_hiding_and_deleting_never_lower_the_count(benchmark, author, staff):
    public = scored_submission(benchmark, author, "Editor", OVERALL)
    private = scored_submission(benchmark, author, "Editor", OVERALL, public=False)
    failed = scored_submission(benchmark, author, "Editor", OVERALL, status="failed")
    dates = attempt_dates(author.id, "mmae")
    assert dates == sorted([public.created_at, private.created_at]) and \
        attempt_counts("mmae")[author.id] == 2
    submission_set_public(actor=author, submission=public, public=False)
    assert attempt_counts("mmae")[author.id] == 2
    submission_hide(actor=staff, submission=private, reason="checking")
    assert attempt_counts("mmae")[author.id] == 2
    for gone in (private, public):
        submission_delete(actor=staff, submission=gone, reason="asked to")
        assert not Submission.objects.filter(pk=gone.pk).exists()
        assert attempt_counts("mmae")[author.id] == 2
    assert attempt_dates(author.id, "mmae") == dates
    assert set(DeletedAttempt.objects.values_list("submission_id", flat=True)) == {
        public.pk, private.pk}
    # One never scored leaves nothing to keep: the count was never raised by it.
    submission_delete(actor=staff, submission=failed, reason="asked to")
    assert DeletedAttempt.objects.count() == 2 and attempt_counts("mmae")[author.id] == 2


def test_the_dates_are_the_counted_attempts_a_rescore_in_progress_included(
        benchmark, author, other_author):
    """attempt_dates reads the runs of the submissions whose current run has not finished
    only: one being rescored (its current run still scoring, an earlier one finished) is
    still one dated attempt; one never scored is none."""
    from scoring.models import ScoringRun

    done = scored_submission(benchmark, author, "Editor", OVERALL)
    again = scored_submission(benchmark, author, "Editor", OVERALL, public=False)
    scored_submission(benchmark, author, "Editor", OVERALL, status="scoring")
    scored_submission(benchmark, other_author, "Theirs", OVERALL)
    rescored(again, judge_config(["http://127.0.0.1:9"], seed=5), (1.0, 2.0, 3.0))
    again.refresh_from_db()
    ScoringRun.objects.filter(pk=again.current_run_id).update(status="scoring")
    assert attempt_dates(author.id, "mmae") == sorted([done.created_at, again.created_at])
    assert attempt_counts("mmae")[author.id] == 2
