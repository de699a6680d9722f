"""Streamed JSON bodies: the very bytes of json.dumps, large strings sent from the shared object."""

import asyncio
import base64
import json

import pytest

from judge.body import CHUNK, LARGE, JsonBody

URI = "data:audio/wav;base64," + base64.b64encode(bytes(range(256)) * 1200).decode()


def query(*uris):
    return {"model": "judge", "temperature": 0.0, "messages": [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "user", "content": [
            *({"type": "audio_url", "audio_url": {"url": uri}} for uri in uris),
            {"type": "text", "text": "Question: is it \"loud\"?\nÉcoute bien."},
        ]},
    ]}


def streamed(body: JsonBody) -> list[bytes]:
    async def collect():
        return [chunk async for chunk in body.stream()]

    return asyncio.run(collect())


@pytest.mark.parametrize("payload", [
    query(URI),
    query(URI, URI, URI),  # one str object several times
    query(),
    {"a": URI, "b": [URI, {"c": (URI, 1.5, None, True, [])}], "d": {}},
    {"big but escaped": URI + '"', "tab": "x\t" * LARGE, "back": "\\" * LARGE},
    {"control": URI[:-1] + "\x01", "unicode": "é" * LARGE, "del": "\x7f" * LARGE},
    {1: URI, "mixed keys": {2.5: URI, None: [URI]}},  # keys json.dumps converts
    [URI, "short", 3, -0.0, 1e300],
    URI,
    "just text",
])
def test_the_bytes_sent_are_those_of_json_dumps(payload):
    body = JsonBody(payload)
    expected = json.dumps(payload).encode()
    assert b"".join(streamed(body)) == expected
    assert body.length == len(expected)
    assert body.headers == {"Content-Type": "application/json",
                            "Content-Length": str(len(expected))}


def test_a_large_plain_string_is_sent_from_the_shared_object_in_slices():
    body = JsonBody(query(URI, URI))
    shared = [part for part in body.parts if isinstance(part, str)]
    assert len(shared) == 2 and all(part is URI for part in shared)  # no copy made
    assert sum(len(part) for part in body.parts if isinstance(part, bytes)) < 400
    chunks = streamed(body)
    assert max(len(chunk) for chunk in chunks) <= CHUNK
    assert len(chunks) >= 2 * len(URI) // CHUNK


def test_strings_that_need_escaping_are_encoded_by_json_dumps():
    for text in (URI + '"', URI + "\\", URI + "\n", "é" + URI):
        assert not any(isinstance(part, str) for part in JsonBody({"url": text}).parts)


def test_a_body_can_be_streamed_again_for_a_retry():
    body = JsonBody(query(URI))
    assert streamed(body) == streamed(body)
