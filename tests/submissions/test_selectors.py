"""The one visibility rule: Submission.objects.published()/visible_to() and submission_get."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from submissions.models import Submission
from submissions.selectors import submission_get


@pytest.fixture
def cast(score_with_files, author, other_author):
    return {"public": score_with_files("Public"),
            "private": score_with_files("Private", public=False),
            "running": score_with_files("Running", status="scoring"),
            "other": score_with_files("Other", owner=other_author, public=False)}


def test_published_is_public_not_hidden_and_scored(cast):
    Submission.objects.filter(pk=cast["public"].pk).update(hidden=False)
    assert set(Submission.objects.published()) == {cast["public"]}
    Submission.objects.filter(pk=cast["public"].pk).update(hidden=True)
    assert not Submission.objects.published().exists()


def test_each_user_sees_the_published_and_their_own(cast, author, other_author, staff):
    assert set(Submission.objects.visible_to(AnonymousUser())) == {cast["public"]}
    assert set(Submission.objects.visible_to(author)) == {cast["public"], cast["private"],
                                                          cast["running"]}
    assert set(Submission.objects.visible_to(other_author)) == {cast["public"], cast["other"]}
    assert Submission.objects.visible_to(staff).count() == 4


def test_a_submission_one_may_not_see_is_a_404(cast, other_author):
    for user in (other_author, AnonymousUser()):
        with pytest.raises(Http404):
            submission_get(user=user, pk=cast["private"].pk)
    with pytest.raises(Http404):
        submission_get(user=other_author, pk="not-a-number")


def test_managing_a_published_submission_of_someone_else_is_a_403(cast, other_author, author,
                                                                 staff):
    assert submission_get(user=other_author, pk=cast["public"].pk) == cast["public"]
    with pytest.raises(PermissionDenied):
        submission_get(user=other_author, pk=cast["public"].pk, write=True)
    assert submission_get(user=author, pk=cast["private"].pk, write=True) == cast["private"]
    assert submission_get(user=staff, pk=cast["other"].pk, write=True) == cast["other"]


def test_progress_counts_failed_queries_by_the_kind_the_fleet_gave(small_bench):
    from scoring import runs
    from scoring.models import Answer, Criterion
    from submissions.selectors import run_progress
    from tests.conftest import judge_config

    benchmark = small_bench["benchmark"]
    key = small_bench["samples"][0]["id"]
    run = runs.run_create(benchmark=benchmark, audio_root=str(small_bench["root"]),
                          outputs={key: f"systems/sys/{key}.wav"}, missing={},
                          config=judge_config(["http://127.0.0.1:9"], benchmark=benchmark))
    criteria = list(Criterion.objects.filter(item__benchmark=benchmark, item__key=key))
    for criterion, (error, kind) in zip(criteria, [("timeout after 120 s", "timeout"),
                                                    ("HTTP 503: down", "server error"),
                                                    ("HTTP 504: down", "server error"),
                                                    (None, "")], strict=False):
        Answer.objects.create(run=run, criterion=criterion, round=0, choices=[],
                              verdict={"correct_letter": "A", "correct": False}, attempts=5,
                              error=error,
                              error_kind=kind)
    progress = run_progress(run, owner_id=None)
    assert progress["failures"] == {"server error": 2, "timeout": 1}
    assert progress["done"] == 4
