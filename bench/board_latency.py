"""Latency of the board's pages and read API at 1,000 and 10,000 submissions, each against a
static file of the same size from the same server in the same run, for anonymous and signed-in
visitors (with --window, each page right after a board change, while the worker computes the
new state's rank ranges); a visit right after a board changes (cold cache), alone and 8 at
once; the explorer of a full-size AIR-Bench foundation set; the web processes' memory over
100,000 board requests.

As production runs it: seeds a scratch PostgreSQL database with a synthetic MMAE benchmark and
scored submissions (`seed_board`), with no planner statistics at all (autovacuum is off on its
tables and nothing runs ANALYZE: a freshly seeded database must be as fast as an analysed
one), starts a Celery worker, which stores the rank ranges whenever the board changes (the
bench waits for them), and serves the site with gunicorn (2 workers x 4 threads, as `make
run`, config.wsgi with its front, caches in Redis). Each page's bytes, as a client that takes
no gzip gets them, are copied into a static file served by whitenoise from the same server
(which then starts again, as whitenoise reads its files at start-up). For each URL, the page
and then its static file get requests from C concurrent connections for S seconds with wrk
(Debian's `wrk`, a C load generator, so the client takes little of the 2 cores; a Python
client is the fallback), printing p50 and p95 latency, requests per second, and the page's
p95 as a ratio of its static file's; signed in, both requests carry the session and CSRF
cookies of a visitor who owns none of the models.

    .venv/bin/python bench/board_latency.py [--submissions 1000 10000] [--seconds 10]
        [--concurrency 8] [--memory-requests 100000] [--explorer-items 24700]
        [--only explorer|cold] [--window] [--no-front] [--pages LABEL ...]
        [--redis-url redis://127.0.0.1:6379/13]
        [--response-cache-url redis://127.0.0.1:6379/14]
"""

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import _scratch  # noqa: E402

from scoring import synthetic  # noqa: E402
from scoring.kinds.airbench import rules as airbench  # noqa: E402

manage = _scratch.manage
EXPLORER_PAGE_SIZE = 20  # leaderboard.boards.explorer_selectors.PAGE_SIZE


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def hammer(url: str, concurrency: int, seconds: float,
                 headers: dict) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30, headers=headers) as client:
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


def wrk(url: str, concurrency: int, seconds: float, script: Path, headers: dict):
    """(p50 ms, p95 ms, requests/s, errors, requests) measured by wrk with one thread."""
    command = ["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(seconds))}s",
               "-s", str(script), *(f"-H{k}: {v}" for k, v in headers.items()), url]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    p50, p95, requests, errors, micros = out.split("RESULT")[1].split()[:5]
    return (float(p50), float(p95), int(requests) / (int(micros) / 1e6), int(errors),
            int(requests))


def python_client(url: str, concurrency: int, seconds: float, script, headers: dict):
    latencies, errors = asyncio.run(hammer(url, concurrency, seconds,
                                           {"Accept-Encoding": "identity", **headers}))
    return (statistics.median(latencies), percentile(latencies, 0.95),
            len(latencies) / seconds, errors, len(latencies))


MEASURE = wrk if shutil.which("wrk") else python_client


def foundation_meta(n: int, seed: int) -> list[dict]:
    """A synthetic AIR-Bench foundation file of `n` single-choice items over every task."""
    rng = random.Random(seed)
    tasks = list(airbench.TASKS)
    items = []
    for i in range(n):
        choices = [f"choice {c} of {i}" for c in "abcd"]
        items.append({"path": f"{i}.wav", "question": f"Synthetic question {i}?",
                      "choice_a": choices[0], "choice_b": choices[1], "choice_c": choices[2],
                      "choice_d": choices[3], "answer_gt": rng.choice(choices),
                      "task_name": tasks[i % len(tasks)], "dataset_name": "synthetic",
                      "uniq_id": i})
    return items


