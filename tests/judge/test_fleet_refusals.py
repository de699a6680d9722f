"""What a real judge refuses never becomes an answer: the fleet client against small
OpenAI-compatible servers that answer as vLLM does when it is misconfigured or refuses a
query's content."""

import asyncio
import json

import pytest
from aiohttp import web

from judge.errors import FleetUnavailable
from judge.fleet import KEEPALIVE_EXPIRY, REFUSED, SAMPLING_DEFAULTS, TRUNCATED, JudgeFleet
from judge.health import error_message
from tests.conftest import free_ports

GOOD = json.dumps({"reason": "r", "choice": "A"})


def vllm_error(message, status, kind="BadRequestError"):
    return web.json_response({"error": {"message": message, "type": kind, "param": None,
                                        "code": status}}, status=status)


class Server:
    """An endpoint serving `models`, answering each completion with `reply(body)`: a web
    response, or the content of a completion (with `finish` as its finish_reason)."""

    def __init__(self, models=("judge",), reply=None, finish="stop", key=None):
        self.models = list(models)
        self.reply = reply or (lambda body: GOOD)
        self.finish = finish
        self.key = key
        self.bodies = []
        self.model_probes = 0
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"

    def _unauthorised(self, request):
        if self.key and request.headers.get("Authorization") != f"Bearer {self.key}":
            return web.json_response({"error": "Unauthorized"}, status=401)
        return None

    async def _completions(self, request):
        if (refusal := self._unauthorised(request)) is not None:
            return refusal
        body = await request.json()
        self.bodies.append(body)
        if body["model"] not in self.models:
            return vllm_error(f"The model `{body['model']}` does not exist.", 404,
                              "NotFoundError")
        reply = self.reply(body)
        if isinstance(reply, web.StreamResponse):
            return reply
        return web.json_response({"choices": [{"index": 0, "finish_reason": self.finish,
                                               "message": {"role": "assistant",
                                                           "content": reply}}]})

    async def _models(self, request):
        self.model_probes += 1
        if (refusal := self._unauthorised(request)) is not None:
            return refusal
        return web.json_response({"object": "list",
                                  "data": [{"id": m, "object": "model"} for m in self.models]})

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
    options = {"model": "judge", "concurrency": 2, "timeout": 5, "max_attempts": 3,
               "backoff_base": 0.01, "probe_interval": 0.05, "probe_interval_max": 0.1,
               "down_wait": 1, **options}
    return JudgeFleet(list(urls), **options)


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_refused_query_ends_at_once_with_vllms_own_message():
    message = ("The decoder prompt (length 9000) exceeds the pre-allocated encoder cache "
               "size 2048.")

    async def main():
        server = await Server(reply=lambda body: vllm_error(message, 400)).start()
        async with fleet(server.url) as f:
            answer = await f.ask([], parse)
        await server.stop()
        return server, answer

    server, answer = run(main())
    assert len(server.bodies) == 1 and answer.attempts == 1
    assert answer.error_kind == REFUSED and answer.value is None
    assert answer.error == f"the judge refused the query (HTTP 400): {message}"


@pytest.mark.parametrize("case", ["wrong model", "missing key"])
def test_a_misconfigured_endpoint_is_taken_out_without_spending_an_attempt(case):
    """404 for a model the endpoint does not serve, 401 without its API key: the endpoint is
    taken out and the query is answered by the other one, with its attempts untouched."""
    reported = []

    async def main():
        wrong = Server(models=["other"]) if case == "wrong model" else Server(key="secret")
        wrong, right = await wrong.start(), await Server().start()
        async with fleet(wrong.url, right.url, on_misconfigured=lambda *a: reported.append(a)
                         ) as f:
            f.endpoints[1].in_flight = 1  # so that the first query goes to the wrong one
            first = await f.ask([], parse)
            f.endpoints[1].in_flight = 0
            later = await asyncio.gather(*(f.ask([], parse) for _ in range(4)))
            state = f.misconfigured()
        await wrong.stop()
        await right.stop()
        return wrong, right, first, later, state

    wrong, right, first, later, state = run(main())
    assert first.value == "A" and first.attempts == 1 and first.endpoint == right.url
    assert [a.endpoint for a in later] == [right.url] * 4
    assert len(wrong.bodies) == (1 if case == "wrong model" else 0)
    assert list(state) == [wrong.url]
    expected = "does not exist" if case == "wrong model" else "refuses our API key"
    assert expected in state[wrong.url]
    assert [url for url, _ in reported] == [wrong.url]


