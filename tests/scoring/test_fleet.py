"""Taking judge endpoints out and putting them back; probing the whole fleet."""

import threading
import time

import pytest
from django.db import connection

from audit.models import AuditEvent
from judge.errors import FleetUnavailable
from judge.health import EndpointHealth
from judge.models import Endpoint
from scoring import query_loop
from scoring.fleet import (
    EndpointError,
    endpoint_put_back,
    endpoint_take_out,
    fleet_base_urls,
    fleet_probe,
)
from scoring.models import Answer
from tests.conftest import free_ports, judge_config

pytestmark = pytest.mark.django_db

A, B = "http://judge-a:8000", "http://judge-b:8000"


def judge(**overrides):
    return query_loop.JudgeSettings(**{"concurrency": 8, "timeout": 10, "down_wait": 1,
                                       **overrides})


def test_the_fleet_is_every_url_of_every_config_once():
    judge_config([A, B + "/"], seed=1)
    judge_config([B, "http://judge-c:8000"], seed=2)
    assert sorted(fleet_base_urls()) == [A, B, "http://judge-c:8000"]


def test_taking_an_endpoint_out_is_recorded_with_who_and_why(staff):
    judge_config([A, B])
    endpoint = endpoint_take_out(actor=staff, base_url=A + "/", reason="GPU 3 throws ECC errors")
    assert endpoint.base_url == A and endpoint.enabled is False
    assert endpoint.disabled_reason == "GPU 3 throws ECC errors"
    assert endpoint.enabled_changed_at is not None
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.actor_name) == ("endpoint", staff, "staff")
    assert (event.object_type, event.object_repr) == ("judge.endpoint", A)
    assert (event.before, event.after) == ({"enabled": True}, {"enabled": False})
    assert event.reason == "GPU 3 throws ECC errors" and event.public is False


def test_putting_it_back_is_recorded_too(staff):
    judge_config([A, B])
    endpoint_take_out(actor=staff, base_url=A, reason="maintenance")
    endpoint = endpoint_put_back(actor=staff, base_url=A, reason="driver updated")
    assert endpoint.enabled is True and endpoint.disabled_reason == ""
    events = list(AuditEvent.objects.order_by("id").values_list("after", "reason"))
    assert events == [({"enabled": False}, "maintenance"),
                      ({"enabled": True}, "driver updated")]


def test_taking_out_needs_a_reason_and_a_known_endpoint(staff):
    judge_config([A])
    with pytest.raises(EndpointError, match="say why"):
        endpoint_take_out(actor=staff, base_url=A, reason="  ")
    with pytest.raises(EndpointError, match="not an endpoint of any judge config"):
        endpoint_take_out(actor=staff, base_url="http://elsewhere:1", reason="x")
    assert not AuditEvent.objects.exists()
    assert not Endpoint.objects.filter(enabled=False).exists()


def test_a_switch_that_changes_nothing_is_refused_and_not_recorded(staff):
    judge_config([A])
    with pytest.raises(EndpointError, match="already in service"):
        endpoint_put_back(actor=staff, base_url=A)
    endpoint_take_out(actor=staff, base_url=A, reason="flaky")
    with pytest.raises(EndpointError, match="already out of service"):
        endpoint_take_out(actor=staff, base_url=A, reason="again")
    assert AuditEvent.objects.count() == 1


def test_a_run_skips_endpoints_taken_out(run_setup, staff):
    run = run_setup([A, B + "/"])
    assert query_loop.run_endpoints(run) == [A, B]
    endpoint_take_out(actor=staff, base_url=B, reason="slow")
    run.refresh_from_db()
    assert query_loop.run_endpoints(run) == [A]
    endpoint_take_out(actor=staff, base_url=A, reason="slow too")
    assert query_loop.run_endpoints(run) == []
    endpoint_put_back(actor=staff, base_url=B)
    assert query_loop.run_endpoints(run) == [B]