def rss_mb(server: subprocess.Popen) -> float:
    """The resident memory of the web processes (gunicorn's workers), in MB."""
    return sum(_scratch.proc_status_kb(pid, "VmRSS") or 0
               for pid in _scratch.children(server.pid)) / 1024


def statistics_state(url: str) -> str:
    """Whether any table has planner statistics (an ANALYZE, manual or automatic)."""
    with psycopg.connect(url) as conn:
        analysed = conn.execute(
            "SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL "
            "OR last_autoanalyze IS NOT NULL").fetchone()[0]
    return "none (no table analysed)" if not analysed else f"{analysed} tables analysed"


class Bench:
    def __init__(self, args, env: dict, base: str, work: Path, database_url: str):
        self.args, self.env, self.base, self.work = args, env, base, work
        self.database_url = database_url
        self.script = work / "report.lua"
        self.script.write_text(WRK_SCRIPT)
        self.server: subprocess.Popen | None = None
        self.ratios: dict[tuple[int, str], dict[str, float]] = {}

    def measure(self, path: str, seconds: float | None = None, headers: dict | None = None):
        run = (self.base + path, self.args.concurrency, seconds or self.args.seconds)
        return MEASURE(*run, self.script, headers or {})

    def serve(self) -> None:
        """(Re)start gunicorn, which config.wsgi's front and whitenoise's file list start
        afresh with."""
        _scratch.stop_group(self.server)
        self.server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind",
             f"127.0.0.1:{self.args.port}", "--workers", "2", "-c", "python:config.gunicorn"],
            env=self.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        _scratch.wait_http([f"{self.base}/b/mmae/"], timeout=120, process=self.server)

    def same_size_files(self, urls: dict[str, str]) -> dict[str, str]:
        """For each page, a static file of its bytes as wrk gets them (no gzip asked), served
        by whitenoise once the server starts again."""
        folder = Path(self.env["STATIC_ROOT"]) / "bench"
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for label, path in urls.items():
            page = httpx.get(self.base + path, timeout=120,
                             headers={"Accept-Encoding": "identity"})
            if page.status_code != 200:
                print(f"{label}: status {page.status_code}: {page.text[:300]}")
            name = "".join(c if c.isalnum() else "-" for c in label) + ".html"
            (folder / name).write_bytes(page.content)
            files[label] = f"/static/bench/{name}"
        self.serve()
        return files

    def table(self, size: int, who: str, urls: dict[str, str], files: dict[str, str],
              headers: dict) -> None:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\n{who}, {size} submissions (load average {load}):")
        print(f"{'url':<24} {'bytes':>8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} "
              f"{'errors':>6} {'static p95':>10} {'static/s':>8} {'p95 ratio':>9}")
        for label, path in urls.items():
            if self.args.window:  # a new state, whose ranges the worker starts computing
                bump()  # the front answers the new state from its commit on
            # The variant wrk asks for (no gzip): a warm-up of another variant leaves this
            # one's first renders to the 1 s below, 8 at once, and what outlasts it to the
            # measurement, where wrk's correction for coordinated omission turns one stalled
            # second into a p95 (the "CSV tail" of 2026-12-07, 14-23x its static file).
            warm = httpx.get(self.base + path, timeout=120,
                             headers={"Accept-Encoding": "identity", **headers})
            if warm.status_code != 200:
                print(f"{label}: status {warm.status_code}: {warm.text[:300]}")
            if (headers and warm.headers.get("content-type", "").startswith("text/html")
                    and VISITOR not in warm.text):
                sys.exit(f"{label}: the signed-in request got a page not signed in as "
                         f"{VISITOR}: the bench's session is not the server's")
            size_bytes = len(httpx.get(self.base + files[label], timeout=60).content)
            self.measure(path, seconds=1, headers=headers)  # every worker thread has it
            p50, p95, rate, errors, _ = self.measure(path, headers=headers)
            _, s95, srate, serrors, _ = self.measure(files[label], headers=headers)
            # wrk times a request out after 2 s and reports no latency when none finished
            ratio = p95 / s95 if p95 or not errors else float("inf")
            self.ratios.setdefault((size, label), {})[who] = ratio
            window = ("" if not self.args.window else
                      "  in the window" if not ranges_stored() else "  ranges arrived")
            print(f"{label:<24} {size_bytes:8d} {p50:8.1f} {p95:8.1f} {rate:8.1f} "
                  f"{errors + serrors:6d} {s95:10.1f} {srate:8.1f} {ratio:9.2f}{window}",
                  flush=True)

    def summary(self) -> None:
        print("\np95 as a ratio of a same-size static file's (targets: anonymous at most "
              "1.0, signed in at most 3.0):")
        print(f"{'submissions':>11} {'url':<24} {'anonymous':>9} {'signed in':>9}")
        for (size, label), found in self.ratios.items():
            print(f"{size:11d} {label:<24} {found.get('anonymous', float('nan')):9.2f} "
                  f"{found.get('signed in', float('nan')):9.2f}")

    def cold(self, urls: dict[str, str], visits: int) -> None:
        """Each URL's first visit after the board changed (nothing of the new state cached),
        alone, then `concurrency` first visits at once."""
        times: dict[str, list[float]] = {label: [] for label in urls}
        with httpx.Client(timeout=120) as client:
            for _ in range(visits):
                for label in times:
                    bump()
                    time.sleep(1.1)  # a visitor a moment after the change: the worker is on it
                    started = time.perf_counter()
                    response = client.get(self.base + urls[label])
                    times[label].append(1000 * (time.perf_counter() - started))
                    if response.status_code != 200:
                        print(f"  {label}: status {response.status_code}: "
                              f"{response.text[:300]}")
        print(f"first visit after the board changed (cold cache), {visits} visits each:")
        for label, found in times.items():
            print(f"  {label:<24} median {statistics.median(found):7.1f} ms, "
                  f"max {max(found):7.1f} ms", flush=True)
        print(f"first visits after the board changed, {self.args.concurrency} at once (each "
              "its own connection, released together):")
        for label, path in urls.items():
            bump()
            time.sleep(1.1)
            found = burst(self.base + path, self.args.concurrency)
            print(f"  {label:<24} median {statistics.median(found):7.1f} ms, "
                  f"max {max(found):7.1f} ms", flush=True)


