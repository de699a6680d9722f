"""The judge simulator refuses what vLLM refuses, with vLLM's status and body, over loopback."""

import asyncio
import base64
import io
import json
import socket
import time

import httpx
import numpy as np
import pytest
import soundfile

from judge.errors import FleetUnavailable
from judge.fleet import REFUSED, JudgeFleet
from scoring.kinds.mmae import rules as mmae
from tests.httpclient import HTTP
from tests.judge.test_simulator import MODEL, post, query


def wav_uri(seconds, sample_rate=16000):
    """A silent mono WAV of `seconds` as a data: URI, the way the fleet inlines audio."""
    buffer = io.BytesIO()
    soundfile.write(buffer, np.zeros(round(seconds * sample_rate), "int16"), sample_rate,
                    format="WAV", subtype="PCM_16")
    return "data:audio/wav;base64," + base64.b64encode(buffer.getvalue()).decode()


def audio_query(*uris, model=MODEL, **fields):
    """An MMAE-like query with one audio part per URI."""
    parts = [{"type": "audio_url", "audio_url": {"url": uri}} for uri in uris]
    return {"model": model, **fields, "messages": [
        {"role": "system", "content": mmae.SYSTEM_PROMPT},
        {"role": "user", "content": [*parts, {"type": "text", "text": mmae.query_text(
            "Is a dog audible?", ("Yes", "No"))}]},
    ]}


def refused(response, status=400, kind="BadRequestError"):
    """The message of a vLLM ErrorResponse, after checking its status and shape."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == (kind, status)
    return error["message"]


@pytest.fixture
def strict(thread_simulator_factory):
    """The simulator's server (in a thread: its refusals are the server's, not the
    command's), refusing unreadable audio."""
    return thread_simulator_factory(latency_ms=1, refuse_unreadable_audio=True)


def test_a_model_it_does_not_serve_is_vllms_404(strict):
    response = post(strict.urls[0], audio_query(wav_uri(1), model="Qwen2-Audio"))
    assert refused(response, 404, "NotFoundError") == (
        f"The model `Qwen2-Audio` does not exist. Valid aliases: {MODEL}.")
    assert response.json()["error"]["param"] == "model"


@pytest.mark.parametrize("body, where", [
    (b"{not json", "JSON decode error"),
    (b"[]", "body: Input should be a valid dictionary"),
    (json.dumps({"model": MODEL}).encode(), "body.messages: Field required"),
    (json.dumps({"model": MODEL, "messages": [{"content": "hi"}]}).encode(), "body.messages.0"),
    (json.dumps({"model": MODEL, "max_tokens": "many",
                 "messages": [{"role": "user", "content": "hi"}]}).encode(), "body.max_tokens"),
])
def test_a_malformed_body_is_a_400_naming_the_field(strict, body, where):
    response = HTTP.post(f"{strict.urls[0]}/v1/chat/completions", content=body,
                          headers={"Content-Type": "application/json"}, timeout=30)
    assert where in refused(response, kind="Bad Request")


def test_max_tokens_under_one_is_refused_as_vllms_sampling_params_do(strict):
    response = post(strict.urls[0], audio_query(wav_uri(1), max_tokens=0))
    assert refused(response) == "max_tokens must be at least 1, got 0. (parameter=max_tokens, " \
        "value=0)"
    assert response.json()["error"]["param"] == "max_tokens"


def test_an_unknown_content_part_type_is_a_400(strict):
    body = audio_query(wav_uri(1))
    body["messages"][1]["content"].append({"type": "audio", "audio": "out.wav"})
    assert refused(post(strict.urls[0], body)) == "Unknown part type: audio"


def test_more_audio_items_than_the_limit_is_a_400(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_audios=2)
    assert post(sim.urls[0], audio_query(wav_uri(1), wav_uri(1))).status_code == 200
    response = post(sim.urls[0], audio_query(wav_uri(1), wav_uri(1), wav_uri(1)))
    assert refused(response) == "At most 2 audio(s) may be provided in one prompt. " \
        "(parameter=audio)"
    assert response.json()["error"]["param"] == "audio"


