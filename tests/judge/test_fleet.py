"""The fleet client against small in-process OpenAI-compatible servers over loopback HTTP."""

import asyncio
import json
import ssl
import time
import tracemalloc

import pytest
from aiohttp import web

from judge.body import JsonBody
from judge.errors import FleetUnavailable
from judge.fleet import JudgeFleet, full_sampling, ssl_context
from judge.simulator import DEFAULT_MODEL as MODEL
from judge.simulator import SimulatorConfig
from scoring.kinds.mmae import rules as mmae
from scoring.kinds.mmae.simulated import verdict
from tests.conftest import free_ports

GOOD = json.dumps({"reason": "r", "choice": "A"})


def completion(content):
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


class FakeJudge:
    """An endpoint whose behaviour a test sets: `reply(n)` gives (status, content, delay)."""

    def __init__(self, reply=lambda n: (200, GOOD, 0.0), models_ok=lambda: True):
        self.reply = reply
        self.models_ok = models_ok
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.probes = 0
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.runner = None

    async def _completions(self, request):
        await request.json()
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            status, content, delay = self.reply(self.calls)
            await asyncio.sleep(delay)
        finally:
            self.in_flight -= 1
        if status != 200:
            return web.Response(status=status, text="boom")
        return web.json_response(completion(content))

    async def _models(self, request):
        self.probes += 1
        return web.json_response({"data": [{"id": "judge", "object": "model"}]},
                                 status=200 if self.models_ok() else 503)

    async def start(self):
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self):
        await self.runner.cleanup()


def parse(text):
    value = json.loads(text)
    if value.get("choice") not in ("A", "B"):
        raise ValueError("no letter")
    return value["choice"]


def fleet(*urls, **options):
    options = {"model": "judge", "concurrency": 4, "timeout": 5, "max_attempts": 3,
               "backoff_base": 0.01, "probe_interval": 0.05, "down_wait": 5, **options}
    return JudgeFleet(list(urls), **options)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_each_endpoint_takes_at_most_its_cap_in_flight():
    async def main():
        judge = await FakeJudge(lambda n: (200, GOOD, 0.05)).start()
        async with fleet(judge.url, concurrency=3) as f:
            answers = await asyncio.gather(*(f.ask([], parse) for _ in range(12)))
        await judge.stop()
        return judge, answers

    judge, answers = run(main())
    assert judge.max_in_flight == 3
    assert [a.value for a in answers] == ["A"] * 12


def test_work_spreads_to_the_least_loaded_endpoint():
    async def main():
        a = await FakeJudge(lambda n: (200, GOOD, 0.1)).start()
        b = await FakeJudge(lambda n: (200, GOOD, 0.1)).start()
        async with fleet(a.url, b.url, concurrency=4) as f:
            await asyncio.gather(*(f.ask([], parse) for _ in range(8)))
        await a.stop()
        await b.stop()
        return a, b

    a, b = run(main())
    assert (a.calls, b.calls) == (4, 4)
    assert (a.max_in_flight, b.max_in_flight) == (4, 4)


def test_a_5xx_is_retried_on_another_endpoint_and_recorded():
    async def main():
        bad = await FakeJudge(lambda n: (500, "", 0.0)).start()
        good = await FakeJudge().start()
        async with fleet(bad.url, good.url) as f:
            answer = await f.ask([], parse)
        await bad.stop()
        await good.stop()
        return bad, good, answer

    bad, good, answer = run(main())
    assert answer.ok and answer.value == "A"
    assert (answer.attempts, answer.endpoint) == (2, good.url)
    assert answer.latency_ms is not None and answer.latency_ms >= 0
    assert (bad.calls, good.calls) == (1, 1)


