"""Probing judge servers: the metrics parser, and real simulator processes over loopback."""

import asyncio
import concurrent.futures
import time

import httpx
import pytest

from judge.models import Endpoint
from judge.probe import RUNNING, WAITING, parse_metrics, probe_all
from judge.services import endpoint_set_enabled, endpoints_probe
from tests.conftest import free_ports
from tests.httpclient import HTTP
from tests.judge.test_simulator import post, query

VLLM_METRICS = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-Omni"} 3.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-Omni"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="odd name } with brace"} 7.0 1700000000000
vllm:num_requests_waiting_by_reason{reason="capacity"} 99.0
vllm:gpu_cache_usage_perc{engine="0"} 0.25
process_open_fds 12.0
vllm:num_requests_running{engine="2"} not-a-number
"""


def test_metrics_are_summed_over_label_sets_and_other_series_ignored():
    assert parse_metrics(VLLM_METRICS) == {RUNNING: 5.0, WAITING: 7.0}


def test_metrics_without_labels_and_missing_names_are_read_as_such():
    text = "vllm:num_requests_running 4\nsomething_else 1\n"
    assert parse_metrics(text) == {RUNNING: 4.0}
    assert parse_metrics("") == {}


def probe(urls, **options):
    return asyncio.run(probe_all(urls, timeout=options.pop("timeout", 3), **options))


def test_a_simulator_is_healthy_and_idle(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    results = probe(sim.urls)
    assert [r.base_url for r in results] == sim.urls
    for result in results:
        assert result.healthy and result.error == ""
        assert result.running == 0 and result.waiting == 0
        assert result.latency_ms is not None and result.latency_ms >= 0
        assert result.simulator  # it says so, and the fleet page names it


def test_the_probe_reads_a_simulators_real_running_and_waiting_counts(simulator_factory):
    sim = simulator_factory("--latency-ms", "3000", "--slots", "2")
    url = sim.urls[0]
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        futures = [pool.submit(post, url, query(f"Q{i}?")) for i in range(5)]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            (result,) = probe([url])
            if (result.running, result.waiting) == (2, 3):
                break
            time.sleep(0.1)
        assert (result.running, result.waiting) == (2, 3)
        assert all(f.result().status_code == 200 for f in futures)
    (result,) = probe([url])
    assert (result.running, result.waiting) == (0, 0)


def test_a_dead_port_is_unhealthy_and_says_why(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    alive, down = probe([sim.urls[0], dead])
    assert alive.healthy
    assert not down.healthy
    assert down.error.startswith("GET /v1/models: ConnectError")
    assert down.running is None and down.waiting is None


def test_a_server_without_metrics_is_healthy_with_unknown_load():
    from tests.judge.test_fleet import FakeJudge

    async def main():
        judge = await FakeJudge().start()  # serves /v1/models only
        try:
            return (await probe_all([judge.url], timeout=3))[0]
        finally:
            await judge.stop()

    result = asyncio.run(main())
    assert result.healthy and not result.simulator
    assert result.running is None and result.waiting is None
    assert result.error == "GET /metrics: HTTP 404"


def test_a_server_answering_models_with_an_error_is_down():
    from tests.judge.test_fleet import FakeJudge

    async def main():
        judge = await FakeJudge(models_ok=lambda: False).start()
        try:
            return (await probe_all([judge.url], timeout=3))[0]
        finally:
            await judge.stop()

    result = asyncio.run(main())
    assert not result.healthy
    assert result.error == "GET /v1/models: HTTP 503"


@pytest.mark.django_db
def test_probes_are_stored_one_row_per_url(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    endpoints_probe(base_urls=[sim.urls[0] + "/", dead, sim.urls[0]], timeout=3)
    endpoints_probe(base_urls=[sim.urls[0], dead], timeout=3)
    rows = {e.base_url: e for e in Endpoint.objects.all()}
    assert set(rows) == {sim.urls[0], dead}
    assert rows[sim.urls[0]].healthy is True and rows[sim.urls[0]].running == 0
    assert rows[sim.urls[0]].last_probe_at is not None
    assert rows[dead].healthy is False and "ConnectError" in rows[dead].probe_error
    assert rows[dead].enabled is True  # a probe never switches an endpoint


@pytest.mark.django_db
def test_a_probe_keeps_staffs_switch():
    endpoint_set_enabled(base_url="http://127.0.0.1:9", enabled=False, reason="flaky GPU")
    endpoints_probe(base_urls=["http://127.0.0.1:9"], timeout=1)
    endpoint = Endpoint.objects.get()
    assert endpoint.enabled is False and endpoint.disabled_reason == "flaky GPU"
    assert endpoint.healthy is False


def test_the_simulator_serves_metrics_in_vllms_format(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, model="m-1")
    response = HTTP.get(f"{sim.urls[0]}/metrics", timeout=5)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    lines = response.text.splitlines()
    assert "# TYPE vllm:num_requests_running gauge" in lines
    assert 'vllm:num_requests_running{engine="0",model_name="m-1"} 0.0' in lines
    assert 'vllm:num_requests_waiting{engine="0",model_name="m-1"} 0.0' in lines


def test_requests_whose_client_left_are_no_longer_counted(simulator_factory):
    sim = simulator_factory("--latency-ms", "5000", "--slots", "1")
    url = sim.urls[0]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(post, url, query(f"Q{i}?"), 0.5) for i in range(3)]
        for future in futures:
            with pytest.raises(httpx.ReadTimeout):
                future.result()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        (result,) = probe([url])
        if (result.running, result.waiting) == (0, 0):
            break
        time.sleep(0.1)
    assert (result.running, result.waiting) == (0, 0)
