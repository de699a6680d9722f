"""The query loop's workers (scoring.jobs.ask_jobs): one that breaks stops the others, and
the loop ends, even when a worker's cancellation is taken by something it awaited."""

import asyncio

import pytest

from judge.fleet import JudgeAnswer
from scoring.jobs import JobFeed, ask_jobs


class Job:
    def __init__(self, n):
        self.n, self.messages = n, [{"role": "user", "content": f"query {n}"}]

    def media(self):
        return []

    def parse(self, text):
        return text


class SwallowingFleet:
    """Answers after a while; a query cancelled meanwhile is answered anyway, as a library
    that takes the cancellation for its own does; job 3 breaks."""
    capacity = 4

    async def ask(self, messages, parse):
        if messages[0]["content"] == "query 3":
            await asyncio.sleep(0.05)
            raise RuntimeError("a bug in the fleet")
        try:
            await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)
        answer = JudgeAnswer()
        answer.value = parse(messages[0]["content"])
        return answer


def test_a_broken_worker_ends_the_loop_even_when_others_swallow_their_cancellation():
    async def main():
        feed = JobFeed(low_water=1)
        feed.put([Job(n) for n in range(4)])  # and no more: the feed is left open
        answered = []
        async with asyncio.timeout(10):
            with pytest.raises(RuntimeError, match="a bug in the fleet"):
                await ask_jobs(feed, SwallowingFleet(), lambda job, a: answered.append(job.n))
        return answered

    # the three swallowed their cancellation and answered, then took no further job
    assert sorted(asyncio.run(main())) == [0, 1, 2]
