"""Each audio once per endpoint: a part with vLLM's `uuid` goes with its data the first time
and by its uuid alone afterwards; the simulator keeps what vLLM's processor cache keeps
(bounded, least recently used out first) and answers a uuid it no longer holds with vLLM's
400 "Cache miss", which the fleet answers by sending the data again, with no attempt spent and
no fault of the endpoint."""

import asyncio

import pytest

from judge.fleet import JudgeFleet, audio_items, by_uuid
from judge.requests import Refusal, check_request
from judge.simulator import AudioCache, SimulatorConfig
from scoring.kinds.mmae import rules as mmae
from tests.httpclient import HTTP
from tests.judge.test_simulator import MODEL
from tests.judge.test_simulator_strict import refused, wav_uri


def audio_part(uri, uuid):
    return {"type": "audio_url", "audio_url": {"url": uri}, "uuid": uuid}


def query(*parts, question="Is a dog audible?"):
    return [{"role": "system", "content": mmae.SYSTEM_PROMPT},
            {"role": "user", "content": [*parts, {"type": "text", "text": mmae.query_text(
                question, ("Yes", "No"))}]}]


def body(messages):
    return {"model": MODEL, "messages": messages, "temperature": 0.0, "max_tokens": 64}


def parse(text):
    return mmae.parse_reply(text, 2)[0]


# --- what vLLM 0.33 refuses, as the simulator checks it --------------------------------------

def test_an_audio_given_by_its_uuid_is_taken_from_the_cache():
    uri = wav_uri(1)
    messages = query({"type": "audio_url", "audio_url": None, "uuid": "a"})
    checked = check_request(body(messages), SimulatorConfig(), {"a": uri})
    assert checked.audio == [("a", uri, False)]
    assert checked.audio_tokens == [13]  # measured from the cached audio


def test_a_uuid_the_cache_does_not_hold_is_vllms_cache_miss():
    messages = query(audio_part(wav_uri(1), "a"),
                     {"type": "input_audio", "input_audio": None, "uuid": "b"})
    with pytest.raises(Refusal) as caught:
        check_request(body(messages), SimulatorConfig(), {})
    assert (caught.value.status, caught.value.message) == (
        400, "Cache miss for audio at index 1 but data is not provided.")


@pytest.mark.parametrize("parts, message", [
    ([{"type": "audio_url", "audio_url": None}],
     "multi_modal_data['audio'][0] is empty but multi_modal_uuids['audio'] is missing."),
    ([{"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,AAAA"}, "uuid": "x"},
      {"type": "audio_url", "audio_url": None}],
     "multi_modal_data['audio'][1] is empty but multi_modal_uuids['audio'][1] is missing."),
])
def test_an_audio_with_neither_data_nor_uuid_is_refused_as_vllm_does(parts, message):
    with pytest.raises(Refusal) as caught:
        check_request(body(query(*parts)), SimulatorConfig(), {})
    assert caught.value.message == message


def test_the_cache_holds_at_most_its_bytes_least_recently_used_out_first():
    cache = AudioCache(max_bytes=10)
    cache.put("a", "aaaa")
    cache.put("b", "bbbb")
    assert cache.get("a") == "aaaa"  # a is now the most recently used
    cache.put("c", "cccc")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("aaaa", None, "cccc")
    cache.put("big", "x" * 11)  # larger than the whole cache: not kept, nothing evicted
    assert cache.get("big") is None and cache.size == 8


def test_the_simulator_answers_a_uuid_it_holds_and_refuses_one_it_does_not(
        thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1, audio_cache_mb=1)
    url = f"{sim.urls[0]}/v1/chat/completions"
    uri = wav_uri(1)
    alone = query({"type": "audio_url", "audio_url": None, "uuid": "sha256:one"})
    missed = HTTP.post(url, json=body(alone))
    assert refused(missed) == "Cache miss for audio at index 0 but data is not provided."
    first = HTTP.post(url, json=body(query(audio_part(uri, "sha256:one"))))
    again = HTTP.post(url, json=body(alone))
    assert first.status_code == again.status_code == 200, again.text
    # The same verdict as with the data: the reply reads the cached audio.
    assert first.json()["choices"][0]["message"]["content"] \
        == again.json()["choices"][0]["message"]["content"]
    assert first.json()["usage"]["prompt_tokens"] == again.json()["usage"]["prompt_tokens"]
    stats = HTTP.get(f"{sim.urls[0]}/simulator/stats").json()
    assert (stats["audio_sent"], stats["audio_cached"], stats["audio_cache_misses"]) == (1, 1, 1)
    assert stats["audio_bytes"] == len(uri)
    # The other port is another server: it holds nothing.
    other = HTTP.post(f"{sim.urls[1]}/v1/chat/completions", json=body(alone))
    assert other.status_code == 400


