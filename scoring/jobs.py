"""The one query loop: judge Jobs (scoring.kinds.base.Job) through a judge fleet, for the
scoring pipeline and the `score` command alike.

Plain Python (asyncio), no Django. Jobs come from any iterable, taken one at a time as slots
free (a generator may still be building them while the first queries are out), or from a
JobFeed that another thread fills (the pipeline, adding batch after batch to one loop).

Audio travels inline as base64 `data:` URIs; each file is encoded once, in a thread, shared
by every query in flight that sends it, and dropped as soon as the last of those queries is
answered, so a worker holds the audio of the queries in flight only. Each audio part carries
the file's SHA-256 as its vLLM `uuid`, so that the fleet sends it once per endpoint
(judge.fleet).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import soundfile

from judge.fleet import JudgeAnswer, JudgeFleet
from scoring.kinds.base import Job, Media


def data_uri(media: Media) -> tuple[str, str, float]:
    """The file as a data: URI, its uuid: the SHA-256 of its bytes (vLLM then keys its caches
    by it: two files alike are one item, two different ones never are), and its length in
    seconds (0 when it is no sound file the header can tell)."""
    data = Path(media.path).read_bytes()
    try:
        seconds = soundfile.info(io.BytesIO(data)).duration
    except (soundfile.LibsndfileError, RuntimeError, TypeError):
        seconds = 0.0
    return (f"data:{media.mime};base64,{base64.b64encode(data).decode('ascii')}",
            f"sha256:{hashlib.sha256(data).hexdigest()}", seconds)


class MediaCache:
    """The `data:` URIs of the audio of the jobs in flight, encoded on first use and kept
    while a job that sends them holds them."""

    def __init__(self):
        self.holders: Counter = Counter()
        self.encoded: dict[str, asyncio.Task] = {}

    def hold(self, job: Job) -> None:
        self.holders.update(m.path for m in job.media())

    def release(self, job: Job) -> None:
        for media in job.media():
            self.holders[media.path] -= 1
            if self.holders[media.path] <= 0:
                del self.holders[media.path]
                self.encoded.pop(media.path, None)

    async def uri(self, media: Media) -> tuple[str, str, float]:
        """(data: URI, uuid, seconds) of the file."""
        task = self.encoded.get(media.path)
        if task is None:
            task = asyncio.ensure_future(asyncio.to_thread(data_uri, media))
            self.encoded[media.path] = task
        return await task

    async def messages(self, job: Job) -> list:
        """The job's messages as sent: each Media replaced by its data: URI, and each part
        that holds one (`{"type": T, T: {"url": Media}}`) given its uuid."""
        async def fill(value):
            if isinstance(value, Media):
                return (await self.uri(value))[0]
            if isinstance(value, dict):
                inner = value.get(value.get("type")) if isinstance(value.get("type"), str) \
                    else None
                media = inner.get("url") if isinstance(inner, dict) else None
                uuid = {"uuid": (await self.uri(media))[1]} \
                    if isinstance(media, Media) and "uuid" not in value else {}
                return {**{k: await fill(v) for k, v in value.items()}, **uuid}
            if isinstance(value, list):
                return [await fill(v) for v in value]
            return value

        return await fill(job.messages)


class JobFeed:
    """Jobs handed to a running query loop from another thread: `put` and `close` are called
    through the loop (loop.call_soon_threadsafe); `low` is set, for the feeding thread to
    see, once fewer than `low_water` jobs wait to be sent, so that it adds more before any
    slot idles."""

    def __init__(self, low_water: int):
        self.low_water = low_water
        self.waiting: asyncio.Queue = asyncio.Queue()
        self.low = threading.Event()
        self.low.set()

    def put(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.waiting.put_nowait(job)
        if self.waiting.qsize() < self.low_water:
            self.low.set()
        else:
            self.low.clear()

    def close(self) -> None:
        self.waiting.put_nowait(None)

    async def next(self) -> Job | None:
        job = await self.waiting.get()
        if job is None:
            self.waiting.put_nowait(None)  # for the next worker
        if self.waiting.qsize() < self.low_water:
            self.low.set()
        return job


class _Jobs:
    """An iterable of jobs as a source: taken one at a time, by whichever worker is free."""

    def __init__(self, jobs: Iterable[Job]):
        self.jobs = iter(jobs)

    async def next(self) -> Job | None:
        return next(self.jobs, None)


async def ask_jobs(jobs: Iterable[Job] | JobFeed, fleet: JudgeFleet,
                   on_answer: Callable[[Job, JudgeAnswer], None]) -> None:
    """Ask every job, at most the fleet's capacity at once, calling on_answer(job, answer)
    for each as it arrives."""
    source = jobs if isinstance(jobs, JobFeed) else _Jobs(jobs)
    media = MediaCache()

    async def worker():
        me = asyncio.current_task()
        # A worker told to stop takes no further job, even when something it awaited took
        # the cancellation for its own and returned (seen in CI: the loop waited for good on
        # workers that went on to wait for jobs).
        while not me.cancelling() and (job := await source.next()) is not None:
            media.hold(job)
            try:
                answer = await fleet.ask(await media.messages(job), job.parse)
                answer.audio_seconds = sum([(await media.uri(m))[2] for m in job.media()])
            finally:
                media.release(job)
            on_answer(job, answer)

    workers = [asyncio.create_task(worker()) for _ in range(fleet.capacity)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