def test_the_default_audio_limit_is_the_launch_scripts(strict):
    response = post(strict.urls[0], audio_query(*[wav_uri(0.1)] * 9))
    assert refused(response) == "At most 8 audio(s) may be provided in one prompt. " \
        "(parameter=audio)"


def test_audio_longer_than_the_encoder_cache_is_refused_with_vllms_words(
        thread_simulator_factory):
    # 1,261 s at 1 kHz: just over the 16384 tokens / 13 per second the launch script's
    # default --max-num-batched-tokens takes, and a small upload. With the script's default
    # decode limit (600 s) that length is refused before; a server allowing 2,000 s gets here.
    sim = thread_simulator_factory(latency_ms=1, max_audio_decode_seconds=2000)
    too_long = wav_uri(1261, sample_rate=1000)
    assert post(sim.urls[0], audio_query(wav_uri(1260, sample_rate=1000))).status_code == 200
    assert refused(post(sim.urls[0], audio_query(too_long))) == (
        "The decoder prompt contains a(n) audio item with length 16393, which exceeds the "
        "pre-allocated encoder cache size 16384. Please reduce the input size or increase the "
        "encoder cache size by setting --limit-mm-per-prompt at startup.")


def test_max_audio_seconds_sets_the_encoder_cache(thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, max_audio_seconds=2)
    assert post(sim.urls[0], audio_query(wav_uri(2))).status_code == 200
    message = refused(post(sim.urls[0], audio_query(wav_uri(1), wav_uri(3))))
    assert "audio item with length 39, which exceeds the pre-allocated encoder cache size 26" \
        in message


def test_audio_of_ten_milliseconds_or_less_is_refused_naming_the_part(strict):
    # vLLM 0.33 refuses 160 samples at 16 kHz (exactly 10 ms) and takes 481 at 48 kHz (10.02 ms:
    # 161 once resampled, rounded up); 441 at 44.1 kHz is 10 ms again.
    assert post(strict.urls[0], audio_query(wav_uri(481 / 48000, 48000))).status_code == 200
    for seconds, rate in ((0.01, 16000), (441 / 44100, 44100), (0.005, 16000)):
        message = refused(post(strict.urls[0], audio_query(wav_uri(1), wav_uri(seconds, rate))))
        assert message == ("Failed to apply Qwen3OmniMoeProcessor: the audio of "
                           f"messages[1].content[1] is {1000 * seconds:.1f} ms long; audio of "
                           "10 ms or less is refused.")


def test_unreadable_audio_is_vllms_500_when_asked_and_passed_otherwise(thread_simulator_factory,
                                                                       strict):
    # vLLM 0.33 answers audio it cannot open with a 500 InternalServerError (make vllm-check)
    message = refused(post(strict.urls[0], audio_query("data:audio/wav;base64,QUJD")),
                      500, "InternalServerError")
    assert message == ("Failed to load the audio of messages[1].content[0]: not a readable "
                       "sound file (Format not recognised.)")
    lenient = thread_simulator_factory(latency_ms=1)
    assert post(lenient.urls[0], audio_query("data:audio/wav;base64,QUJD")).status_code == 200


def test_refused_requests_take_no_slot_and_are_counted(strict):
    for body in (audio_query(wav_uri(1), model="x"), audio_query(wav_uri(0.001))):
        assert post(strict.urls[0], body).status_code in (400, 404)
    stats = strict.stats()[0]
    assert (stats["refused"], stats["completions"], stats["peak_in_progress"]) == (2, 0, 0)


