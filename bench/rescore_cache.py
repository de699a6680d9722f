"""What the judgment cache saves: a first scoring, a rescore of the same outputs under the same
judge config, and a resubmission with a share of its outputs changed.

Makes a scratch PostgreSQL database (bench_rescore_<pid>), a synthetic benchmark with real WAVs
and one system's outputs, and starts the judge simulator (`--endpoints` ports x `--slots` slots
at `--latency-ms`). Each run is scored in this process batch by batch, as a worker does
(scoring.query_loop.batch_score, SCORING_BATCH_ITEMS items per batch). Prints, for each of the three
runs, the judge queries the simulator received and the wall time, and the rescore's time as a
share of the first scoring's. The scratch database and files are always removed.

    .venv/bin/python bench/rescore_cache.py [--samples 200 --changed 0.1 --latency-ms 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _scratch
import httpx

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--changed", type=float, default=0.1,
                        help="share of outputs the resubmission changes")
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=32, help="per endpoint")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rescore-bench-"))
    name, url = _scratch.create_database("bench_rescore")
    os.environ.update(DATABASE_URL=url, VAR_DIR=str(work / "var"), MEDIA_ROOT=str(work / "m"),
                      DJANGO_SETTINGS_MODULE="config.settings", SCORING_BATCH_ITEMS="40")
    simulator = None
    try:
        _scratch.migrate(dict(os.environ))
        import django

        django.setup()
        from scoring import aggregation, query_loop, runs, synthetic
        from scoring.kinds.mmae.predictions import load_predictions
        from scoring.models import JudgeConfig
        from scoring.services import benchmark_import

        root = work / "mmae"
        meta = synthetic.write_benchmark(root, args.samples, seed=1)
        samples = json.loads(meta.read_text())
        predictions = synthetic.write_system(root, samples, name="bench", seed=2)
        benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae",
                                        synthetic=True)
        outputs = {p.sample_id: p.audio_path for p in load_predictions(
            predictions, known_ids={s["id"] for s in samples})}

        ports = _scratch.free_ports(args.endpoints)
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        simulator = subprocess.Popen(
            _scratch.manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                            "--slots", str(args.slots), "--latency-ms", str(args.latency_ms)),
            cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
        _scratch.wait_http([f"{u}/health" for u in urls], process=simulator)
        config = JudgeConfig.objects.create(
            name="bench", judge_model="Qwen3-Omni-30B-A3B-Instruct", base_urls=urls,
            prompt_sha256="bench", rounds=3, sampling={"temperature": 0.0}, seed=0,
            max_attempts=5)
        worker = query_loop.JudgeSettings(concurrency=args.concurrency, timeout=60, down_wait=30)

        def completions() -> int:
            return sum(httpx.get(f"{u}/simulator/stats", timeout=10).json()["completions"]
                       for u in urls)

        def score(label: str, run_outputs: dict) -> float:
            before, started = completions(), time.monotonic()
            run = runs.run_create(benchmark=benchmark, audio_root=str(root),
                                  outputs=run_outputs, missing={}, config=config)
            for batch in run.batches.order_by("index"):
                query_loop.batch_score(batch.id, worker)
            assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
            wall = time.monotonic() - started
            print(f"{label}: {run.total_queries} answers, {completions() - before} judge "
                  f"queries, {wall:.2f} s", flush=True)
            return wall

        print(f"{args.samples} samples; simulator {args.endpoints} x {args.slots} slots at "
              f"{args.latency_ms:g} ms")
        first = score("first scoring", outputs)
        again = score("rescore, same outputs and config", outputs)
        changed = sorted(outputs)[: round(args.changed * len(outputs))]
        resubmitted = dict(outputs)
        for number, key in enumerate(changed):
            path = f"systems/resubmitted/{key}.wav"
            synthetic.write_wav(root / path, seconds=1.0, frequency=300.0 + number, seed=number)
            resubmitted[key] = path
        score(f"resubmission with {len(changed)} of {len(outputs)} outputs changed",
              resubmitted)
        print(f"rescore time / first scoring time: {again / first:.3f}")
    finally:
        _scratch.stop_group(simulator)
        _scratch.close_and_drop(name)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