def burst(url: str, concurrency: int) -> list[float]:
    """The times, in ms, of `concurrency` requests for `url` sent at once from threads of
    their own (a page's first visitors right after a change)."""
    start = threading.Barrier(concurrency)

    def one(_) -> float:
        with httpx.Client(timeout=120) as client:
            start.wait()
            began = time.perf_counter()
            response = client.get(url)
            if response.status_code != 200:
                print(f"  {url}: status {response.status_code}: {response.text[:300]}")
            return 1000 * (time.perf_counter() - began)

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, range(concurrency)))


def bump() -> None:
    """A board change, as a submission published makes it (scoring.boards.board_changed: the
    version raised, published to the front, the worker asked for the new ranges)."""
    from scoring.boards import board_changed

    board_changed(slug="mmae")


def ranges_stored() -> bool:
    """Whether the worker has stored the rank ranges of the board's current state."""
    from leaderboard.boards.state import benchmark_current, board_state

    return board_state(benchmark_current("mmae")).ranged


def wait_for_ranges(timeout: float) -> float:
    """Seconds until the worker has stored the rank ranges of the board's current state."""
    from leaderboard.boards.state import benchmark_current, board_stamp
    from leaderboard.models import RankRanges

    started = time.monotonic()
    while True:
        stamp = board_stamp(benchmark_current("mmae"))
        if set(RankRanges.objects.values_list("state", flat=True)
               .filter(benchmark__slug="mmae")) == {stamp}:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"no rank ranges for {stamp} after {timeout:g} s")
        time.sleep(0.5)


VISITOR = "bench-visitor"  # the signed-in visitor, named on each of their HTML pages


