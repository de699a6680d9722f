"""A vote lost on our side never reaches a published figure (issue 34, item 3): a query that
ends in a transport error, a 5xx or unreadable replies that change is asked again, a run that
loses more than SCORING_MAX_LOST_SHARE fails on our side, and only a reply the judge repeats
(deterministic, unreadable) counts as a wrong vote, reported by reason."""

import pytest

from judge.fleet import LOST_KINDS
from judge.simulator import UNREADABLE
from scoring.models import Answer, ItemResult, SliceResult
from submissions.models import Submission
from tests.html import texts
from tests.submissions.conftest import state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def figures(run):
    return ({(s.dimension, s.bucket): s.values for s in SliceResult.objects.filter(run=run)},
            {r.item_id: (r.values, r.score) for r in ItemResult.objects.filter(run=run)})


def scored(stack, what):
    submission_id = upload(stack)
    wait_for(lambda: state(submission_id) in ("finished", "failed"), 240, what, stack["log"])
    return Submission.objects.select_related("current_run").get(id=submission_id)


# One attempt per query, so that every fault injected ends a query without an answer: the
# judge config is seeded from JUDGE_MAX_ATTEMPTS where the first run is made (the worker's
# validation).
ONE_ATTEMPT = {"SCORING_BATCH_ITEMS": "3", "JUDGE_MAX_ATTEMPTS": "1"}


def test_a_run_with_transport_failures_and_5xx_ends_with_the_clean_runs_figures(
        pipeline_stack, worker_factory, thread_simulator_factory):
    stack = pipeline_stack
    worker_factory(stack["ports"], **ONE_ATTEMPT, SCORING_MAX_LOST_SHARE="1")()
    sim = thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8, fail_rate=0.25)
    faulty = scored(stack, "the run with 5xx")
    assert faulty.state == "finished", faulty.current_run.error
    run = faulty.current_run
    assert sim.stats()[0]["failed"] + sim.stats()[1]["failed"] > 0
    assert run.lost_queries > 0
    assert not Answer.objects.filter(run=run).exclude(error=None).exists()
    sim.stop()
    # The same outputs on a clean judge, asked again (not copied from the judgment cache).
    Answer.objects.filter(run=run).update(cached=True)
    thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8)
    clean = scored(stack, "the clean run")
    assert clean.state == "finished" and clean.current_run.lost_queries == 0
    assert not Answer.objects.filter(run=clean.current_run, cached=True).exists()
    assert figures(clean.current_run) == figures(run)


def test_a_run_past_the_lost_share_fails_on_our_side(pipeline_stack, worker_factory,
                                                     thread_simulator_factory):
    stack = pipeline_stack
    worker_factory(stack["ports"], **ONE_ATTEMPT, SCORING_MAX_LOST_SHARE="0.05")()
    thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8, fail_rate=0.5)
    submission = scored(stack, "the run to end")
    run = submission.current_run
    assert (submission.state, run.status) == ("failed", "failed")
    assert run.error.startswith("failed on our side: the judge fleet lost")
    assert run.lost_queries > 0.05 * run.total_queries
    assert not Answer.objects.filter(run=run, error_kind__in=LOST_KINDS).exists()
    assert not SliceResult.objects.filter(run=run).exists()


def test_only_a_reply_the_judge_repeats_is_a_wrong_vote_and_the_author_sees_why(
        pipeline_stack, worker_factory, thread_simulator_factory, client, author):
    stack = pipeline_stack
    worker_factory(stack["ports"], SCORING_BATCH_ITEMS="3", SCORING_MAX_LOST_SHARE="1")()
    # A misbehaving server (a fifth of its replies garbage, each different) and a judge that
    # cannot answer a tenth of the queries (the same reply each time they are asked).
    thread_simulator_factory(ports=stack["ports"], latency_ms=5, slots=8, garbage_rate=0.2,
                             unreadable_rate=0.1)
    submission = scored(stack, "the run to finish")
    run = submission.current_run
    assert submission.state == "finished", run.error
    failed = Answer.objects.filter(run=run).exclude(error=None)
    assert failed.count() > 0
    assert set(failed.values_list("error_kind", "raw")) == {("unparseable reply", UNREADABLE)}
    assert not Answer.objects.filter(run=run, raw=UNREADABLE, error=None).exists()
    body = stack["client"].get(f"/api/submissions/{submission.id}/").json()
    assert body["failures"] == {"unparseable reply": failed.count()}
    client.force_login(author)
    page = client.get(f"/submissions/{submission.id}/").content.decode()
    assert f"unparseable reply: {failed.count()}" in texts(page, "li")