@pytest.mark.slow
def test_a_fleet_that_serves_another_model_never_answers_and_waits_then_gives_up():
    async def main():
        server = await Server(models=["Qwen2-Audio-7B-Instruct"]).start()
        async with fleet(server.url, down_wait=0.5) as f:
            with pytest.raises(FleetUnavailable) as raised:
                await f.ask([], parse)
        await server.stop()
        return server, str(raised.value)

    server, message = run(main())
    assert len(server.bodies) == 1  # the one query that found out
    assert "misconfigured: serves 'Qwen2-Audio-7B-Instruct', not 'judge'" in message


def test_check_finds_endpoints_that_do_not_serve_the_model_and_the_probe_brings_them_back():
    async def main():
        server = await Server(models=["other"]).start()
        good = await Server().start()
        async with fleet(server.url, good.url) as f:
            wrong = await f.check()
            assert not f.endpoints[0].healthy
            # the operator restarts the server with the right model
            server.models = ["judge"]
            for _ in range(100):
                if f.endpoints[0].healthy:
                    break
                await asyncio.sleep(0.05)
            after = (f.endpoints[0].healthy, f.misconfigured())
            # checked again only after max_age
            probes = server.model_probes
            await f.check(max_age=60)
            assert server.model_probes == probes
        await server.stop()
        await good.stop()
        return wrong, after

    wrong, after = run(main())
    assert list(wrong) and "serves 'other', not 'judge'" in next(iter(wrong.values()))
    assert after == (True, {})


def test_check_names_a_refused_api_key():
    async def main():
        server = await Server(key="secret").start()
        async with fleet(server.url) as f:
            wrong = await f.check()
        async with fleet(server.url, api_key="secret") as f:
            right = await f.check()
        await server.stop()
        return wrong, right

    wrong, right = run(main())
    assert "refuses our API key (HTTP 401" in wrong[next(iter(wrong))]
    assert right == {}


# The same cut reply when asked again: the judge's own, whatever the temperature.
@pytest.mark.parametrize(("temperature", "calls"), [(0.0, 2), (0.7, 2)])
def test_a_reply_cut_at_max_tokens_is_recorded_as_truncated(temperature, calls):
    async def main():
        server = await Server(reply=lambda body: '{"reason": "the first audio', finish="length"
                              ).start()
        async with fleet(server.url, sampling={"temperature": temperature}) as f:
            answer = await f.ask([], parse)
        await server.stop()
        return server, answer

    server, answer = run(main())
    assert len(server.bodies) == calls and answer.attempts == calls
    assert answer.error_kind == TRUNCATED and answer.value is None
    assert "cut at max_tokens=1024" in answer.error


def test_sampling_goes_out_in_full_so_no_model_default_can_change_a_verdict():
    async def main():
        server = await Server().start()
        async with fleet(server.url, sampling={"temperature": 0.0, "max_tokens": 256}) as f:
            await f.ask([{"role": "user", "content": "q"}], parse)
        await server.stop()
        return server.bodies[0]

    body = run(main())
    for name in SAMPLING_DEFAULTS:
        assert name in body
    assert body["max_tokens"] == 256 and body["top_k"] == -1 and body["top_p"] == 1.0


def test_connections_expire_before_vllms_keep_alive_does():
    async def main():
        server = await Server().start()
        async with fleet(server.url) as f:
            lanes = f.endpoints[0].lanes
            expiry = {lane._transport._pool._keepalive_expiry for lane in lanes}
        await server.stop()
        return expiry

    assert run(main()) == {KEEPALIVE_EXPIRY}
    assert KEEPALIVE_EXPIRY < 5  # vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE


@pytest.mark.parametrize(("body", "message"), [
    ('{"error": {"message": "At most 8 audio(s) may be provided in one prompt.", '
     '"type": "BadRequestError", "param": null, "code": 400}}',
     "At most 8 audio(s) may be provided in one prompt."),
    ('{"object": "error", "message": "old shape", "type": "BadRequestError"}', "old shape"),
    ('{"error": "Unauthorized"}', "Unauthorized"),
    ("", "(empty body)"),
    ("Internal Server Error", "Internal Server Error"),
])
def test_error_message_reads_vllms_words(body, message):
    assert error_message(body) == message

