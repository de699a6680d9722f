"""The judgment cache does not tell one author of another's private upload: answers copied
from a private submission of someone else are reused but neither counted nor shown (the
status page, the API, the ETA); from one's own or a published submission they are."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scoring.models import Answer, ScoringRun
from submissions.models import Submission
from submissions.selectors import run_progress
from submissions.services import submission_validate
from tests.conftest import judge_config, score_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def same_outputs(small_bench, make_submission, simulator_factory, author, other_author):
    """The author's private submission scored, then another author's upload of the very same
    files scored: every answer of the second is a copy from the first."""
    sim = simulator_factory("--latency-ms", "1")
    judge_config(sim.urls, benchmark=small_bench["benchmark"])

    def scored(user):
        submission = make_submission(user)
        assert submission_validate(submission.pk) is True
        submission.refresh_from_db()
        score_run(submission.current_run)
        submission.refresh_from_db()
        return submission

    first = scored(author)
    asked = sim.completions()
    second = scored(other_author)
    assert sim.completions() == asked  # reused: the judge was asked nothing again
    run = second.current_run
    assert run.answers.filter(cached=True).count() == run.total_queries > 0
    return {"first": first, "second": second}


def page_cache_hits(client, submission) -> int:
    response = client.get(f"/submissions/{submission.pk}/")
    assert response.status_code == 200
    (row,) = response.context["runs"]
    return row["cached"]


def api_cache_hits(client, submission) -> int:
    response = client.get(f"/api/submissions/{submission.pk}/")
    assert response.status_code == 200
    (run,) = response.json()["runs"]
    return run["cached_answers"]


def publish(submission: Submission) -> None:
    Submission.objects.filter(pk=submission.pk).update(public=True)


def test_copies_of_someone_elses_private_answers_are_not_shown(client, same_outputs,
                                                                other_author):
    client.force_login(other_author)
    assert page_cache_hits(client, same_outputs["second"]) == 0
    assert api_cache_hits(client, same_outputs["second"]) == 0


def test_they_are_shown_once_the_source_is_published(client, same_outputs, other_author):
    publish(same_outputs["first"])
    client.force_login(other_author)
    total = same_outputs["second"].current_run.total_queries
    assert page_cache_hits(client, same_outputs["second"]) == total
    assert api_cache_hits(client, same_outputs["second"]) == total


def test_an_authors_copies_of_their_own_private_answers_are_shown(
        client, small_bench, make_submission, same_outputs, author):
    again = make_submission(author, name="Model B")
    submission_validate(again.pk)
    again.refresh_from_db()
    score_run(again.current_run)
    client.force_login(author)
    assert page_cache_hits(client, again) == again.current_run.total_queries
    assert api_cache_hits(client, again) == again.current_run.total_queries


def test_the_eta_gains_nothing_from_silent_copies(same_outputs):
    second = same_outputs["second"]
    run = second.current_run
    # Half way through: started a minute ago, half of the answers stored (all copies).
    keep = list(run.answers.order_by("id").values_list("id", flat=True)[:run.total_queries // 2])
    Answer.objects.filter(run=run).exclude(id__in=keep).delete()
    started = (timezone.now() - timedelta(seconds=60)).isoformat()
    ScoringRun.objects.filter(pk=run.pk).update(status="scoring",
                                                status_times={"scoring": started})
    run.refresh_from_db()
    progress = run_progress(run, owner_id=second.owner_id)
    assert progress["done"] == len(keep) and progress["eta_seconds"] is None
    publish(same_outputs["first"])
    progress = run_progress(run, owner_id=second.owner_id)
    assert progress["eta_seconds"] == pytest.approx(60 * (run.total_queries - len(keep))
                                                    / len(keep), abs=2)
