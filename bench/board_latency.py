"""Latency of the board's pages and read API with many submissions, under concurrent load.

Seeds a scratch PostgreSQL database with a synthetic benchmark and N scored submissions
(`seed_board`), serves the site with gunicorn (2 workers x 4 threads, as `make run`), and for
each URL sends requests from C concurrent clients for a few seconds, printing p50 and p95
latency and requests per second, side by side with a static file from the same server.

    .venv/bin/python bench/board_latency.py [--submissions 1000 --concurrency 8 --seconds 10]
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scoring import synthetic  # noqa: E402


def manage(*args):
    return [sys.executable, str(ROOT / "manage.py"), *args]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def hammer(url: str, concurrency: int, seconds: float) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        async def one():
            nonlocal errors
            while time.monotonic() < deadline:
                started = time.monotonic()
                response = await client.get(url)
                latencies.append(1000 * (time.monotonic() - started))
                errors += response.status_code != 200
        await asyncio.gather(*(one() for _ in range(concurrency)))
    return latencies, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=100,
                        help="benchmark size (boards read slice aggregates, not samples)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args()

    name = f"bench_board_{os.getpid()}"
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    work = Path(tempfile.mkdtemp(prefix="board-bench-"))
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{name}",
           "VAR_DIR": str(work / "var"), "STATIC_ROOT": str(work / "static"),
           "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING"}
    server = None
    try:
        subprocess.run(manage("migrate", "-v", "0"), env=env, check=True)
        subprocess.run(manage("collectstatic", "--noinput", "-v", "0"), env=env, check=True)
        meta = synthetic.write_benchmark(work / "bench", args.samples, seed=1)
        subprocess.run(manage("import_mmae", str(meta), "--audio-root", str(work / "bench")),
                       env=env, check=True)
        started = time.monotonic()
        subprocess.run(manage("seed_board", "--benchmark", "mmae", "--submissions",
                              str(args.submissions), "--resamples", "100"), env=env, check=True)
        print(f"seeded {args.submissions} submissions in {time.monotonic() - started:.0f} s")
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind",
             f"127.0.0.1:{args.port}", "--workers", "2", "--threads", "4"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{args.port}"
        for _ in range(100):
            try:
                if httpx.get(f"{base}/b/mmae/", timeout=30).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        static = httpx.get(f"{base}/b/mmae/").text.split('href="/static/css/')[1].split('"')[0]
        urls = {
            "static file": f"/static/css/{static}",
            "home (board)": "/b/mmae/",
            "slice page": "/b/mmae/?dimension=modality&bucket=sound",
            "pivot page": "/b/mmae/pivot/?dimension=modality&metric=EMR",
            "API (slice)": "/api/leaderboards/mmae/?dimension=operation&bucket=local/removal",
        }
        print(f"{args.concurrency} concurrent clients, {args.seconds:g} s per URL, gunicorn "
              f"2 workers x 4 threads, {args.submissions} submissions on the board")
        print(f"{'url':<16} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'errors':>7}")
        for label, path in urls.items():
            httpx.get(base + path, timeout=30)  # warm
            latencies, errors = asyncio.run(hammer(base + path, args.concurrency,
                                                   args.seconds))
            print(f"{label:<16} {statistics.median(latencies):8.1f} "
                  f"{percentile(latencies, 0.95):8.1f} {len(latencies) / args.seconds:8.1f} "
                  f"{errors:7d}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
