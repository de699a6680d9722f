"""Throughput of `manage.py score` against the judge simulator, as a share of fleet capacity.

Builds a synthetic full-size MMAE set (2,000 samples, 17,741 rubrics, short WAVs), times the
import of its metadata, then scores one system against the simulator and prints:
  - achieved queries per second / capacity (endpoints x slots / latency);
  - the scorer's own CPU time per query.

    .venv/bin/python bench/score_throughput.py [--samples 2000 --rubrics 17741 ...]
"""

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scoring import synthetic  # noqa: E402


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def manage(*args):
    return [sys.executable, str(ROOT / "manage.py"), *args]


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--rubrics", type=int, default=17741)
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=36,
                        help="in flight per endpoint (a little above the slots)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="score-bench-"))
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
           "VAR_DIR": str(work / "var"),
           # import_mmae asks for the board's rank ranges; no worker runs here to take them
           "CELERY_BROKER_URL": "memory://"}
    try:
        started = time.monotonic()
        meta = synthetic.write_benchmark(work / "mmae", args.samples, seed=1,
                                         n_rubrics=args.rubrics)
        samples = json.loads(meta.read_text())
        predictions = synthetic.write_system(work / "mmae", samples, name="bench", seed=2)
        print(f"synthetic set: {args.samples} samples, {args.rubrics} rubrics, "
              f"{time.monotonic() - started:.1f} s to write", flush=True)

        subprocess.run(manage("migrate", "-v", "0"), env=env, check=True, cwd=ROOT)
        started = time.monotonic()
        subprocess.run(manage("import_mmae", str(meta), "--audio-root", str(work / "mmae")),
                       env=env, check=True, cwd=ROOT)
        import_seconds = time.monotonic() - started

        ports = free_ports(args.endpoints)
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        simulator = subprocess.Popen(
            manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                   "--slots", str(args.slots), "--latency-ms", str(args.latency_ms)),
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if all(httpx.get(f"{u}/health", timeout=1).status_code == 200
                           for u in urls):
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("the simulator did not start")
                time.sleep(0.2)
            cpu_before = children_cpu()
            simulator_cpu = process_cpu(simulator.pid)
            started_at = time.time()
            started = time.monotonic()
            subprocess.run(manage(
                "score", "--meta", str(meta), "--predictions", str(predictions),
                "--audio_root", str(work / "mmae"), "--base_urls", ",".join(urls),
                "--output_dir", str(work / "out"), "--concurrency", str(args.concurrency),
                "--timeout", "60"), env=env, check=True, cwd=ROOT)
            wall = time.monotonic() - started
            scorer_cpu = children_cpu() - cpu_before
            simulator_cpu = process_cpu(simulator.pid) - simulator_cpu
            stats = [httpx.get(f"{u}/simulator/stats", timeout=10).json() for u in urls]
        finally:
            simulator.terminate()
            simulator.wait(timeout=30)

        run = json.loads((work / "out" / "run.json").read_text())
        queries = run["queries"]
        capacity = args.endpoints * args.slots / (args.latency_ms / 1000)
        achieved = queries / wall
        print()
        print(f"import_mmae of {args.samples} samples / {args.rubrics} rubrics: "
              f"{import_seconds:.2f} s (process start included)")
        print(f"queries: {queries} in {wall:.1f} s (whole command, start-up and files "
              f"included); failed: {run['failed_queries']}")
        print(f"fleet capacity: {args.endpoints} endpoints x {args.slots} slots / "
              f"{args.latency_ms:g} ms = {capacity:.0f} queries/s")
        print(f"achieved: {achieved:.1f} queries/s = {achieved / capacity:.3f} of capacity "
              f"(--concurrency {args.concurrency})")
        first = min(s["first_busy_at"] for s in stats)
        ramps = [s["all_busy_at"] - s["first_busy_at"] if s["all_busy_at"] else None
                 for s in stats]
        busy = sum(s["busy_slot_seconds"] for s in stats)
        slots = args.endpoints * args.slots
        print(f"first query reached the simulator {first - started_at:.2f} s after the command "
              f"started; every slot busy after: "
              + ", ".join("never" if r is None else f"{r:.3f} s" for r in ramps))
        last = max(s["last_freed_at"] or 0 for s in stats)
        print(f"the last answer left the simulator {started_at + wall - last:.2f} s before the "
              "command ended (the scorer's last answer, its output files, process exit)")
        print(f"slots busy: {busy / (slots * wall):.3f} of the whole command, "
              f"{busy / (slots * (started_at + wall - first)):.3f} from the first query on")
        print(f"scorer CPU: {scorer_cpu:.1f} s = {1000 * scorer_cpu / queries:.2f} ms per query; "
              f"simulator CPU: {1000 * simulator_cpu / queries:.2f} ms per query")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
