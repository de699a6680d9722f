"""A worker process for the lease tests: one JudgeFleet sharing Redis leases, asking queries.

    python -m tests.judge.fleet_worker --redis URL --prefix P --ttl S --cap N --queries Q URL...

With --redis "" it runs without leases: its cap then holds in this process only.

Prints "ready" once its fleet is open, starts asking when a line comes on stdin (so that
several workers start together), and prints one JSON line when done: the Unix times of its
first and last answers, and how many queries were answered and failed. No Django: the
fleet runs as in a Celery task.
"""

import argparse
import asyncio
import json
import sys
import time

from judge.fleet import JudgeFleet
from judge.leases import RedisLeases
from scoring.kinds.mmae import rules as mmae

MODEL = "Qwen3-Omni-30B-A3B-Instruct"


def messages(i: int) -> list[dict]:
    return [{"role": "user", "content": [
        {"type": "text", "text": "<audio output>: "},
        {"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,QUJD{i}"}},
        {"type": "text", "text": mmae.query_text(f"Question {i}?", ("Yes", "No"))},
    ]}]


async def main(args) -> dict:
    leases = RedisLeases(args.redis, ttl=args.ttl, prefix=args.prefix) if args.redis else None
    times, failed = [], 0
    async with JudgeFleet(args.urls, model=MODEL, concurrency=args.cap, timeout=120,
                          leases=leases) as fleet:
        async def one(i):
            nonlocal failed
            answer = await fleet.ask(messages(i), lambda text: mmae.parse_reply(text, 2))
            times.append(time.time())
            failed += not answer.ok

        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await asyncio.gather(*(one(i) for i in range(args.queries)))
    return {"first": min(times), "last": max(times), "answered": len(times) - failed,
            "failed": failed}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--ttl", type=float, default=30.0)
    parser.add_argument("--cap", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("urls", nargs="+")
    print(json.dumps(asyncio.run(main(parser.parse_args()))), file=sys.stdout, flush=True)
