"""The judge fleet client of a worker process, kept between batches.

No Django here, like judge.fleet. A JudgeFleet lives in an asyncio event loop; a worker runs
that loop in a thread of its own for as long as the process lives, so that the fleet's
connections, endpoint health and lease subscription outlast any one batch, and the thread
that called can meanwhile store answers and claim the next batch. The fleet is opened on
first use, opened again when what it is built from changes (another judge config, other
endpoints or settings), and closed when the process shuts down (config.celery connects
`close` to Celery's worker_process_shutdown).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from judge.fleet import JudgeFleet

log = logging.getLogger(__name__)


class FleetRunner:
    def __init__(self):
        self._lock = threading.RLock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._fleet: JudgeFleet | None = None
        self._key: Hashable = None
        self.opened = 0  # fleets opened by this process

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # none yet, or forked
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="judge-fleet",
                                          daemon=True)
                thread.start()
                self._loop, self._thread, self._pid = loop, thread, os.getpid()
                self._fleet = self._key = None
            return self._loop

    def submit(self, coroutine: Coroutine) -> concurrent.futures.Future:
        """Start `coroutine` in the fleet's loop; its future, for this thread to wait on."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._event_loop())

    def run(self, coroutine: Coroutine, timeout: float | None = None) -> Any:
        return self.submit(coroutine).result(timeout)

    def call(self, function: Callable, *args) -> None:
        """Call `function(*args)` in the fleet's loop, soon (loop-bound objects such as an
        asyncio.Queue are touched there only)."""
        self._event_loop().call_soon_threadsafe(function, *args)

    def fleet(self, key: Hashable, make: Callable[[], JudgeFleet]) -> JudgeFleet:
        """The open fleet built under `key`: the one kept from an earlier call, or, when the
        key differs, a new one from `make()` (the old one is closed first)."""
        with self._lock:
            self._event_loop()
            if self._fleet is not None and self._key == key:
                return self._fleet
            self._close_fleet()
            fleet = make()
            self.run(fleet.__aenter__())
            self._fleet, self._key = fleet, key
            self.opened += 1
            return fleet

    def _close_fleet(self) -> None:
        fleet, self._fleet, self._key = self._fleet, None, None
        if fleet is not None:
            try:
                self.run(fleet.__aexit__(None, None, None), timeout=30)
            except Exception:
                log.exception("closing the judge fleet client failed")

    def discard(self) -> None:
        """Close the fleet (the next `fleet` call opens a new one), for a loop that was
        cancelled with queries in flight: a request or a Redis command cut short may leave
        its connection mid-exchange, so none of them is used again."""
        with self._lock:
            if self._loop is not None and self._pid == os.getpid():
                self._close_fleet()

    def close(self) -> None:
        """Close the fleet and stop the loop (at the process's shutdown)."""
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                return
            self._close_fleet()
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()


# One per process.
fleet_runner = FleetRunner()
