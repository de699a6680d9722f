"""Text-only judge queries, as a benchmark kind builds them: what is sent, how the reply is
read, and what one answer stores.

Plain Python (asyncio), no Django. A kind turns an item and its output into TextJobs; the
pipeline asks them through the judge fleet with `ask_jobs` and stores each record as an Answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from judge.fleet import JudgeAnswer, JudgeFleet


@dataclass(frozen=True)
class TextJob:
    key: str  # the item's key
    criterion_index: int
    round: int
    messages: list = field(hash=False)  # the chat messages sent, text only
    parse: Callable = field(hash=False, compare=False)  # reply text -> value; ValueError if none
    # value (None when the query failed) -> the answer's choices, correct_letter, choice,
    # correct and score
    fields: Callable = field(hash=False, compare=False)

    @property
    def sent_sha256(self) -> str:
        """A hash of exactly what was sent, for caching judgments."""
        text = json.dumps(self.messages, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


def user_message(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def record(job: TextJob, answer: JudgeAnswer) -> dict:
    """One answer's row (the names of scoring.models.Answer's fields)."""
    return {
        "id": job.key, "rubric_index": job.criterion_index, "round": job.round,
        **job.fields(answer.value if answer.ok else None),
        "reason": None, "raw": answer.raw, "error": answer.error, "endpoint": answer.endpoint,
        "attempts": answer.attempts,
        "latency_ms": None if answer.latency_ms is None else round(answer.latency_ms, 1),
    }


async def ask_jobs(jobs: list[TextJob], fleet: JudgeFleet,
                   on_answer: Callable[[dict, bool], None]) -> None:
    """Ask every job, calling on_answer(record, simulated) for each as it arrives."""
    queue: asyncio.Queue = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker():
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            answer = await fleet.ask(job.messages, job.parse)
            on_answer(record(job, answer), answer.simulated)

    workers = [asyncio.create_task(worker()) for _ in range(min(fleet.capacity, len(jobs)) or 1)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
