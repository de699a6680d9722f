"""Request bodies streamed in chunks: the bytes of `json.dumps(payload)`, without a copy of
the payload's large strings per request.

A judge query inlines audio as a `data:audio/...;base64,...` URI, one str object shared by
every query about that audio. Encoding the whole body per request (json.dumps, then
.encode()) made two copies of it for each query in flight: tens of megabytes each for a long
recording, gigabytes over a fleet's worth of concurrent queries. Here a large string that JSON
carries as it is (ASCII, nothing to escape) is sent slice by slice from the shared object;
everything else goes through json.dumps, so the bytes are exactly json.dumps(payload)'s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx

LARGE = 64 * 1024  # strings at least this long are streamed from the shared object
CHUNK = 64 * 1024  # slices that small stay in the allocator's arenas (no mmap per slice)

# What json.dumps leaves as it is (printable ASCII, space to tilde) less the quote and the
# backslash it escapes: the characters a streamed string may hold.
_PLAIN = bytes(b for b in range(0x20, 0x7f) if b not in b'"\\')


def _is_plain(text: str) -> bool:
    """JSON encodes `text` as itself between quotes (json.dumps's defaults)."""
    if not text.isascii():  # O(1) in CPython: a str knows its widest character
        return False
    return not any(text[i:i + CHUNK].encode("ascii").translate(None, _PLAIN)
                   for i in range(0, len(text), CHUNK))


def _parts(value) -> list | None:
    """`value`'s encoding as bytes and plain large strs, or None when it holds no large
    plain string (the caller encodes it whole with json.dumps)."""
    if isinstance(value, str):
        return [b'"', value, b'"'] if len(value) >= LARGE and _is_plain(value) else None
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            return None  # json.dumps's key conversions stay json.dumps's
        inner = [(key, item, _parts(item)) for key, item in value.items()]
        if all(parts is None for *_, parts in inner):
            return None
        out: list = [b"{"]
        for i, (key, item, parts) in enumerate(inner):
            out += [b", " if i else b"", json.dumps(key).encode("ascii"), b": "]
            out += parts if parts is not None else [json.dumps(item).encode("ascii")]
        return [*out, b"}"]
    if isinstance(value, (list, tuple)):
        inner = [(item, _parts(item)) for item in value]
        if all(parts is None for _, parts in inner):
            return None
        out = [b"["]
        for i, (item, parts) in enumerate(inner):
            out.append(b", " if i else b"")
            out += parts if parts is not None else [json.dumps(item).encode("ascii")]
        return [*out, b"]"]
    return None


def _coalesce(parts: list) -> list:
    """Adjacent bytes joined, so a body is a few writes plus the large strings' slices."""
    out: list = []
    for part in parts:
        if isinstance(part, bytes) and out and isinstance(out[-1], bytes):
            out[-1] += part
        elif part:
            out.append(part)
    return out


class JsonBody:
    """The body of one query, built once and streamed for each attempt."""

    def __init__(self, payload):
        parts = _parts(payload)
        self.parts = [json.dumps(payload).encode("ascii")] if parts is None \
            else _coalesce(parts)
        self.length = sum(len(part) for part in self.parts)  # plain strs: 1 byte a character

    @property
    def headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Content-Length": str(self.length)}

    def stream(self) -> httpx.AsyncByteStream:
        return _Stream(self.parts)


class _Stream(httpx.AsyncByteStream):
    def __init__(self, parts: list):
        self.parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            if isinstance(part, bytes):
                yield part
            else:
                for i in range(0, len(part), CHUNK):
                    yield part[i:i + CHUNK].encode("ascii")
