"""A heartbeat for background work in flight: a thread that calls `touch` every `seconds`
until stopped, so that a sweeper can tell a live worker's claim from a dead one's."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connection

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Use as `with Heartbeat(touch, seconds): ...`; `touch` runs on the thread's own
    database connection, closed when it stops."""

    def __init__(self, touch: Callable[[], object], seconds: float):
        super().__init__(daemon=True)
        self.touch, self.seconds = touch, seconds
        self.stopped = threading.Event()

    def run(self):
        try:
            while not self.stopped.wait(self.seconds):
                try:
                    self.touch()
                except Exception:  # a database hiccup: the next beat tries again
                    log.exception("heartbeat failed")
                    connection.close()
        finally:
            connection.close()

    def stop(self):
        self.stopped.set()
        self.join(timeout=30)

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
