"""Concurrency caps: how many requests of one kind may be in flight at once, per client address
and in all, counted in the default cache (Redis in production, so every process shares the
count). A slot is a key taken with an atomic ADD and given back when the work ends; one a
killed process never gave back frees itself after `seconds`, so a cap can never stay full."""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable

from django.core.cache import cache

from config.throttle import client_ip


def _client(request) -> str:
    """The client's address (config.throttle.client_ip), IPv6 as its /64, as the rate limits
    count it: one host often holds a whole /64."""
    address = client_ip(request)
    if ":" in address:
        return str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return address


def _take(prefix: str, limit: int, token: str, seconds: int) -> str | None:
    """The key of a free slot among `limit`, now holding `token`; None when all are taken."""
    for number in range(limit):
        key = f"slot:{prefix}:{number}"
        if cache.add(key, token, seconds):
            return key
    return None


def _give_back(key: str, token: str) -> None:
    if cache.get(key) == token:  # not a slot that expired and another request took
        cache.delete(key)


def slot(request, *, group: str, per_client: int, overall: int,
         seconds: int) -> Callable[[], None] | None:
    """A slot of `group` for the request's client (its address, IPv6 by its /64: at most
    `per_client` at once) and of `overall` for every client together: the function that gives
    both back (call it once the work is done), or None when either cap is full."""
    token = uuid.uuid4().hex
    mine = _take(f"{group}:{_client(request)}", per_client, token, seconds)
    if mine is None:
        return None
    shared = _take(f"{group}:all", overall, token, seconds)
    if shared is None:
        _give_back(mine, token)
        return None

    def give_back() -> None:
        _give_back(shared, token)
        _give_back(mine, token)

    return give_back


class Returning:
    """A file that gives its slot back when closed: what a FileResponse sends, which closes
    it once the last byte is sent or the client goes."""

    def __init__(self, file, give_back: Callable[[], None]):
        self.file, self.give_back = file, give_back
        self.name = getattr(file, "name", "")

    def read(self, size: int = -1) -> bytes:
        return self.file.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def tell(self) -> int:
        return self.file.tell()

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.give_back()