# --- the fleet --------------------------------------------------------------------------------

def test_parts_by_uuid_alone_keep_everything_else():
    uri = wav_uri(1)
    messages = query(audio_part(uri, "a"), audio_part(wav_uri(2), "b"))
    assert audio_items(messages) == {"a": len(uri), "b": len(wav_uri(2))}
    sent = by_uuid(messages, {"a"})
    assert sent[1]["content"][0] == {"type": "audio_url", "audio_url": None, "uuid": "a"}
    assert sent[1]["content"][1:] == messages[1]["content"][1:]
    assert sent[0] == messages[0] and messages[1]["content"][0]["audio_url"] == {"url": uri}


def stats_of(sim):
    return [HTTP.get(f"{url}/simulator/stats").json() for url in sim.urls]


def test_a_samples_queries_send_its_audio_once_and_stay_on_one_endpoint(
        thread_simulator_factory):
    """Six samples of two audios each, nine queries a sample all asked at once, over two
    endpoints: each audio goes with its data once, every other query names it by its uuid,
    and a sample's queries are all answered by one endpoint."""
    sim = thread_simulator_factory(latency_ms=20, slots=8)
    samples = {s: (wav_uri(1 + s / 10), wav_uri(2 + s / 10)) for s in range(6)}

    async def main():
        async with JudgeFleet(sim.urls, model=MODEL, concurrency=8, timeout=30) as fleet:
            asks = [(s, fleet.ask(query(audio_part(a, f"{s}-in"), audio_part(b, f"{s}-out"),
                                        question=f"Question {q}?"), parse))
                    for s, (a, b) in samples.items() for q in range(9)]
            answers = await asyncio.gather(*(ask for _, ask in asks))
            return [(s, a) for (s, _), a in zip(asks, answers, strict=True)], fleet.summary()

    answers, summary = asyncio.run(main())
    assert all(a.ok and a.attempts == 1 for _, a in answers), [a.error for _, a in answers]
    for s in samples:
        assert len({a.endpoint for t, a in answers if t == s}) == 1, s
    distinct = sum(len(a) + len(b) for a, b in samples.values())
    assert sum(a.audio_bytes for _, a in answers) == distinct
    assert sum(a.audio_sent for _, a in answers) == 12
    assert sum(a.audio_cached for _, a in answers) == 6 * 8 * 2
    counts = stats_of(sim)
    assert sum(c["audio_sent"] for c in counts) == 12
    assert sum(c["audio_cached"] for c in counts) == 6 * 8 * 2
    assert sum(c["audio_bytes"] for c in counts) == distinct
    assert all(e["healthy"] for e in summary)


def test_a_cache_miss_sends_the_audio_again_without_an_attempt_or_a_fault(
        thread_simulator_factory):
    """A simulator whose cache keeps nothing: each query after the first names its audio by
    uuid, meets vLLM's cache miss, and is sent again with the data at once."""
    sim = thread_simulator_factory(ports=None, latency_ms=1, audio_cache_mb=0)
    uri = wav_uri(1)

    async def main():
        async with JudgeFleet(sim.urls[:1], model=MODEL, concurrency=2, timeout=30,
                              failure_threshold=1) as fleet:
            answers = [await fleet.ask(query(audio_part(uri, "sha256:x"),
                                             question=f"Question {q}?"), parse)
                       for q in range(3)]
            return answers, fleet.summary()

    answers, summary = asyncio.run(main())
    assert [(a.ok, a.attempts, a.cache_misses) for a in answers] == [
        (True, 1, 0), (True, 1, 1), (True, 1, 1)]
    assert summary[0]["healthy"] and summary[0]["failed_attempts"] == 0
    assert [a.audio_sent for a in answers] == [1, 1, 1]  # the data went every time
    assert [a.audio_cached for a in answers] == [0, 0, 0]  # its uuid alone was never held
    counts = stats_of(sim)[0]
    assert (counts["audio_cache_misses"], counts["audio_sent"], counts["ok"]) == (2, 3, 3)