def signed_in_cookie() -> str:
    """The cookies of a visitor signed in, as a browser that logged in sends them: the session
    and the CSRF cookie (the login form set it; each page's logout form renews it). The
    visitor owns none of the board's models, as most signed-in visitors of a board."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils.crypto import get_random_string

    user, _ = get_user_model().objects.get_or_create(username=VISITOR)
    client = Client()
    client.force_login(user)
    return (f"{settings.SESSION_COOKIE_NAME}={client.cookies['sessionid'].value}; "
            f"{settings.CSRF_COOKIE_NAME}={get_random_string(32)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, nargs="+", default=[1000, 10000],
                        help="board sizes measured in turn (the board grows between them)")
    parser.add_argument("--samples", type=int, default=100,
                        help="benchmark size (boards read slice aggregates, not samples)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--cold-visits", type=int, default=5)
    parser.add_argument("--memory-requests", type=int, default=100_000)
    parser.add_argument("--explorer-items", type=int, default=24_700)
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13",
                        help="a scratch Redis database for the broker and cache (flushed)")
    parser.add_argument("--response-cache-url", default="",
                        help="a scratch Redis database for the shared responses (flushed; "
                             "by default the one after --redis-url's, as the settings say)")
    parser.add_argument("--ranges-timeout", type=float, default=1800,
                        help="how long to wait for the worker's rank ranges")
    parser.add_argument("--no-front", action="store_true",
                        help="serve everything through Django (FRONT=false), to compare")
    parser.add_argument("--window", action="store_true",
                        help="measure each page right after a board change, while the worker "
                        "computes the new state's rank ranges (each row says whether they "
                        "arrived before its measurement ended)")
    parser.add_argument("--pages", nargs="+", metavar="LABEL",
                        help="measure only these of the board's pages (their labels in the "
                        "tables, as 'API CSV (1,000 rows)'; by default all)")
    parser.add_argument("--only", choices=("explorer", "cold"),
                        help="measure only this part (the explorer: about a minute; cold: "
                        "the first visits after a change at each size)")
    args = parser.parse_args()

    name, database_url = _scratch.create_database("bench_board")
    work = Path(tempfile.mkdtemp(prefix="board-bench-"))
    # As in production, the web processes share one cache in Redis (scratch databases).
    redis_url = args.redis_url
    response_url = args.response_cache_url or redis_url.rsplit("/", 1)[0] + "/" + str(
        int(redis_url.rsplit("/", 1)[1]) + 1)
    for url in {redis_url, response_url}:
        redis.Redis.from_url(url).flushdb()
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "RESPONSE_CACHE_URL": response_url, "DJANGO_SETTINGS_MODULE": "config.settings",
           "VAR_DIR": str(work / "var"), "STATIC_ROOT": str(work / "static"),
           "ALLOWED_HOSTS": "127.0.0.1,testserver", "LOG_LEVEL": "WARNING",
           "FRONT": "false" if args.no_front else "true",
           # One load generator sends thousands of requests a minute: the API's limits (an
           # anonymous caller counts against both, by address) would answer most with 429.
           "THROTTLE_API_ANON": "off", "THROTTLE_API_USER": "off",
           # Signed in, every pivot and compare page counts as a render
           # (leaderboard.pages.responses).
           "THROTTLE_RENDER": "off"}
    os.environ.update(env)  # this process's Django: board changes, sessions, the worker's ping
    bench = worker = None
    try:
        _scratch.migrate(env)
        with psycopg.connect(database_url, autocommit=True) as conn:
            for (table,) in conn.execute("SELECT tablename FROM pg_tables "
                                         "WHERE schemaname = 'public'").fetchall():
                conn.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')
        subprocess.run(manage("collectstatic", "--noinput", "-v", "0"), env=env, check=True)
        import django

        django.setup()
        from config.celery import app as celery_app

        worker = _scratch.celery_worker(env, 1, work / "worker.log", celery_app)
        meta = synthetic.write_benchmark(work / "bench", args.samples, seed=1)
        subprocess.run(manage("import_mmae", str(meta), "--audio-root", str(work / "bench")),
                       env=env, check=True)
        if args.only != "cold":
            foundation = work / "Foundation_meta.json"
            foundation.write_text(json.dumps(foundation_meta(args.explorer_items, seed=3)))
            subprocess.run(manage("import_airbench", "--foundation", str(foundation)),
                           env=env, check=True)
            started = time.monotonic()
            subprocess.run(manage("seed_board", "--benchmark", "air-bench-foundation",
                                  "--submissions", "1", "--resamples", "20"), env=env,
                           check=True)
            print(f"a foundation submission of {args.explorer_items} items seeded in "
                  f"{time.monotonic() - started:.0f} s")
        base = f"http://127.0.0.1:{args.port}"
        bench = Bench(args, env, base, work, database_url)
        if args.only == "explorer":
            bench.serve()
        cookie = {"Cookie": signed_in_cookie()}
        print(f"the front (config.page_cache): {'off' if args.no_front else 'on'}")
        seeded = 0
        for size in [] if args.only == "explorer" else sorted(args.submissions):
            started = time.monotonic()
            subprocess.run(manage("seed_board", "--benchmark", "mmae", "--submissions",
                                  str(size - seeded), "--resamples", "100"),
                           env=env, check=True)
            print(f"\nseeded {size - seeded} submissions in {time.monotonic() - started:.0f} s;"
                  f" planner statistics: {statistics_state(database_url)}")
            seeded = size
            print(f"rank ranges stored by the worker {wait_for_ranges(args.ranges_timeout):.0f}"
                  " s later")
            bench.serve()
            urls = board_urls(base, args.pages)
            files = bench.same_size_files(urls)
            print(f"{size} submissions on the board; {args.concurrency} concurrent "
                  f"connections ({MEASURE.__name__}), {args.seconds:g} s per URL, gunicorn 2 "
                  "workers x 4 threads")
            if args.only != "cold":
                bench.table(size, "anonymous", urls, files, {})
                bench.table(size, "signed in", urls, files, cookie)
            else:  # as the tables leave it: each process has served each page
                for headers in ({}, cookie):
                    for path in urls.values():
                        bench.measure(path, seconds=1, headers=headers)
            bench.cold(urls, args.cold_visits)
            if args.only == "cold":
                continue
            print(f"rank ranges of the last change stored "
                  f"{wait_for_ranges(args.ranges_timeout):.0f} s after the cold visits")
        if args.only == "cold":
            return
        explorer(bench, base, database_url)
        if args.only:
            return
        bench.summary()
        memory(bench, bench.server)
        print(f"\nplanner statistics at the end: {statistics_state(database_url)}")
    finally:
        _scratch.stop_group(bench.server if bench else None)
        _scratch.stop_group(worker)
        _scratch.close_and_drop(name)
        for url in {redis_url, response_url}:
            redis.Redis.from_url(url).flushdb()
        shutil.rmtree(work, ignore_errors=True)


def board_urls(base: str, labels: list[str] | None = None) -> dict[str, str]:
    """The board's pages measured, by label: `labels` of them, or all."""
    from scoring.models import Item

    html = httpx.get(f"{base}/b/mmae/", timeout=60).text
    top = html.split('href="/b/mmae/compare/?models=')[1].split('"')[0]
    model = html.split('href="/m/')[1].split("/")[0]
    item = Item.objects.filter(benchmark__slug="mmae").order_by("position").first().key
    urls = {
        "board": "/b/mmae/",
        "slice": "/b/mmae/?dimension=modality&bucket=sound",
        "pivot": "/b/mmae/pivot/?dimension=modality&metric=EMR",
        "compare (top two)": f"/b/mmae/compare/?models={top}",
        "model page": f"/m/{model}/",
        "item page": f"/b/mmae/i/{item}/",
        "API (slice, 100 rows)": "/api/leaderboards/mmae/?dimension=operation"
                                 "&bucket=local/removal",
        "API CSV (1,000 rows)": "/api/leaderboards/mmae/?format=csv&page_size=1000",
    }
    unknown = set(labels or ()) - set(urls)
    if unknown:
        sys.exit(f"--pages: no page labelled {', '.join(map(repr, sorted(unknown)))}; the "
                 f"labels: {', '.join(map(repr, urls))}")
    return {label: url for label, url in urls.items() if not labels or label in labels}


