"""A broker that lost its queues (Redis restarted without persistence, or flushed): noticed by
its missing mark, once per loss, and every pending batch and aggregation sent again at once;
batches whose messages could not be published are sent when a worker connects again; batches
a lost lease server handed back are sent again within a second once it answers. The whole
pipeline through real restarts: tests/submissions/test_pipeline_broker_restart.py."""

import pytest
import redis
from celery import Task
from django.utils import timezone
from kombu.exceptions import OperationalError

from config.celery import (
    BROKER_MARK,
    app,
    broker_connected,
    broker_emptied,
    broker_emptied_check,
)
from judge.errors import FleetUnavailable, LeaseError
from scoring import runs, tasks
from scoring.models import RunBatch, ScoringRun
from tests.conftest import BROKER, TIMEOUTS, _use_broker, free_ports

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_broker():
    """This process queues to the test Redis (on a queue of the test's own) with its mark
    removed; the mark as it was, and the in-memory broker, are put back afterwards."""
    client = redis.Redis.from_url(BROKER)
    kept = client.get(BROKER_MARK)
    client.delete(BROKER_MARK)
    _use_broker(BROKER, broker_transport_options=TIMEOUTS, task_default_queue="broker-lost")
    yield client
    _use_broker("memory://", task_default_queue="celery")
    for key in client.scan_iter(match="*broker-lost*"):
        client.delete(key)
    client.delete(BROKER_MARK)
    if kept is not None:
        client.set(BROKER_MARK, kept)


class Sent(list):
    broken_after: int | None = None


@pytest.fixture
def sent(monkeypatch):
    """What the scoring tasks queue: (task name, id, queue, countdown), nothing published;
    with `broken_after` set, publishing fails once that many are queued."""
    calls = Sent()

    def capture(task):
        def apply_async(args, queue=None, countdown=None, **kwargs):
            if calls.broken_after is not None and len(calls) >= calls.broken_after:
                raise OperationalError("Error 111 connecting to 127.0.0.1:6379")
            calls.append((task.name.rsplit(".", 1)[1], args[0], queue, countdown))
        return apply_async

    for task in (tasks.score_batch, tasks.aggregate_run):
        monkeypatch.setattr(task, "apply_async", capture(task))
    monkeypatch.setattr(tasks.aggregate_run, "delay",
                        lambda run_id: tasks.aggregate_run.apply_async((run_id,)))
    return calls


def test_the_mark_tells_a_lost_queue_once_per_loss(redis_broker):
    heard = []

    def receiver(**kwargs):
        heard.append(kwargs["sender"])

    broker_emptied.connect(receiver)
    try:
        assert broker_emptied_check() is True  # no mark: emptied (or new)
        assert broker_emptied_check() is False  # marked since: nothing lost
        assert broker_emptied_check() is False
        redis_broker.delete(BROKER_MARK)  # as a restart without persistence does
        assert broker_emptied_check() is True
        assert broker_emptied_check() is False
    finally:
        broker_emptied.disconnect(receiver)
    assert heard == [app, app]
    assert redis_broker.get(BROKER_MARK)


def test_a_lost_queue_lists_every_pending_batch_and_aggregation_however_recent(run_setup):
    run = run_setup(["http://127.0.0.1:9"])
    runs.batches_enqueued([b.id for b in run.batches.all()])
    claimed = run.batches.order_by("index").first()
    assert runs.batch_claim(claimed.id)
    other = run_setup(["http://127.0.0.1:9"])
    assert runs.run_cancel(other.id)
    aggregating = run_setup(["http://127.0.0.1:9"])
    RunBatch.objects.filter(run=aggregating).update(status=RunBatch.Status.DONE)
    assert runs.run_try_aggregate(aggregating.id)
    # The regular sweep leaves them alone: just queued, just aggregating.
    assert runs.sweep() == ([], [])
    batch_ids, run_ids = runs.sweep(queue_lost=True)
    # A claimed batch stays with its live worker; a cancelled run's batches are not scored.
    assert sorted(batch_ids) == sorted(run.batches.exclude(id=claimed.id)
                                       .values_list("id", flat=True))
    assert run_ids == [aggregating.id]
    assert RunBatch.objects.get(id=claimed.id).status == "claimed"