def test_audio_of_another_sample_evicted_by_the_server_is_sent_again(thread_simulator_factory):
    """A cache that holds one audio: sample A, then B (A is evicted), then A again, whose
    uuid alone misses; its query is answered after sending the data once more."""
    one = wav_uri(1)
    sim = thread_simulator_factory(latency_ms=1, audio_cache_mb=(len(one) + 10) / 2**20)

    async def main():
        async with JudgeFleet(sim.urls[:1], model=MODEL, concurrency=2, timeout=30) as fleet:
            return [await fleet.ask(query(audio_part(uri, name)), parse)
                    for name, uri in (("A", one), ("B", wav_uri(0.9)), ("A", one))]

    answers = asyncio.run(main())
    assert [(a.ok, a.cache_misses, a.audio_sent) for a in answers] == [
        (True, 0, 1), (True, 0, 1), (True, 1, 1)]


def test_queries_of_one_audio_retried_on_the_one_endpoint_they_failed_on_all_end(
        thread_simulator_factory):
    """One endpoint failing half its requests: queries of one audio are retried there (the
    endpoint they failed on, the only one) while others of them send the audio; every one
    ends answered, within the time limit."""
    sim = thread_simulator_factory(ports=None, latency_ms=30, fail_rate=0.5, seed=3)
    uri = wav_uri(1)

    async def main():
        async with JudgeFleet(sim.urls[:1], model=MODEL, concurrency=4, timeout=10,
                              max_attempts=20, backoff_base=0.01, backoff_max=0.02,
                              failure_threshold=1000) as fleet:
            async with asyncio.timeout(30):
                return await asyncio.gather(*(
                    fleet.ask(query(audio_part(uri, "sha256:x"), question=f"Question {q}?"),
                              parse) for q in range(8)))

    answers = asyncio.run(main())
    assert all(a.ok for a in answers), [a.error for a in answers]
    assert max(a.attempts for a in answers) > 1


def test_queries_of_shared_audio_with_slow_leases_never_book_a_slot_twice(
        thread_simulator_factory):
    """Leases a slow round trip away (a loaded Redis): queries of a sample take a slot on
    their audio's endpoint outside the slot queue while the query at the head of the queue
    leases several at once. Seen in CI: the head booked the slots those queries had just
    taken, so a lane was popped from an empty list and the worker's batch hung. Every query
    ends answered, and every slot comes back."""
    import uuid as uuid_module

    from judge.leases import RedisLeases
    from tests.conftest import BROKER

    class SlowLeases(RedisLeases):
        async def acquire(self, *args, **kwargs):
            await asyncio.sleep(0.02)
            return await super().acquire(*args, **kwargs)

    sim = thread_simulator_factory(latency_ms=15, slots=4)
    samples = {s: wav_uri(1 + s / 10) for s in range(8)}
    prefix = f"test-slow-leases-{uuid_module.uuid4().hex[:10]}"

    async def main():
        leases = SlowLeases(BROKER, prefix=prefix, poll=0.2)
        async with JudgeFleet(sim.urls, model=MODEL, concurrency=4, timeout=30,
                              leases=leases) as fleet:
            async with asyncio.timeout(60):
                answers = await asyncio.gather(*(
                    fleet.ask(query(audio_part(uri, f"{s}-out"), question=f"Question {q}?"),
                              parse)
                    for s, uri in samples.items() for q in range(6)))
            return answers, [(e.in_flight, len(e.lanes), e.capacity) for e in fleet.endpoints]

    answers, slots = asyncio.run(main())
    assert all(a.ok for a in answers), [a.error for a in answers if not a.ok]
    assert slots == [(0, 4, 4)] * len(sim.urls)
