"""How fast the judge fleet fills its slots and how busy it keeps them, and what Redis leases cost.

Starts the judge simulator (`--endpoints` ports x `--slots` slots at `--latency-ms`), writes a
synthetic MMAE set and one system's outputs, and asks every query the way `manage.py score`
does (the jobs of scoring.scorer.plan_jobs through scoring.jobs.ask_jobs) through one
JudgeFleet in this process, without the command's start-up (Django, reading and checking the
inputs). Runs
it without leases, then, with `--redis URL`, sharing Redis leases. For each it prints:
  - the time from opening the fleet to the first query at the simulator, and from the first
    query until every slot was busy;
  - the share of the slots kept busy from the first query to the last answer;
  - the scorer process's CPU per query; with leases, Redis round trips and the time spent
    waiting on them per query, and the Redis server's CPU per query (INFO; other clients of
    the same server count too).

    .venv/bin/python bench/fleet_ramp.py [--samples 86 --rubrics 758 --endpoints 2 --slots 16
        --latency-ms 100 --concurrency 16 --redis redis://127.0.0.1:6379/15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _scratch
import httpx
import redis

sys.path.insert(0, str(_scratch.ROOT))

from judge.fleet import JudgeFleet  # noqa: E402
from judge.leases import RedisLeases  # noqa: E402
from judge.simulator import DEFAULT_MODEL  # noqa: E402
from scoring import synthetic  # noqa: E402
from scoring.jobs import ask_jobs  # noqa: E402
from scoring.scorer import ScoreConfig, plan, plan_jobs  # noqa: E402


class TimedLeases(RedisLeases):
    """Redis leases that add up the time their calls take."""

    waited = 0.0

    async def _timed(self, call, *args, **kwargs):
        started = time.perf_counter()
        try:
            return await call(*args, **kwargs)
        finally:
            self.waited += time.perf_counter() - started

    async def acquire(self, *args, **kwargs):
        return await self._timed(super().acquire, *args, **kwargs)

    async def release(self, *args, **kwargs):
        return await self._timed(super().release, *args, **kwargs)


def redis_figures(url: str) -> tuple[float, int, int]:
    """(server CPU seconds, EVALSHA calls, their server microseconds) so far."""
    client = redis.Redis.from_url(url)
    cpu = client.info("cpu")
    calls = client.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    client.close()
    return cpu["used_cpu_sys"] + cpu["used_cpu_user"], calls["calls"], calls["usec"]


def scorer_jobs(meta: Path, predictions: Path, audio_root: Path) -> list:
    """The judge queries `manage.py score` would ask for these files."""
    config = ScoreConfig(kind="mmae", meta=meta, predictions=predictions,
                         audio_root=audio_root, base_urls=[], output_dir=audio_root)
    return list(plan_jobs(plan(config), config))


async def score_once(jobs, urls, args, leases) -> dict:
    errors = []
    opened = time.time()
    cpu = time.process_time()
    async with JudgeFleet(urls, model=DEFAULT_MODEL, concurrency=args.concurrency,
                          timeout=60, leases=leases) as fleet:
        await ask_jobs(jobs, fleet, lambda job, answer: errors.append(answer.error))
    return {"opened": opened, "ended": time.time(), "cpu": time.process_time() - cpu,
            "failed": sum(error is not None for error in errors), "queries": len(errors)}


def report(label: str, run: dict, stats: list[dict], args, leases=None, server=None):
    slots = args.endpoints * args.slots
    first = min(s["first_busy_at"] for s in stats)
    fills = [s["all_busy_at"] - s["first_busy_at"] if s["all_busy_at"] else None
             for s in stats]
    busy = sum(s["busy_slot_seconds"] for s in stats)
    window = run["ended"] - first
    print(f"{label}: {run['queries']} queries ({run['failed']} failed) in "
          f"{run['ended'] - run['opened']:.2f} s")
    print(f"  first query at the simulator {1000 * (first - run['opened']):.0f} ms after "
          f"opening the fleet; every slot busy after: "
          + ", ".join("never" if f is None else f"{1000 * f:.0f} ms" for f in fills))
    print(f"  slots busy {busy / (slots * window):.3f} of the time from the first query on "
          f"({run['queries'] / window:.1f} queries/s of {slots / (args.latency_ms / 1000):.0f})")
    print(f"  scorer CPU {1000 * run['cpu'] / run['queries']:.2f} ms per query")
    if leases is not None:
        cpu, calls, usec = server
        print(f"  Redis: {leases.round_trips / run['queries']:.2f} round trips per query "
              f"({calls} EVALSHA, {usec / max(calls, 1):.1f} us each at the server), "
              f"{1e6 * leases.waited / run['queries']:.0f} us per query spent on them in "
              f"the client, server CPU {1e6 * cpu / run['queries']:.0f} us per query")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=86)
    parser.add_argument("--rubrics", type=int, default=758)
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=16, help="per endpoint")
    parser.add_argument("--redis", default="", help="also run sharing leases on this server")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="fleet-ramp-"))
    simulators = []
    try:
        meta = synthetic.write_benchmark(work, args.samples, seed=1, n_rubrics=args.rubrics)
        predictions = synthetic.write_system(work, json.loads(meta.read_text()), name="bench",
                                             seed=2)
        jobs = scorer_jobs(meta, predictions, work)

        runs = [("no leases", None)]
        if args.redis:
            runs.append(("Redis leases", TimedLeases(args.redis,
                                                     prefix=f"bench-{uuid.uuid4().hex[:8]}")))
        for label, leases in runs:
            # A fresh simulator for each run, so that its figures are this run's only.
            ports = _scratch.free_ports(args.endpoints)
            urls = [f"http://127.0.0.1:{p}" for p in ports]
            simulators.append(subprocess.Popen(
                _scratch.manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                                "--slots", str(args.slots),
                                "--latency-ms", str(args.latency_ms)),
                cwd=_scratch.ROOT, stdout=subprocess.DEVNULL, start_new_session=True))
            _scratch.wait_http([f"{u}/health" for u in urls], process=simulators[-1])
            before = redis_figures(args.redis) if leases is not None else None
            run = asyncio.run(score_once(jobs, urls, args, leases))
            server = None
            if leases is not None:
                after = redis_figures(args.redis)
                server = tuple(a - b for a, b in zip(after, before, strict=True))
            stats = [httpx.get(f"{u}/simulator/stats", timeout=10).json() for u in urls]
            _scratch.stop_group(simulators[-1])
            report(label, run, stats, args, leases, server)
    finally:
        for simulator in simulators:
            _scratch.stop_group(simulator)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
