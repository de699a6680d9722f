"""AIR-Bench chat on the real metadata: import, a made-up system's responses scored (both
passes) against the judge simulator, aggregation and the results files.

Sets up a scratch PostgreSQL database (bench_airbench_<pid>), imports the Chat_meta.json given
by path (`import_airbench --chat`, timed as a command), starts the simulator (`manage.py
judge_simulator`, 2 ports x 32 slots at 200 ms), creates a run of one response per item
(every tenth item left unanswered) through scoring.runs and scores its batches in this
process, as a worker would. Prints the item count and the time of each step, the judge queries
per second against the fleet's capacity, and the overall figures. Everything is dropped at the
end.

    .venv/bin/python bench/airbench_chat.py ../shared/airbench/Chat_meta.json \
        [--batch-items 200 --latency-ms 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import _scratch

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("meta", help="path to Chat_meta.json")
    parser.add_argument("--batch-items", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--slots", type=int, default=32)
    args = parser.parse_args()
    name, url = _scratch.create_database("bench_airbench")
    env = {**os.environ, "DATABASE_URL": url}
    simulator = None
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
        os.environ["DATABASE_URL"] = url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        score(urls, args)
    finally:
        _scratch.stop_group(simulator)
        _scratch.close_and_drop(name)


def score(urls: list[str], args) -> None:
    from django.conf import settings

    from scoring import exports, runs
    from scoring.judge_configs import judge_config_create
    from scoring.models import Benchmark, SliceResult

    benchmark = Benchmark.objects.get(slug="air-bench-chat")
    keys = list(benchmark.items.order_by("position").values_list("key", flat=True))
    outputs = {k: f"The audio holds what the question asks about ({k})."
               for i, k in enumerate(keys) if i % 10}
    config = judge_config_create(actor=None, kind=benchmark.kind, name="bench",
                                 judge_model=settings.JUDGE_MODEL, base_urls=urls,
                                 rounds=2, sampling={"temperature": 0.0, "max_tokens": 16},
                                 seed=0, max_attempts=3)
    settings.SCORING_BATCH_ITEMS = args.batch_items
    started = time.monotonic()
    run = runs.run_create(benchmark=benchmark, audio_root="", outputs=outputs,
                          missing={k: "no prediction" for k in keys if k not in outputs},
                          config=config)
    created = time.monotonic() - started
    judge = runs.JudgeSettings(concurrency=args.slots, timeout=60, down_wait=60)
    started = time.monotonic()
    for batch in run.batches.order_by("index"):
        runs.batch_score(batch.id, judge)
    scoring = time.monotonic() - started
    started = time.monotonic()
    assert runs.run_try_aggregate(run.id) and runs.run_aggregate(run.id)
    aggregation = time.monotonic() - started
    started = time.monotonic()
    lines = sum(1 for _ in exports.file_chunks(run, "results.jsonl"))
    files = time.monotonic() - started
    capacity = len(urls) * args.slots * 1000 / args.latency_ms
    overall = SliceResult.objects.get(run=run, dimension="overall").values
    print(f"items {len(keys)}, answered {len(outputs)}, judge queries {run.total_queries}")
    print(f"run created in {created:.2f} s; scored in {scoring:.1f} s = "
          f"{run.total_queries / scoring:.1f} queries/s of the fleet's {capacity:.0f}/s "
          f"({run.total_queries / scoring / capacity:.3f}); aggregated in {aggregation:.2f} s; "
          f"results.jsonl ({lines} lines) in {files:.2f} s")
    print(f"overall (simulated): score {overall['score']:.3f}, pass A {overall['pass_A']:.3f}, "
          f"pass B {overall['pass_B']:.3f}, failed {overall['failed']}, "
          f"missing {overall['missing']}")


if __name__ == "__main__":
    main()