@pytest.mark.parametrize(("options", "calls"), [
    # The same unreadable reply when asked again: the judge's own (a wrong vote), whatever
    # the retries left or the temperature.
    ({}, 2), ({"unparseable_retries": 5}, 2), ({"sampling": {"temperature": 0.7}}, 2),
])
def test_an_unparseable_reply_the_judge_repeats_is_its_own_failed_answer(options, calls):
    async def main():
        judge = await FakeJudge(lambda n: (200, "I think it is A", 0.0)).start()
        async with fleet(judge.url, max_attempts=3, **options) as f:
            answer = await f.ask([], parse)
        await judge.stop()
        return judge, answer

    judge, answer = run(main())
    assert judge.calls == calls
    assert answer.value is None and answer.attempts == calls
    assert answer.error.startswith(
        f"no valid answer after {calls} attempt(s); last: unparseable reply")
    assert answer.error.endswith("(the same reply when asked again)")
    assert answer.error_kind == "unparseable reply" and not answer.lost
    assert answer.raw == "I think it is A"


@pytest.mark.parametrize(("options", "calls"), [
    # Greedy: asked again JUDGE_UNPARSEABLE_RETRIES times; sampled: every attempt may be used.
    ({}, 2), ({"unparseable_retries": 0}, 1), ({"unparseable_retries": 5}, 3),
    ({"sampling": {"temperature": 0.7}}, 3),
])
def test_unparseable_replies_that_change_are_lost_not_answers(options, calls):
    async def main():
        judge = await FakeJudge(lambda n: (200, f"I think it is A ({n})", 0.0)).start()
        async with fleet(judge.url, max_attempts=3, **options) as f:
            answer = await f.ask([], parse)
        await judge.stop()
        return judge, answer

    judge, answer = run(main())
    assert judge.calls == calls and answer.attempts == calls
    assert answer.value is None and answer.error_kind == "unsteady reply" and answer.lost


def test_a_bad_request_is_not_retried():
    async def main():
        judge = await FakeJudge(lambda n: (400, "", 0.0)).start()
        async with fleet(judge.url) as f:
            answer = await f.ask([], parse)
        await judge.stop()
        return judge, answer

    judge, answer = run(main())
    assert judge.calls == 1 and answer.attempts == 1
    assert (answer.error, answer.error_kind) == ("the judge refused the query (HTTP 400): boom",
                                                 "refused request")


@pytest.mark.slow
def test_a_timeout_is_retried():
    async def main():
        judge = await FakeJudge(lambda n: (200, GOOD, 1.0 if n == 1 else 0.0)).start()
        async with fleet(judge.url, timeout=0.3) as f:
            answer = await f.ask([], parse)
        await judge.stop()
        return answer

    answer = run(main())
    assert answer.ok and answer.attempts == 2 and answer.error_kind == ""


@pytest.mark.slow
@pytest.mark.parametrize("reply, kind", [((500, "", 0.0), "server error"),
                                         ((429, "", 0.0), "busy"),
                                         ((200, GOOD, 1.0), "timeout")])
def test_every_failure_carries_its_kind(reply, kind):
    async def main():
        judge = await FakeJudge(lambda n: reply).start()
        async with fleet(judge.url, timeout=0.3, max_attempts=1) as f:
            answer = await f.ask([], parse)
        await judge.stop()
        return answer

    answer = run(main())
    assert not answer.ok and answer.error_kind == kind


def test_an_endpoint_that_refuses_connections_is_a_connection_error():
    async def main():
        async with fleet("http://127.0.0.1:9", max_attempts=1) as f:
            return await f.ask([], parse)

    assert run(main()).error_kind == "connection error"


