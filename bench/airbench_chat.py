"""AIR-Bench chat on the real metadata: import, a made-up system's responses scored (both
passes) through the pipeline against the judge simulator, aggregation and the results files.

Sets up a scratch PostgreSQL database (bench_airbench_<pid>) and Redis db 14 (flushed before
and after) as the broker, imports the Chat_meta.json given by path (`import_airbench --chat`,
timed as a command), starts the simulator (`manage.py judge_simulator`, 2 ports x 32 slots at
200 ms) and `celery -A config worker --concurrency P`, creates a run of one response per item
(every tenth item left unanswered) through scoring.runs and queues its batches as an upload
does. Prints the item count, the judge queries per second from queued to finished (the
aggregation included) against the fleet's capacity, and the overall figures. Everything is
dropped at the end.

    .venv/bin/python bench/airbench_chat.py ../shared/airbench/Chat_meta.json \
        [--batch-items 200 --latency-ms 200 --processes 2 --judge-concurrency 36]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import _scratch

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))


REDIS_URL = "redis://127.0.0.1:6379/14"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("meta", help="path to Chat_meta.json")
    parser.add_argument("--batch-items", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--processes", type=int, default=2,
                        help="Celery worker processes (--concurrency)")
    parser.add_argument("--judge-concurrency", type=int, default=36,
                        help="JUDGE_CONCURRENCY: in flight per endpoint, all processes together")
    args = parser.parse_args()
    import redis

    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()
    work = Path(tempfile.mkdtemp(prefix="bench-airbench-"))
    name, url = _scratch.create_database("bench_airbench")
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": url,
        "REDIS_URL": REDIS_URL, "CELERY_BROKER_URL": REDIS_URL, "VAR_DIR": str(work / "var"),
        "JUDGE_CONCURRENCY": str(args.judge_concurrency),
        "SCORING_BATCH_ITEMS": str(args.batch_items), "LOG_LEVEL": "WARNING",
    })
    env = dict(os.environ)
    simulator = worker = None
    try:
        _scratch.migrate(env)
        started = time.monotonic()
        done = subprocess.run(_scratch.manage("import_airbench", "--chat", args.meta), env=env,
                              cwd=ROOT, capture_output=True, text=True, check=True)
        print(f"{done.stdout.strip()} (command: {time.monotonic() - started:.2f} s wall)")
        ports = _scratch.free_ports(2)
        simulator = subprocess.Popen(
            _scratch.manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                            "--latency-ms", str(args.latency_ms), "--slots", str(args.slots)),
            env=env, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        _scratch.wait_http([f"{u}/health" for u in urls], process=simulator)
        import django

        django.setup()
        from config.celery import app as celery_app

        worker = _scratch.celery_worker(env, args.processes, work / "worker.log", celery_app)
        score(urls, args)
    finally:
        _scratch.stop_group(worker)
        _scratch.stop_group(simulator)
        _scratch.close_and_drop(name)
        broker.flushdb()
        shutil.rmtree(work, ignore_errors=True)


def score(urls: list[str], args) -> None:
    from django.conf import settings

    from scoring import exports, runs
    from scoring.judge_configs import judge_config_create
    from scoring.models import Benchmark, ScoringRun, SliceResult
    from scoring.tasks import enqueue_run

    benchmark = Benchmark.objects.get(slug="air-bench-chat")
    keys = list(benchmark.items.order_by("position").values_list("key", flat=True))
    outputs = {k: f"The audio holds what the question asks about ({k})."
               for i, k in enumerate(keys) if i % 10}
    config = judge_config_create(actor=None, kind=benchmark.kind, name="bench",
                                 judge_model=settings.JUDGE_MODEL, base_urls=urls,
                                 rounds=2, sampling={"temperature": 0.0, "max_tokens": 16},
                                 seed=0, max_attempts=3)
    started = time.monotonic()
    run = runs.run_create(benchmark=benchmark, audio_root="", outputs=outputs,
                          missing={k: "no prediction" for k in keys if k not in outputs},
                          config=config)
    created = time.monotonic() - started
    enqueue_run(run.id)
    while run.status not in ("finished", "failed", "cancelled"):
        time.sleep(0.5)
        run = ScoringRun.objects.get(id=run.id)
    if run.status != "finished":
        raise SystemExit(f"run {run.status}: {run.error}")
    times = {k: datetime.fromisoformat(v) for k, v in run.status_times.items()}
    queued = (times["finished"] - times["queued"]).total_seconds()
    aggregation = (times["finished"] - times["aggregating"]).total_seconds()
    started = time.monotonic()
    lines = sum(1 for _ in exports.file_chunks(run, "results.jsonl"))
    files = time.monotonic() - started
    capacity = len(urls) * args.slots * 1000 / args.latency_ms
    overall = SliceResult.objects.get(run=run, dimension="overall").values
    print(f"items {len(keys)}, answered {len(outputs)}, judge queries {run.total_queries}; "
          f"{args.processes} worker processes, JUDGE_CONCURRENCY {args.judge_concurrency} per "
          f"endpoint, batches of {args.batch_items} items")
    print(f"run created in {created:.2f} s; queued to finished (aggregation included) in "
          f"{queued:.1f} s = {run.total_queries / queued:.1f} queries/s of the fleet's "
          f"{capacity:.0f}/s ({run.total_queries / queued / capacity:.3f}); aggregated in "
          f"{aggregation:.2f} s; results.jsonl ({lines} lines) in {files:.2f} s")
    print(f"overall (simulated): score {overall['score']:.3f}, pass A {overall['pass_A']:.3f}, "
          f"pass B {overall['pass_B']:.3f}, failed {overall['failed']}, "
          f"missing {overall['missing']}")


if __name__ == "__main__":
    main()
