"""The web server's worker (config.web_worker) beside gunicorn's own threaded worker, side by
side in one run: throughput and latency at rest (wrk on a static file and on the log-in page),
and a page's latency while slow clients trickle uploads in.

    .venv/bin/python bench/web_worker.py [--seconds 10] [--slow 8]

Each server: gunicorn with config.gunicorn, 2 workers x 4 threads, a migrated SQLite
database (the page reads the session and renders a form; no board), in scratch folders.
Needs `wrk` on PATH. Prints, per worker class, requests/s and p50/p99 from wrk, then the
page's median and worst time with SLOW uploads trickling 1 KB/s each, and the ratios
buffered / gthread.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _scratch
import httpx

ROOT = _scratch.ROOT
CLASSES = {"buffered": "config.web_worker.BufferedThreadWorker", "gthread": "gthread"}


def environment(folder: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "REDIS_URL", "RESPONSE_CACHE_URL"}}
    return {**env, "DJANGO_ENV": "development", "VAR_DIR": str(folder),
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}", "THROTTLE_API_ANON": "off",
            "WEB_MIN_RATE": "100", "WEB_HEADER_SECONDS": "120"}


def wrk(url: str, seconds: int) -> tuple[float, float, float]:
    """(requests/s, p50 ms, p99 ms)."""
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout

    def ms(label):
        value, unit = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]

    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return rate, ms("50"), ms("99")


def trickle(port: int, count: int, stop: threading.Event) -> list[threading.Thread]:
    def upload():
        sock = socket.create_connection(("127.0.0.1", port))
        body = 1_000_000
        sock.sendall((f"POST /api/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      f"application/x-www-form-urlencoded\r\nContent-Length: {body}\r\n\r\n"
                      ).encode())
        while not stop.wait(0.25):
            try:
                sock.sendall(b"x" * 256)
            except OSError:
                break
        sock.close()

    threads = [threading.Thread(target=upload, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


def probe(base: str, times: int = 10, timeout: float = 30) -> list[float]:
    taken = []
    for _ in range(times):
        started = time.monotonic()
        try:
            httpx.get(f"{base}/accounts/login/", timeout=timeout).raise_for_status()
            taken.append(time.monotonic() - started)
        except httpx.TimeoutException:
            taken.append(timeout)
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--slow", type=int, default=8)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="web-worker-"))
    prepared = scratch / "prepared"
    prepared.mkdir()
    env = environment(prepared)
    _scratch.migrate(env)
    subprocess.run(_scratch.manage("collectstatic", "--noinput", "-v", "0"), env=env, check=True,
                   cwd=ROOT)
    static = next((prepared / "staticfiles").rglob("site*.css"))
    results = {}
    try:
        for name, worker_class in CLASSES.items():
            folder = scratch / name
            shutil.copytree(prepared, folder)
            (port,) = _scratch.free_ports(1)
            base = f"http://127.0.0.1:{port}"
            server = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "python:config.gunicorn",
                 "--bind", f"127.0.0.1:{port}", "--workers", "2", "--worker-class", worker_class,
                 "--access-logfile", "/dev/null"],
                env=environment(folder), cwd=ROOT, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                _scratch.wait_http([f"{base}/accounts/login/"], process=server)
                probe(base, times=3)
                path = f"/static/{static.relative_to(prepared / 'staticfiles')}"
                at_rest = {"static": wrk(base + path, args.seconds),
                           "page": wrk(base + "/accounts/login/", args.seconds)}
                stop = threading.Event()
                threads = trickle(port, args.slow, stop)
                time.sleep(3)
                slow = probe(base)
                stop.set()
                for thread in threads:
                    thread.join(timeout=5)
                results[name] = (at_rest, slow)
            finally:
                _scratch.stop_group(server)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    for name, (at_rest, slow) in results.items():
        for what, (rate, p50, p99) in at_rest.items():
            print(f"{name:9} {what:7} {rate:8.0f} req/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms")
        print(f"{name:9} page with {args.slow} slow uploads: median "
              f"{statistics.median(slow):.3f} s, worst {max(slow):.3f} s")
    (b_rest, b_slow), (g_rest, g_slow) = results["buffered"], results["gthread"]
    for what in ("static", "page"):
        print(f"ratio buffered/gthread, {what}: throughput {b_rest[what][0] / g_rest[what][0]:.2f}"
              f", p50 {b_rest[what][1] / g_rest[what][1]:.2f}, "
              f"p99 {b_rest[what][2] / g_rest[what][2]:.2f}")
    print(f"ratio buffered/gthread, page with slow uploads (median): "
          f"{statistics.median(b_slow) / statistics.median(g_slow):.3f}")


if __name__ == "__main__":
    main()
