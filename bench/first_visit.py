"""The first visit of a board, a slice and a pivot right after the board changes, at 1,000 and
10,000 submissions: before the worker has stored the new state's ranked orders (the database
ranks the page: leaderboard.boards.ranked_sql) and after (a page of the stored order:
leaderboard.boards.board_pages), each against its target (300 ms median; 600 ms for the pivot).

Seeds a scratch PostgreSQL database with a synthetic MMAE benchmark and scored submissions
(`seed_board`), with no planner statistics (autovacuum off, no ANALYZE), and serves it with
gunicorn (2 workers x 4 threads, cache in Redis) as bench/board_latency.py does. Each visit
follows a change of the board (its version raised, as scoring.boards.board_changed raises it),
so nothing of the new state is cached. The worker is run once per size, as a board change
asks it to (`rank_ranges.refresh`, with 20 bootstrap replicates: the orders do not depend on
them); since the bench's change changes no figure, the orders it stored are the new state's
too, and "after" marks them as the new state's (what the worker would store, seconds later)
instead of waiting for the worker each time.

    .venv/bin/python bench/first_visit.py [--submissions 1000 10000] [--visits 5]
        [--redis-url redis://127.0.0.1:6379/7]
"""

import argparse
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
sys.path.insert(0, str(ROOT / "bench"))

import _scratch  # noqa: E402

from scoring import synthetic  # noqa: E402

manage = _scratch.manage
URLS = {"board": ("/b/mmae/", 300), "slice": ("/b/mmae/?dimension=modality&bucket=sound", 300),
        "pivot": ("/b/mmae/pivot/?dimension=modality&metric=EMR", 600),
        "pivot (its default metric)": ("/b/mmae/pivot/?dimension=operation", 600),
        "API (slice, 100 rows)": ("/api/leaderboards/mmae/?dimension=operation"
                                  "&bucket=local/removal", 300)}
REFRESH = ("from leaderboard.boards import rank_ranges;"
           " from leaderboard.boards.state import benchmark_current;"
           " rank_ranges.refresh(benchmark_current('mmae'), replicates=20)")


def change(database_url: str, *, stored: bool) -> None:
    """Raise the board's version; with `stored`, the worker's orders become the new state's."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        (pk, version) = conn.execute(
            "UPDATE scoring_benchmark SET board_version = board_version + 1, "
            "board_changed_at = now() WHERE slug = 'mmae' RETURNING id, board_version"
        ).fetchone()
        if stored:
            conn.execute("UPDATE leaderboard_rankranges SET state = %s WHERE benchmark_id = %s",
                         [f"{pk}:{version}", pk])


def visits(base: str, database_url: str, count: int, *, stored: bool) -> dict[str, list]:
    times: dict[str, list[float]] = {label: [] for label in URLS}
    with httpx.Client(timeout=120) as client:
        for _ in range(count):
            for label, (path, _) in URLS.items():
                change(database_url, stored=stored)
                started = time.perf_counter()
                response = client.get(base + path)
                times[label].append(1000 * (time.perf_counter() - started))
                if response.status_code != 200:
                    print(f"  {label}: status {response.status_code}: {response.text[:300]}")
    return times


def report(size: int, mode: str, times: dict[str, list]) -> None:
    print(f"{size} submissions, first visit after the board changed, {mode}:")
    for label, found in times.items():
        target = URLS[label][1]
        median = statistics.median(found)
        print(f"  {label:<28} median {median:7.1f} ms, max {max(found):7.1f} ms; target "
              f"{target} ms: {median / target:4.2f}x", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--visits", type=int, default=5, help="visits of each URL per mode")
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7",
                        help="a scratch Redis database for the cache and broker (flushed)")
    args = parser.parse_args()
    name, database_url = _scratch.create_database("bench_first_visit")
    work = Path(tempfile.mkdtemp(prefix="first-visit-"))
    redis.Redis.from_url(args.redis_url).flushdb()
    # The responses' cache in the same scratch database (by default it takes the next one).
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": args.redis_url,
           "RESPONSE_CACHE_URL": args.redis_url,
           "VAR_DIR": str(work / "var"), "STATIC_ROOT": str(work / "static"),
           "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
           "THROTTLE_API_ANON": "off", "THROTTLE_API_USER": "off", "THROTTLE_RENDER": "off"}
    server = None
    try:
        _scratch.migrate(env)
        with psycopg.connect(database_url, autocommit=True) as conn:
            for (table,) in conn.execute("SELECT tablename FROM pg_tables "
                                         "WHERE schemaname = 'public'").fetchall():
                conn.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')
        subprocess.run(manage("collectstatic", "--noinput", "-v", "0"), env=env, check=True)
        meta = synthetic.write_benchmark(work / "bench", args.samples, seed=1)
        subprocess.run(manage("import_mmae", str(meta), "--audio-root", str(work / "bench")),
                       env=env, check=True)
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind",
             f"127.0.0.1:{args.port}", "--workers", "2", "-c", "python:config.gunicorn"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        base = f"http://127.0.0.1:{args.port}"
        seeded = 0
        for size in sorted(args.submissions):
            subprocess.run(manage("seed_board", "--benchmark", "mmae", "--submissions",
                                  str(size - seeded), "--resamples", "100"),
                           env=env, check=True, stdout=subprocess.DEVNULL)
            seeded = size
            started = time.monotonic()
            subprocess.run(manage("shell", "-c", REFRESH), env=env, check=True,
                           stdout=subprocess.DEVNULL)
            print(f"\n{size} submissions seeded; the worker's refresh took "
                  f"{time.monotonic() - started:.0f} s", flush=True)
            _scratch.wait_http([f"{base}/b/mmae/"], timeout=120, process=server)
            report(size, "before the worker stored its orders (ranked in the database)",
                   visits(base, database_url, args.visits, stored=False))
            report(size, "after (a page of the stored order)",
                   visits(base, database_url, args.visits, stored=True))
        with open("/proc/loadavg") as load:
            print(f"\nload average at the end: {load.read().split()[:3]}")
    finally:
        _scratch.stop_group(server)
        _scratch.drop_database(name)
        redis.Redis.from_url(args.redis_url).flushdb()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
