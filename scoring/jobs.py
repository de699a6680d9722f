"""The one query loop: judge Jobs (scoring.kinds.base.Job) through a judge fleet, for the
scoring pipeline and the `score` command alike.

Plain Python (asyncio), no Django. Audio travels inline as base64 `data:` URIs; each file is
encoded once, in a thread, shared by every query that sends it, and dropped as soon as the
last of those queries is answered, so a worker holds the audio of the items in flight only.
"""

from __future__ import annotations

import asyncio
import base64
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from judge.fleet import JudgeAnswer, JudgeFleet
from scoring.kinds.base import Job, Media


def data_uri(media: Media) -> str:
    data = Path(media.path).read_bytes()
    return f"data:{media.mime};base64,{base64.b64encode(data).decode('ascii')}"


class MediaCache:
    """The `data:` URIs of the jobs' audio, encoded on first use and kept while a job that
    sends them is waiting or in flight."""

    def __init__(self, jobs: list[Job]):
        self.waiting = Counter(m.path for job in jobs for m in job.media())
        self.encoded: dict[str, asyncio.Task] = {}

    async def uri(self, media: Media) -> str:
        task = self.encoded.get(media.path)
        if task is None:
            task = asyncio.ensure_future(asyncio.to_thread(data_uri, media))
            self.encoded[media.path] = task
        return await task

    def release(self, media: Media) -> None:
        self.waiting[media.path] -= 1
        if self.waiting[media.path] <= 0:
            self.encoded.pop(media.path, None)

    async def messages(self, job: Job) -> list:
        """The job's messages as sent: each Media replaced by its data: URI."""
        async def fill(value):
            if isinstance(value, Media):
                return await self.uri(value)
            if isinstance(value, dict):
                return {k: await fill(v) for k, v in value.items()}
            if isinstance(value, list):
                return [await fill(v) for v in value]
            return value

        return await fill(job.messages)


async def ask_jobs(jobs: list[Job], fleet: JudgeFleet,
                   on_answer: Callable[[Job, JudgeAnswer], None]) -> None:
    """Ask every job, at most the fleet's capacity at once, calling on_answer(job, answer)
    for each as it arrives."""
    media = MediaCache(jobs)
    waiting = iter(jobs)  # shared by the workers: each takes the next job

    async def worker():
        for job in waiting:
            try:
                answer = await fleet.ask(await media.messages(job), job.parse)
            finally:
                for item in job.media():
                    media.release(item)
            on_answer(job, answer)

    workers = [asyncio.create_task(worker()) for _ in range(min(fleet.capacity, len(jobs)) or 1)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