# What a browser sends: the explorer's pages are gzipped for it (leaderboard.pages.compression).
BROWSER = {"Accept-Encoding": "gzip, deflate, br"}


def sizes(url: str) -> tuple[int, int, int]:
    """(status, bytes as sent without compression, bytes as sent gzipped) of one URL."""
    plain = httpx.get(url, timeout=60, headers={"Accept-Encoding": "identity"})
    packed = httpx.get(url, timeout=60, headers=BROWSER)
    assert packed.content == plain.content, url
    return plain.status_code, len(plain.content), packed.num_bytes_downloaded


def alone(url: str, requests: int = 30) -> float:
    """The median time of one request at a time (what a page costs, without the queue that
    concurrent connections make on shared cores), in ms."""
    times = []
    with httpx.Client(timeout=60, headers=BROWSER) as client:
        for _ in range(requests):
            started = time.perf_counter()
            client.get(url)
            times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def explorer(bench: Bench, base: str, database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        (pk,) = conn.execute(
            "SELECT s.id FROM submissions_submission s JOIN scoring_benchmark b "
            "ON b.id = s.benchmark_id WHERE b.slug = 'air-bench-foundation'").fetchone()
    html = httpx.get(f"{base}/s/{pk}/", timeout=60)
    assert html.status_code == 200, html.status_code
    last = -(-bench.args.explorer_items // EXPLORER_PAGE_SIZE)
    pages = {"explorer, whole page": f"/s/{pk}/",
             "explorer, page 1": f"/s/{pk}/samples/",
             "explorer, middle page": f"/s/{pk}/samples/?page={last // 2}",
             "explorer, last page": f"/s/{pk}/samples/?page={last}",
             "explorer, failed only": f"/s/{pk}/samples/?failed=on&page=20",
             "explorer, a search": f"/s/{pk}/samples/?q=question+12",
             "a sample's table": f"/s/{pk}/samples/12/rubrics/"}
    print(f"\nexplorer of a {bench.args.explorer_items}-item foundation submission "
          f"({bench.args.concurrency} connections, {bench.args.seconds:g} s per URL, "
          f"Accept-Encoding: gzip as a browser sends it):")
    bench.measure(pages["explorer, page 1"], seconds=2, headers=BROWSER)  # threads started
    worst, largest = 0.0, 0
    for label, path in pages.items():
        status, raw, packed = sizes(base + path)
        _, p95, rate, errors, _ = bench.measure(path, headers=BROWSER)
        worst, largest = max(worst, p95), max(largest, packed)
        print(f"  {label:<24} status {status}, {raw:7d} bytes raw, {packed:6d} gzipped, "
              f"p95 {p95:7.1f} ms, {rate:7.1f} req/s, {errors} errors, one at a time "
              f"{alone(base + path):5.1f} ms", flush=True)
    print(f"  the slowest page's p95: {worst:.1f} ms (target: under 100 ms); the largest "
          f"gzipped: {largest:,} bytes (target: at most 100 KB)")


def memory(bench: Bench, server: subprocess.Popen) -> None:
    before = rss_mb(server)
    sent, started = 0, time.monotonic()
    while sent < bench.args.memory_requests:
        sent += bench.measure("/b/mmae/", seconds=10)[4]
    print(f"\nweb processes' RSS (2 gunicorn workers): {before:.1f} MB before, "
          f"{rss_mb(server):.1f} MB after {sent:,} board requests "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