def test_a_lost_queue_sends_again_at_once_on_each_batchs_queue(run_setup, redis_broker, sent,
                                                               settings):
    settings.SCORING_RESCORE_QUEUE = "broker-lost-rescore"
    run = run_setup(["http://127.0.0.1:9"])
    rescore = run_setup(["http://127.0.0.1:9"])
    ScoringRun.objects.filter(id=rescore.id).update(purpose=ScoringRun.Purpose.RESCORE)
    aggregating = run_setup(["http://127.0.0.1:9"])
    RunBatch.objects.filter(run=aggregating).update(status=RunBatch.Status.DONE)
    assert runs.run_try_aggregate(aggregating.id)
    queued = timezone.now()
    runs.batches_enqueued(list(RunBatch.objects.values_list("id", flat=True)))
    tasks.sweep()  # the periodic sweep finds the broker without its mark
    default = settings.CELERY_TASK_DEFAULT_QUEUE
    expected = {("score_batch", b, default, None) for b in run.batches.values_list("id", flat=True)}
    expected |= {("score_batch", b, "broker-lost-rescore", None)
                 for b in rescore.batches.values_list("id", flat=True)}
    expected.add(("aggregate_run", aggregating.id, None, None))
    assert set(sent) == expected and len(sent) == len(expected)
    assert not RunBatch.objects.filter(status="pending", enqueued_at__lt=queued).exists()
    sent.clear()
    tasks.sweep()  # marked again: only what is stale, and nothing is
    assert sent == []


def test_batches_a_lost_lease_server_handed_back_go_again_within_a_second_once_it_answers(
        run_setup, sent, settings):
    settings.SCORING_FLEET_RETRY_SECONDS = 30
    run = run_setup(["http://127.0.0.1:9"])
    ids = list(run.batches.values_list("id", flat=True))[:2]
    lost = LeaseError("the judge slot lease server could not be reached")
    settings.REDIS_URL = BROKER  # back: it answers
    tasks._retry_later(ids, lost)
    assert {countdown for *_, countdown in sent} == {tasks.LEASE_RETRY_SECONDS}
    sent.clear()
    settings.REDIS_URL = f"redis://127.0.0.1:{free_ports(1)[0]}/0"  # still gone: an outage
    tasks._retry_later(ids, lost)
    assert {countdown for *_, countdown in sent} == {30}
    sent.clear()
    settings.REDIS_URL = BROKER
    tasks._retry_later(ids, FleetUnavailable("every endpoint is down"))
    assert {countdown for *_, countdown in sent} == {30}
    assert sorted(batch_id for _, batch_id, *_ in sent) == sorted(ids)


def test_batches_that_could_not_be_queued_go_when_a_worker_connects_again(run_setup, sent):
    run = run_setup(["http://127.0.0.1:9"])
    ids = sorted(run.batches.values_list("id", flat=True))
    assert len(ids) >= 3
    sent.broken_after = 1  # the broker goes away after the first message
    with pytest.raises(OperationalError):
        tasks._send(ids)
    (queued,) = [batch_id for _, batch_id, *_ in sent]
    left = sorted(set(ids) - {queued})
    unsent = sorted(RunBatch.objects.filter(enqueued_at=None).values_list("id", flat=True))
    assert unsent == left == sorted(runs.unsent_batch_ids())
    sent.clear()
    sent.broken_after = None
    broker_connected.send(sender=app)  # a worker's consumer connected again
    assert sorted(batch_id for _, batch_id, *_ in sent) == left
    assert runs.unsent_batch_ids() == []
    sent.clear()
    broker_connected.send(sender=app)  # nothing left unsent: nothing sent twice
    assert sent == []


def test_a_batch_handed_back_in_a_transaction_is_marked_unsent_if_its_commit_cannot_publish(
        run_setup, monkeypatch, django_capture_on_commit_callbacks):
    """Queued inside a transaction, a batch's message is published once it commits; should
    the broker be unreachable then, the batch is marked unsent (sent when a worker connects
    again), not left marked queued for the stale sweep."""
    run = run_setup(["http://127.0.0.1:9"])
    runs.batches_enqueued(list(run.batches.values_list("id", flat=True)))
    ids = sorted(run.batches.values_list("id", flat=True))[:2]

    def unreachable(self, *args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(Task, "apply_async", unreachable)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        tasks._retry_later(ids)  # inside the test's transaction: deferred to its commit
        assert sorted(runs.unsent_batch_ids()) == []  # marked queued meanwhile
    assert len(callbacks) == len(ids)
    assert sorted(runs.unsent_batch_ids()) == ids
