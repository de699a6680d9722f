"""Latency of the board's pages and read API with many submissions, under concurrent load.

Seeds a scratch PostgreSQL database with a synthetic benchmark and N scored submissions
(`seed_board`), serves the site with gunicorn (2 workers x 4 threads, as `make run`), and for
each URL sends requests from C concurrent connections for a few seconds with wrk (Debian's
`wrk`, a C load generator, so the client takes little of the 2 cores; a Python client is the
fallback), printing p50 and p95 latency and requests per second, side by side with a static
file served by the same server.

    .venv/bin/python bench/board_latency.py [--submissions 1000 --concurrency 8 --seconds 10]
"""

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import redis

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


WRK_SCRIPT = """
done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %d %d %d\\n", latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout, summary.duration))
end
"""


def wrk(url: str, concurrency: int, seconds: float, script: Path):
    """(p50 ms, p95 ms, requests/s, errors) measured by wrk with one thread."""
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(seconds))}s",
               "-s", str(script), url]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    p50, p95, requests, errors, micros = out.split("RESULT")[1].split()[:5]
    return float(p50), float(p95), int(requests) / (int(micros) / 1e6), int(errors)


def python_client(url: str, concurrency: int, seconds: float):
    latencies, errors = asyncio.run(hammer(url, concurrency, seconds))
    return (statistics.median(latencies), percentile(latencies, 0.95),
            len(latencies) / seconds, errors)


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
    # As in production, the web processes share one cache in Redis (a scratch database).
    redis_url = "redis://127.0.0.1:6379/13"
    redis.Redis.from_url(redis_url).flushdb()
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{name}",
           "REDIS_URL": redis_url,
           "VAR_DIR": str(work / "var"), "STATIC_ROOT": str(work / "static"),
           "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
           # One load generator sends thousands of requests a minute: the API's limit for
           # anonymous callers would answer most of them with 429.
           "THROTTLE_API_ANON": "off"}
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
        # A live database has planner statistics (autovacuum); a freshly seeded one has
        # none, and its plans would be those of empty tables.
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}",
                             autocommit=True) as conn:
            conn.execute("ANALYZE")
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
        script = work / "report.lua"
        script.write_text(WRK_SCRIPT)
        client = "wrk" if shutil.which("wrk") else "a Python client (install wrk for less noise)"
        print(f"{args.concurrency} concurrent connections ({client}), {args.seconds:g} s per URL, "
              f"gunicorn 2 workers x 4 threads, {args.submissions} submissions on the board")
        print(f"{'url':<16} {'bytes':>8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'errors':>7}")
        for label, path in urls.items():
            size = len(httpx.get(base + path, timeout=30).content)  # also warms the cache
            measure = wrk if shutil.which("wrk") else python_client
            args_ = (base + path, args.concurrency, args.seconds)
            p50, p95, rate, errors = measure(*args_, script) if measure is wrk else \
                measure(*args_)
            print(f"{label:<16} {size:8d} {p50:8.1f} {p95:8.1f} {rate:8.1f} {errors:7d}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        redis.Redis.from_url(redis_url).flushdb()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