@pytest.mark.slow
def test_a_batch_is_scored_only_by_endpoints_in_service(run_setup, staff, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    run = run_setup(sim.urls)
    endpoint_take_out(actor=staff, base_url=sim.urls[1], reason="testing the switch")
    batch = run.batches.order_by("index").first()
    assert query_loop.batch_score(batch.id, judge()) is True
    used = set(Answer.objects.filter(run=run).values_list("endpoint", flat=True))
    assert used == {sim.urls[0]}
    first, second = sim.stats()
    assert first["completions"] > 0 and second["completions"] == 0


def test_with_every_endpoint_out_a_batch_is_handed_back_as_in_an_outage(run_setup, staff):
    urls = [f"http://127.0.0.1:{p}" for p in free_ports(2)]
    run = run_setup(urls)
    for url in urls:
        endpoint_take_out(actor=staff, base_url=url, reason="rack power work")
    batch = run.batches.order_by("index").first()
    with pytest.raises(FleetUnavailable, match="taken out by staff"):
        query_loop.batch_score(batch.id, judge())
    batch.refresh_from_db()
    assert (batch.status, batch.claims) == ("pending", 0)
    assert not Answer.objects.filter(run=run).exists()


def test_probing_the_fleet_stores_each_endpoint(thread_simulator_factory, settings):
    settings.FLEET_PROBE_TIMEOUT = 2
    sim = thread_simulator_factory(latency_ms=1)
    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    judge_config([sim.urls[0], dead], seed=1)
    judge_config([sim.urls[0]], seed=2)
    probed = fleet_probe()
    assert {e.base_url: e.healthy for e in probed} == {sim.urls[0]: True, dead: False}
    assert Endpoint.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_batch_in_flight_stops_using_an_endpoint_taken_out(run_setup, staff, settings,
                                                             simulator_factory, monkeypatch):
    settings.SCORING_BATCH_ITEMS = 100  # one batch of every item: several seconds of queries
    settings.SCORING_HEARTBEAT_SECONDS = 1
    sim = simulator_factory("--latency-ms", "100")
    run = run_setup(sim.urls)
    seen, noticed, exclude = {}, threading.Event(), EndpointHealth.exclude

    async def excluding(fleet, base_urls):
        await exclude(fleet, base_urls)
        if sim.urls[1] in base_urls:
            noticed.set()

    monkeypatch.setattr(EndpointHealth, "exclude", excluding)

    def take_out_then_look():
        try:
            # Once the endpoint has answered a query of the batch (not after a fixed time: a
            # loaded machine can take longer than any to send the first).
            deadline = time.monotonic() + 60
            while not sim.stats()[1]["completions"] and time.monotonic() < deadline:
                time.sleep(0.05)
            endpoint_take_out(actor=staff, base_url=sim.urls[1], reason="mid-batch")
            # The batch's fleet excluding it at a heartbeat, then the queries already sent
            # there ending, as the simulator counts them: not a time this machine may be too
            # loaded to keep.
            seen["noticed"] = noticed.wait(60)
            while (port := sim.stats()[1])["in_progress"] or port["waiting"]:
                time.sleep(0.05)
            seen["after"] = [s["completions"] for s in sim.stats()]
        finally:
            connection.close()

    timer = threading.Thread(target=take_out_then_look)
    timer.start()
    assert query_loop.batch_score(run.batches.get().id, judge(concurrency=4)) is True
    timer.join()
    assert seen["noticed"]
    final = [s["completions"] for s in sim.stats()]
    assert final[1] == seen["after"][1] > 0  # nothing new for the endpoint taken out
    assert final[0] > seen["after"][0]  # while the other one went on
    assert Answer.objects.filter(run=run, error=None).count() == run.total_queries


def test_the_beat_probes_the_fleet_every_few_seconds(settings, thread_simulator_factory):
    from config.celery import app
    from scoring import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["probe-judge-fleet"]
    assert entry["schedule"] == settings.FLEET_PROBE_SECONDS == 30
    assert entry["options"]["expires"] == 30
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    sim = thread_simulator_factory(latency_ms=1)
    judge_config(sim.urls)
    tasks.probe_fleet()
    assert set(Endpoint.objects.values_list("base_url", "healthy")) == {
        (sim.urls[0], True), (sim.urls[1], True)}
