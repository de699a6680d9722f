"""The judgment cache does not tell one author of another's private upload: answers are
reused across authors only from published submissions and baselines, so another author's
upload of the very same files sends every query to the judge (and takes as long as a new
one); copies are counted and shown (the status page, the API, the ETA) only when their
source is the author's own or published."""

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
def sim(small_bench, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    judge_config(sim.urls, benchmark=small_bench["benchmark"])
    return sim


@pytest.fixture
def score_as(make_submission):
    """`score_as(user, public=False, name=None)`: an upload of the small bench's files,
    validated and scored here."""
    def score(user, *, public=False, name=None):
        submission = make_submission(user, public=public, name=name)
        assert submission_validate(submission.pk) is True
        submission.refresh_from_db()
        score_run(submission.current_run)
        submission.refresh_from_db()
        return submission

    return score


def counted(sim, score_as, user, **options) -> tuple[Submission, int]:
    """A submission of `user` scored, and how many judge queries its scoring sent."""
    before = sim.completions()
    submission = score_as(user, **options)
    return submission, sim.completions() - before


@pytest.mark.slow
def test_a_second_authors_identical_upload_sends_every_query_to_the_judge(
        sim, score_as, author, other_author):
    first = score_as(author)
    assert first.current_run.total_queries > 0
    second, asked = counted(sim, score_as, other_author)
    run = second.current_run
    assert asked == run.total_queries == first.current_run.total_queries
    assert not run.answers.filter(cached=True).exists()


@pytest.mark.slow
def test_a_hidden_public_submission_is_not_a_source_either(sim, score_as, author, other_author):
    first = score_as(author, public=True)
    Submission.objects.filter(pk=first.pk).update(hidden=True)
    second, asked = counted(sim, score_as, other_author)
    assert asked == second.current_run.total_queries > 0


@pytest.fixture
def same_outputs(sim, score_as, author, other_author):
    """The author's public submission scored, then another author's upload of the very same
    files scored: every answer of the second is a copy from the first; then the first made
    private again, so those copies come from a run the second author may not see."""
    first = score_as(author, public=True)
    second, asked = counted(sim, score_as, other_author)
    run = second.current_run
    assert asked == 0
    assert run.answers.filter(cached=True).count() == run.total_queries > 0
    Submission.objects.filter(pk=first.pk).update(public=False)
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


@pytest.mark.slow
def test_copies_of_someone_elses_private_answers_are_not_shown(client, same_outputs,
                                                                other_author):
    client.force_login(other_author)
    assert page_cache_hits(client, same_outputs["second"]) == 0
    assert api_cache_hits(client, same_outputs["second"]) == 0


@pytest.mark.slow
def test_they_are_shown_once_the_source_is_published(client, same_outputs, other_author):
    publish(same_outputs["first"])
    client.force_login(other_author)
    total = same_outputs["second"].current_run.total_queries
    assert page_cache_hits(client, same_outputs["second"]) == total
    assert api_cache_hits(client, same_outputs["second"]) == total


@pytest.mark.slow
def test_an_authors_own_private_answers_are_reused_and_shown(client, sim, score_as, author):
    score_as(author)
    again, asked = counted(sim, score_as, author, name="Model B")
    run = again.current_run
    assert asked == 0
    client.force_login(author)
    assert page_cache_hits(client, again) == run.total_queries > 0
    assert api_cache_hits(client, again) == run.total_queries


@pytest.mark.slow
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
