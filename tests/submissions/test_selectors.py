"""The one visibility rule: Submission.objects.published()/visible_to() and submission_get."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from submissions.models import Submission
from submissions.selectors import submission_get


@pytest.fixture
def cast(scored, author, other_author):
    return {"public": scored("Public"), "private": scored("Private", public=False),
            "running": scored("Running", status="scoring"),
            "other": scored("Other", owner=other_author, public=False)}


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
