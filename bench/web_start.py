"""The web server's start, side by side: gunicorn with config.gunicorn (which preloads the
application in the master and forks its workers) against the same with each worker importing
it itself (`preload_app` off), alternately.

Each round starts gunicorn with --workers 2 on a scratch folder (SQLite, collectstatic run once
before), waits for its first answer, lets both workers finish starting, and stops it; it
reports the seconds to the first answer and the CPU seconds of the whole process tree
(getrusage of the reaped children). Then the medians and the ratio preloaded / not.

    .venv/bin/python bench/web_start.py [--rounds 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _scratch
import httpx
from _scratch import free_ports

ROOT = _scratch.ROOT


def start(env: dict, workers: int, config: str) -> tuple[float, float]:
    (port,) = free_ports(1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", f"python:{config}",
         "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit("gunicorn stopped before it answered")
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.02)
        first = time.monotonic() - started
        time.sleep(3)  # the other workers finish starting
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return first, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        # config.gunicorn with the one setting changed
        (Path(folder) / "each_worker_imports.py").write_text(
            "from config.gunicorn import *  # noqa: F403\npreload_app = False\n")
        env = dict(os.environ, VAR_DIR=str(Path(folder) / "var"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), folder]))
        subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
                       cwd=ROOT, env=env, check=True)
        results: dict[str, list[tuple[float, float]]] = {"preloaded": [], "each worker": []}
        for round_ in range(args.rounds):
            for name, config in (("preloaded", "config.gunicorn"),
                                 ("each worker", "each_worker_imports")):
                first, cpu = start(env, args.workers, config)
                results[name].append((first, cpu))
                print(f"round {round_ + 1} {name:12} first answer {first:5.2f} s, "
                      f"CPU {cpu:5.2f} s")
    medians = {name: (statistics.median(r[0] for r in rows),
                      statistics.median(r[1] for r in rows)) for name, rows in results.items()}
    for name, (first, cpu) in medians.items():
        print(f"median {name:12} first answer {first:5.2f} s, CPU {cpu:5.2f} s")
    (p_first, p_cpu), (e_first, e_cpu) = medians["preloaded"], medians["each worker"]
    print(f"preloaded / each worker: first answer {p_first / e_first:.2f}, "
          f"CPU {p_cpu / e_cpu:.2f}")


if __name__ == "__main__":
    main()