def test_max_tokens_cuts_the_reply_with_finish_reason_length(strict):
    whole = post(strict.urls[0], audio_query(wav_uri(2))).json()
    assert whole["choices"][0]["finish_reason"] == "stop"
    content = whole["choices"][0]["message"]["content"]
    assert whole["usage"]["completion_tokens"] == -(-len(content) // 4) > 3
    cut = post(strict.urls[0], audio_query(wav_uri(2), max_tokens=3)).json()
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["choices"][0]["message"]["content"] == content[:12]
    assert cut["usage"]["completion_tokens"] == 3
    usage = cut["usage"]
    # 2 s of audio are 26 tokens of the prompt, besides its text
    assert usage["prompt_tokens"] > 26 and usage["total_tokens"] == usage["prompt_tokens"] + 3
    preferred = post(strict.urls[0], audio_query(wav_uri(2), max_tokens=3,
                                                 max_completion_tokens=1000)).json()
    assert preferred["choices"][0]["finish_reason"] == "stop"  # as vLLM, it wins


@pytest.mark.slow
def test_an_api_key_guards_every_path_but_the_health_probes(thread_simulator_factory):
    """As the launch script's guard (mmae_judge_guard.KeyEverywhere) over vLLM: the key on
    every path but GET or HEAD /health and /ping; /invocations runs chat completions."""
    sim = thread_simulator_factory(latency_ms=1, api_key="s3cret")
    url = sim.urls[0]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        for path in ("/v1/models", "/metrics", "/no/such/path"):
            response = HTTP.get(f"{url}{path}", headers=headers)
            assert (response.status_code, response.json()) == (401, {"error": "Unauthorized"})
            assert response.headers["WWW-Authenticate"] == "Bearer"
    for path in ("/v1/chat/completions", "/invocations", "/health"):
        response = HTTP.post(f"{url}{path}", json=query(), timeout=30)
        assert (response.status_code, response.json()) == (401, {"error": "Unauthorized"})
    for path in ("/health", "/ping", "/simulator/stats"):
        assert HTTP.get(f"{url}{path}").status_code == 200
    assert HTTP.head(f"{url}/ping").status_code == 200
    good = {"Authorization": "Bearer s3cret"}
    assert HTTP.get(f"{url}/v1/models", headers=good).status_code == 200
    assert HTTP.get(f"{url}/metrics", headers=good).status_code == 200
    for path in ("/v1/chat/completions", "/invocations"):
        answer = HTTP.post(f"{url}{path}", json=query(), headers=good, timeout=30)
        assert answer.json()["object"] == "chat.completion"


def test_the_api_key_comes_from_vllm_api_key_unless_the_flag_gives_one(simulator_factory,
                                                                       monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", "from-env")
    from_env, flagged = simulator_factory(), simulator_factory("--api-key", "from-flag")

    def status(sim, key):
        return HTTP.get(f"{sim.urls[0]}/v1/models",
                         headers={"Authorization": f"Bearer {key}"}).status_code

    assert (status(from_env, "from-env"), status(from_env, "other")) == (200, 401)
    assert (status(flagged, "from-flag"), status(flagged, "from-env")) == (200, 401)


def test_an_idle_keep_alive_connection_is_closed_after_five_seconds(simulator_factory):
    port = simulator_factory("--latency-ms", "1", "--refuse-unreadable-audio").ports[0]
    request = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    # Closed by the server's 5 s idle timer: not before 5 s from the last request sent (a
    # loaded machine only makes it later), and long before aiohttp's own default of 3,630 s:
    # the socket waits up to 60 s, which no load stretches a 5 s timer to.
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        for pause in (0, 2):  # reused after 2 s idle: still open
            time.sleep(pause)
            sent = time.monotonic()
            conn.sendall(request)
            assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        assert conn.recv(4096) == b""  # the server closes it
        assert time.monotonic() - sent >= 4.9


def test_die_after_answers_an_empty_500_then_stops_listening(simulator_factory):
    sim = simulator_factory("--latency-ms", "1", "--die-after", "2")
    first, second = sim.urls
    assert [post(first, query()).status_code for _ in range(2)] == [200, 200]
    dead = post(first, query())
    assert (dead.status_code, dead.content) == (500, b"")
    with pytest.raises(httpx.ConnectError):
        _wait_refused(first)
    assert sim.process.poll() is None  # the other port still serves
    assert post(second, query()).status_code == 200
    assert HTTP.get(f"{second}/simulator/stats").json()["completions"] == 1
    post(second, query())
    assert post(second, query()).status_code == 500
    assert sim.process.wait(timeout=10) != 0
    assert "every port's engine died" in sim.process.stdout.read()


def test_requests_in_flight_when_the_engine_dies_get_500s_too(simulator_factory):
    # A latency no test waits for: the request is still in its slot when the engine dies,
    # however slowly the machine runs.
    sim = simulator_factory("--latency-ms", "600000", "--die-after", "1")
    url = sim.urls[0]

    async def both():
        async with httpx.AsyncClient(timeout=30) as client:
            in_flight = asyncio.create_task(client.post(f"{url}/v1/chat/completions",
                                                        json=query()))
            while (await client.get(f"{url}/simulator/stats")).json()["in_progress"] < 1:
                await asyncio.sleep(0.02)  # until the server holds it in a slot
            killer = await client.post(f"{url}/v1/chat/completions", json=query())
            return await in_flight, killer

    in_flight, killer = asyncio.run(both())
    assert (killer.status_code, killer.content) == (500, b"")
    assert (in_flight.status_code, in_flight.content) == (500, b"")


def _wait_refused(url, seconds=5):
    """GET /health until the port refuses connections (httpx.ConnectError), or fail. A
    connection accepted as the port closes may be dropped or left unanswered (aiohttp closes
    the listening socket, then waits up to its shutdown timeout for the connections it holds):
    that port is closing, not yet refusing, so it is asked again."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            HTTP.get(f"{url}/health", timeout=1)
        except (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url} still answers {seconds} s after its engine died")


def test_the_fleet_client_takes_out_a_404_and_records_a_400_as_vllms_refusal(strict):
    async def ask(model, messages):
        async with JudgeFleet(strict.urls, model=model, max_attempts=1, down_wait=0.2,
                              probe_interval=0.05) as fleet:
            try:
                return await fleet.ask(messages, json.loads), fleet.misconfigured()
            except FleetUnavailable as exc:
                return exc, fleet.misconfigured()

    body = audio_query(wav_uri(1))
    unknown, wrong = asyncio.run(ask("Qwen2-Audio", body["messages"]))
    # a model the server does not serve is no answer: every endpoint is taken out
    assert isinstance(unknown, FleetUnavailable)
    assert set(wrong) == set(strict.urls)
    many = audio_query(*[wav_uri(0.1)] * 9)
    too_many, wrong = asyncio.run(ask(MODEL, many["messages"]))
    assert not too_many.ok and too_many.error_kind == REFUSED and wrong == {}
    assert "At most 8 audio(s) may be provided in one prompt." in too_many.error
    assert json.loads(too_many.raw)["error"]["message"] == \
        "At most 8 audio(s) may be provided in one prompt. (parameter=audio)"
    assert strict.completions() == 0


@pytest.mark.slow
def test_a_slot_is_held_for_the_latency_however_long_the_reply_takes(
        thread_simulator_factory):
    """The reply is made inside the latency: a request's time in its slot is the latency asked
    (a real server's is its time in the engine), not the latency plus this process's work."""
    took = []

    def slow_reply(body, config):
        started = time.time()
        time.sleep(0.6)  # a reply that takes the event loop 600 ms of a 1 s latency
        took.append(time.time() - started)
        return json.dumps({"reason": "r", "choice": "A"}), None

    sim = thread_simulator_factory(latency_ms=1000, slots=1, replies=(slow_reply,))
    assert post(sim.urls[0], query("q")).status_code == 200
    # The server's own clock, not the client's (which a loaded machine stretches): the slot
    # is held for the latency, where a reply made after it would hold it for the latency and
    # the reply's time too (0.6 s, or more as this process measured it on a loaded machine):
    # the bound halfway between leaves the event loop half the reply's time to be late by.
    busy = HTTP.get(f"{sim.urls[0]}/simulator/stats").json()["busy_slot_seconds"]
    assert 1.0 <= busy < 1.0 + took[0] / 2