def test_a_failing_endpoint_is_taken_out_probed_and_put_back():
    state = {"models_ok": False}

    async def main():
        flaky = await FakeJudge(lambda n: (500, "", 0.0),
                                models_ok=lambda: state["models_ok"]).start()
        good = await FakeJudge().start()
        async with fleet(flaky.url, good.url, concurrency=1, failure_threshold=3,
                         max_attempts=5) as f:
            for _ in range(6):
                await f.ask([], parse)
            flaky_endpoint = f.endpoints[0]
            out = (flaky_endpoint.healthy, flaky.calls)
            for _ in range(6):  # while it is out, nothing is sent to it
                assert (await f.ask([], parse)).endpoint == good.url
            await asyncio.sleep(0.3)  # probes keep failing meanwhile
            assert not flaky_endpoint.healthy
            calls_while_out = flaky.calls
            flaky.reply = lambda n: (200, GOOD, 0.0)
            state["models_ok"] = True
            deadline = time.monotonic() + 5
            while not flaky_endpoint.healthy and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            back = flaky_endpoint.healthy
        await flaky.stop()
        await good.stop()
        return out, calls_while_out, back, flaky.probes

    (healthy, calls), calls_while_out, back, probes = run(main())
    assert healthy is False and calls == 3
    assert calls_while_out == 3
    assert back is True and probes >= 2


@pytest.mark.slow
def test_when_every_endpoint_is_down_work_waits_for_one_to_come_back():
    port = free_ports(1)[0]

    async def main():
        judge = FakeJudge()
        judge.port, judge.url = port, f"http://127.0.0.1:{port}"
        async with fleet(judge.url, failure_threshold=1, max_attempts=10, down_wait=20) as f:
            ask = asyncio.create_task(f.ask([], parse))
            await asyncio.sleep(1.0)
            assert not ask.done() and not f.endpoints[0].healthy
            await judge.start()
            answer = await ask
        await judge.stop()
        return answer

    answer = run(main())
    assert answer.ok and answer.value == "A"


@pytest.mark.slow
def test_the_wait_is_bounded_and_names_every_endpoint(caplog):
    a, b = (f"http://127.0.0.1:{p}" for p in free_ports(2))

    async def main():
        async with fleet(a, b, failure_threshold=1, max_attempts=10, down_wait=1.0) as f:
            started = time.monotonic()
            with pytest.raises(FleetUnavailable) as info:
                await f.ask([], parse)
            return time.monotonic() - started, str(info.value)

    elapsed, message = run(main())
    assert 0.9 < elapsed < 10
    assert message.startswith("every judge endpoint has been down for 1 s: ")
    assert f"{a}: " in message and f"{b}: " in message and "ConnectError" in message
    assert "all 2 judge endpoints are down" in caplog.text


def test_an_excluded_endpoint_gets_no_new_queries_until_let_back_in():
    async def main():
        a = await FakeJudge().start()
        b = await FakeJudge().start()
        async with fleet(a.url, b.url) as f:
            await f.exclude({a.url})
            await asyncio.gather(*(f.ask([], parse) for _ in range(6)))
            calls_while_out = (a.calls, b.calls)
            await f.exclude(set())
            await asyncio.gather(*(f.ask([], parse) for _ in range(6)))
        await a.stop()
        await b.stop()
        return calls_while_out, (a.calls, b.calls)

    while_out, after = run(main())
    assert while_out == (0, 6)
    assert after[0] > 0


def test_with_every_endpoint_excluded_queries_wait_then_raise_naming_them():
    async def main():
        a = await FakeJudge().start()
        try:
            async with fleet(a.url, down_wait=0.3) as f:
                await f.exclude({a.url})
                started = time.monotonic()
                with pytest.raises(FleetUnavailable, match="taken out"):
                    await f.ask([], parse)
                return a.calls, time.monotonic() - started
        finally:
            await a.stop()

    calls, waited = run(main())
    assert calls == 0
    assert waited >= 0.3


def test_queries_waiting_on_excluded_endpoints_go_out_once_one_is_let_back_in():
    async def main():
        a = await FakeJudge().start()
        try:
            async with fleet(a.url, down_wait=10) as f:
                await f.exclude({a.url})
                pending = asyncio.create_task(f.ask([], parse))
                await asyncio.sleep(0.2)
                assert not pending.done()
                await f.exclude(set())
                return await pending
        finally:
            await a.stop()

    assert run(main()).value == "A"


