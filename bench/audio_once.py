"""Audio bytes a scoring run sends against the distinct audio it holds, each audio named by
its vLLM uuid after the first time (judge.fleet) against every query sending it whole; and the
time per query, side by side in one run against the judge simulator.

    .venv/bin/python bench/audio_once.py [--samples 40 --seconds 10 --endpoints 2]

Prints, for each way: audio characters sent (base64) / distinct audio characters, requests,
the judge simulator's cache hits and misses, and milliseconds per query (wall time / queries,
the simulator answering at once); then the ratio of the two ways.
"""

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from judge.simulator import SimulatorConfig, serve, stats_totals  # noqa: E402
from scoring import synthetic  # noqa: E402
from scoring.jobs import data_uri  # noqa: E402
from scoring.kinds import simulated_replies  # noqa: E402
from scoring.kinds.base import Media  # noqa: E402
from scoring.scorer import ScoreConfig, score  # noqa: E402
from tests.conftest import free_ports  # noqa: E402


def simulator(ports: list[int], config: SimulatorConfig) -> tuple[threading.Thread, asyncio.Event]:
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    ready = threading.Event()

    async def main():
        started = asyncio.Event()
        task = asyncio.ensure_future(serve(ports, config, ready=started, stop=stop))
        await started.wait()
        ready.set()
        await task

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(30)
    return thread, (loop, stop)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=16)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="audio-once-"))
    meta = synthetic.write_benchmark(work, args.samples, seed=1, seconds=args.seconds)
    samples = json.loads(meta.read_text())
    predictions = synthetic.write_system(work, samples, name="sys", seed=2,
                                         seconds=args.seconds)
    distinct = {}
    for path in work.rglob("*.wav"):
        uri, uuid, _ = data_uri(Media(str(path)))
        distinct[uuid] = len(uri)
    distinct_chars = sum(distinct.values())
    print(f"{args.samples} samples of {args.seconds:g} s, {len(distinct)} distinct audio files, "
          f"{distinct_chars / 1e6:.1f} MB as base64; {args.endpoints} endpoints x "
          f"{args.slots} slots, no latency", flush=True)

    results = {}
    for way, cache in (("whole every time", 0), ("once per endpoint", 2 * 2**30)):
        ports = free_ports(args.endpoints)
        thread, (loop, stop) = simulator(ports, SimulatorConfig(
            latency_ms=0, slots=args.slots, replies=simulated_replies()))
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        started = time.monotonic()
        run = score(ScoreConfig(kind="mmae", meta=meta, predictions=predictions,
                                audio_root=work, base_urls=urls, output_dir=work / way,
                                concurrency=args.slots, timeout=120,
                                audio_cache_bytes=cache))
        wall = time.monotonic() - started
        seen = stats_totals(urls)
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        results[way] = (seen["audio_bytes"], wall / run["queries"] * 1000)
        print(f"{way:>18}: {seen['audio_bytes'] / 1e6:8.1f} MB sent = "
              f"{seen['audio_bytes'] / distinct_chars:5.2f}x the distinct audio; "
              f"{run['queries']} queries, {seen['audio_cached']} audio named by uuid, "
              f"{seen['audio_cache_misses']} misses; {results[way][1]:.1f} ms per query",
              flush=True)
    (whole_bytes, whole_ms), (once_bytes, once_ms) = results.values()
    print(f"ratio once/whole: bytes {once_bytes / whole_bytes:.3f}, "
          f"time per query {once_ms / whole_ms:.3f}")


if __name__ == "__main__":
    main()
