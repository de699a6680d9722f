"""The judge simulator as a real server process, over loopback HTTP."""

import concurrent.futures
import json
import time

import pytest

from scoring.kinds.mmae import rules as mmae
from tests.conftest import run_manage
from tests.httpclient import HTTP

pytestmark = pytest.mark.integration  # the simulator as a process: `manage.py judge_simulator`

MODEL = "Qwen3-Omni-30B-A3B-Instruct"


def query(question="Is a dog audible?", choices=("Yes", "No", "None of the above"),
          audio="data:audio/wav;base64,AAAA", model=MODEL):
    return {"model": model, "messages": [
        {"role": "system", "content": mmae.SYSTEM_PROMPT},
        {"role": "user", "content": [
            {"type": "text", "text": "<audio output>: "},
            {"type": "audio_url", "audio_url": {"url": audio}},
            {"type": "text", "text": mmae.query_text(question, choices)},
        ]},
    ]}


def post(url, body, timeout=30):
    return HTTP.post(f"{url}/v1/chat/completions", json=body, timeout=timeout)


def test_it_speaks_vllms_api_and_says_it_is_a_simulator(simulator_factory):
    sim = simulator_factory("--latency-ms", "1")
    url = sim.urls[0]
    assert HTTP.get(f"{url}/health").status_code == 200
    models = HTTP.get(f"{url}/v1/models").json()
    assert models["data"][0]["id"] == MODEL
    assert models["data"][0]["owned_by"] == "judge-simulator"
    response = post(url, query())
    body = response.json()
    assert response.headers["x-judge-simulator"] == "1"
    assert body["system_fingerprint"] == "judge-simulator"
    assert "not a real model" in body["simulator"]
    letter, reason = mmae.parse_reply(body["choices"][0]["message"]["content"], 3)
    assert letter in "ABC" and reason.startswith("Simulated judge, not a model")


def test_an_unknown_model_is_a_404_as_in_vllm(simulator_factory):
    sim = simulator_factory("--latency-ms", "1")
    response = post(sim.urls[0], query(model="other"))
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": f"The model `other` does not exist. Valid aliases: {MODEL}.",
        "type": "NotFoundError", "param": "model", "code": 404}


def test_verdicts_are_deterministic_and_vary_across_systems(simulator_factory):
    sim = simulator_factory("--latency-ms", "1", "--seed", "4")

    def letters(audio):
        return [post(sim.urls[0], query(f"Question {i}?", ("P", "Q", "R", "S"), audio))
                .json()["choices"][0]["message"]["content"] for i in range(30)]

    first = letters("data:audio/wav;base64,SYSTEMA")
    assert letters("data:audio/wav;base64,SYSTEMA") == first
    assert letters("data:audio/wav;base64,SYSTEMB") != first
    picked = {json.loads(c)["choice"] for c in first}
    assert len(picked) > 1


def test_at_most_slots_requests_are_served_at_once(simulator_factory):
    sim = simulator_factory("--latency-ms", "500", "--slots", "4")
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(lambda i: post(sim.urls[0], query(f"q{i}")).status_code,
                              range(12)))
    assert codes == [200] * 12
    # The server's own counters and clock, not the client's (which a loaded machine
    # stretches): 12 asked at once, 4 served at once and never more, so at least three waves
    # of 500 ms passed between the first slot taken and the last freed.
    stats = sim.stats()[0]
    assert (stats["ok"], stats["peak_in_progress"]) == (12, 4)
    assert stats["last_freed_at"] - stats["first_busy_at"] >= 3 * 0.5


def test_it_injects_http_500s(simulator_factory):
    sim = simulator_factory("--latency-ms", "1", "--fail-rate", "1")
    response = post(sim.urls[0], query())
    assert response.status_code == 500
    assert response.json()["error"] == {"message": "simulated internal server error (request 1)",
                                        "type": "InternalServerError", "param": None, "code": 500}


def test_it_injects_unparseable_replies(simulator_factory):
    sim = simulator_factory("--latency-ms", "1", "--garbage-rate", "1")
    for _ in range(4):
        content = post(sim.urls[0], query()).json()["choices"][0]["message"]["content"]
        with pytest.raises(mmae.ReplyError):
            mmae.parse_reply(content, 3)


def test_it_injects_slow_replies(simulator_factory):
    sim = simulator_factory("--latency-ms", "1", "--slow-rate", "1", "--slow-ms", "1200")
    started = time.monotonic()
    assert post(sim.urls[0], query()).status_code == 200
    assert time.monotonic() - started >= 1.2
    assert sim.stats()[0]["slow"] == 1


def test_its_help_says_it_is_a_simulator():
    result = run_manage("judge_simulator", "--help")
    assert "SIMULATOR (not a real model)" in " ".join(result.stdout.split())


def test_a_bad_option_is_refused_on_the_command_line():
    """The process ends non-zero naming the option (each option's checks:
    tests/judge/test_simulator_options.py)."""
    result = run_manage("judge_simulator", "--fail-rate", "1.5", timeout=60)
    assert result.returncode != 0
    assert "fail_rate must be between 0 and 1" in result.stderr


def test_it_counts_its_peak_concurrency_and_how_busy_its_slots_were(simulator_factory):
    sim = simulator_factory("--latency-ms", "500", "--slots", "4")
    before = sim.stats()[0]
    assert (before["peak_in_progress"], before["first_busy_at"], before["all_busy_at"],
            before["busy_slot_seconds"]) == (0, None, None, 0)
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(lambda i: post(sim.urls[0], query(f"q{i}")).status_code,
                              range(6)))
    assert codes == [200] * 6
    stats = sim.stats()[0]
    assert stats["peak_in_progress"] == 4 and stats["in_progress"] == 0
    assert started <= stats["first_busy_at"] <= stats["all_busy_at"] <= stats["now"]
    # Slot-seconds on the server's own clock: each of the 6 held its slot for the latency at
    # least, and no more than the 4 slots were busy between the first taken and the last freed.
    busy, span = stats["busy_slot_seconds"], stats["last_freed_at"] - stats["first_busy_at"]
    assert 6 * 0.5 <= busy <= 4 * span
    metrics = HTTP.get(f"{sim.urls[0]}/metrics").text
    assert 'judge_simulator:peak_requests_running{engine="0",model_name="' in metrics
    assert metrics.split("judge_simulator:peak_requests_running{")[1].split("\n")[0] \
        .endswith("} 4.0")
    assert sim.stats()[1]["peak_in_progress"] == 0  # counted per port