# --- request bodies: streamed, and admitted by bytes in flight -------------------------


def audio_query(uri, question="Is a dog audible?"):
    return [{"role": "user", "content": [
        {"type": "text", "text": "<audio output>: "},
        {"type": "audio_url", "audio_url": {"url": uri}},
        {"type": "text", "text": mmae.query_text(question, ("Yes", "No"))},
    ]}]


def uri_of(megabytes: float) -> str:
    return "data:audio/wav;base64," + "QUJD" * int(megabytes * 2**20 / 4)


@pytest.mark.parametrize("budget_mib, at_once", [
    (256, 4),  # the default: the four bodies fit
    (100, 1),  # one 60 MB body at a time
    (10, 1),  # a body larger than the whole budget goes alone, and nothing deadlocks
])
def test_a_shared_60_mb_data_uri_is_streamed_within_the_byte_budget(simulator_factory,
                                                                    monkeypatch,
                                                                    budget_mib, at_once):
    sim = simulator_factory("--latency-ms", "300", "--slots", "8", ports=free_ports(1))
    uri = uri_of(60)
    questions = [f"Question {i}?" for i in range(4)]
    # Bodies on their way at once, counted where they are sent: the four that fit the budget
    # all set out before any reply can come back, however slowly a loaded machine streams
    # them, whereas the simulator counts a request only once its body has arrived.
    sending = {"now": 0, "most": 0}
    post = JudgeFleet._post

    async def counted_post(self, slot, body):
        sending["now"] += 1
        sending["most"] = max(sending["most"], sending["now"])
        try:
            return await post(self, slot, body)
        finally:
            sending["now"] -= 1

    monkeypatch.setattr(JudgeFleet, "_post", counted_post)

    async def main():
        async with JudgeFleet(sim.urls, model=MODEL, concurrency=4, timeout=60,
                              max_inflight_bytes=budget_mib * 2**20) as f:
            return await asyncio.gather(*(
                f.ask(audio_query(uri, q), lambda text: mmae.parse_reply(text, 2)[0])
                for q in questions))

    tracemalloc.start()
    try:
        answers = run(main())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # json.dumps and .encode() made two 60 MB copies per request: 480 MB for four
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB traced"
    assert sending["most"] == at_once
    assert 1 <= sim.stats()[0]["peak_in_progress"] <= at_once  # never more than were sent
    # the simulator hashed the very audio sent: its verdicts are those of these queries
    config = SimulatorConfig()
    assert [a.value for a in answers] == [
        verdict({"question": q, "choices": ["Yes", "No"], "audio": {"output": uri}}, config)[0]
        for q in questions]


def test_a_query_whose_body_would_go_over_the_byte_budget_waits():
    uri = uri_of(0.3)
    size = JsonBody({"model": "judge", "messages": audio_query(uri),
                     **full_sampling(None)}).length

    async def main():
        judge = await FakeJudge(lambda n: (200, GOOD, 0.1)).start()
        async with fleet(judge.url, concurrency=8, max_inflight_bytes=2 * size + 100) as f:
            answers = await asyncio.gather(*(f.ask(audio_query(uri), parse) for _ in range(8)))
        await judge.stop()
        return judge, answers

    judge, answers = run(main())
    assert [a.value for a in answers] == ["A"] * 8
    assert judge.max_in_flight == 2


def test_a_body_larger_than_the_whole_budget_goes_alone():
    async def main():
        judge = await FakeJudge(lambda n: (200, GOOD, 0.05)).start()
        async with fleet(judge.url, concurrency=4, max_inflight_bytes=1000) as f:
            answers = await asyncio.gather(*(f.ask(audio_query(uri_of(0.3)), parse)
                                             for _ in range(4)))
        await judge.stop()
        return judge, answers

    judge, answers = run(main())
    assert [a.value for a in answers] == ["A"] * 4
    assert judge.max_in_flight == 1


def test_a_byte_budget_below_one_is_refused():
    with pytest.raises(ValueError, match="max_inflight_bytes must be at least 1, got 0"):
        fleet("http://127.0.0.1:1", max_inflight_bytes=0)


def test_a_plain_http_fleet_loads_no_ca_store_yet_never_turns_verification_off():
    bare, trusting = ssl_context(False), ssl_context(True)
    assert bare.cert_store_stats()["x509_ca"] == 0  # nothing loaded, nothing trusted
    assert (bare.verify_mode, bare.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert (trusting.verify_mode, trusting.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert ssl_context(False) is bare  # built once per process


VLLM_500 = json.dumps({"error": {"message": "Invalid or corrupted audio data.",
                                 "type": "InternalServerError", "param": None, "code": 500}})


class ContentJudge(FakeJudge):
    """A FakeJudge whose 500s carry vLLM's error object (a request it could not process)."""

    async def _completions(self, request):
        await request.json()
        self.calls += 1
        status, content, _ = self.reply(self.calls)
        if status == 500:
            return web.Response(status=500, text=VLLM_500, content_type="application/json")
        return web.json_response(completion(content))


def test_a_500_for_the_content_on_two_endpoints_is_refused_and_takes_none_out():
    async def main():
        a = await ContentJudge(lambda n: (500, "", 0.0)).start()
        b = await ContentJudge(lambda n: (500, "", 0.0)).start()
        async with fleet(a.url, b.url, failure_threshold=1) as f:
            answer = await f.ask([], parse)
            healthy = [e.healthy for e in f.endpoints]
            failed = [e.failed for e in f.endpoints]
        await a.stop()
        await b.stop()
        return a, b, answer, healthy, failed

    a, b, answer, healthy, failed = run(main())
    assert answer.error_kind == "refused request" and not answer.lost
    assert "could not process the query on two endpoints" in answer.error
    assert "Invalid or corrupted audio data." in answer.error
    assert (a.calls, b.calls, answer.attempts) == (1, 1, 2)
    assert healthy == [True, True] and failed == [0, 0]


def test_a_500_an_other_endpoint_answers_counts_against_its_endpoint_after_all():
    async def main():
        sick = await ContentJudge(lambda n: (500, "", 0.0)).start()
        good = await ContentJudge().start()
        async with fleet(sick.url, good.url, failure_threshold=1) as f:
            answer = await f.ask([], parse)
            health = {e.base_url: e.healthy for e in f.endpoints}
        await sick.stop()
        await good.stop()
        return sick, good, answer, health

    sick, good, answer, health = run(main())
    assert answer.ok and answer.value == "A" and answer.endpoint == good.url
    assert health == {sick.url: False, good.url: True}  # its 500 was its own


def test_a_500_without_vllms_error_object_is_the_servers_at_once():
    async def main():
        bad = await FakeJudge(lambda n: (500, "", 0.0)).start()  # "boom", no error object
        other = await FakeJudge(lambda n: (500, "", 0.0)).start()
        async with fleet(bad.url, other.url, max_attempts=2, failure_threshold=1,
                         down_wait=0.2) as f:
            answer = await f.ask([], parse)
        await bad.stop()
        await other.stop()
        return answer

    answer = run(main())
    assert answer.lost and answer.error_kind == "server error"


def test_500s_that_differ_are_the_servers_not_the_contents():
    async def main():
        a = await ContentJudge(lambda n: (500, "", 0.0)).start()
        b = await FakeJudge(lambda n: (500, "", 0.0)).start()  # another failure, not vLLM's
        async with fleet(a.url, b.url, max_attempts=2, failure_threshold=5) as f:
            answer = await f.ask([], parse)
            failed = {e.base_url: e.failed for e in f.endpoints}
        await a.stop()
        await b.stop()
        return a, b, answer, failed

    a, b, answer, failed = run(main())
    assert answer.lost and answer.error_kind == "server error"
    assert failed == {a.url: 1, b.url: 1}
