"""Peak memory of a process scoring one long output: a 299 s, 48 kHz stereo WAV (57 MB).

Writes the WAV and a synthetic sample with `--rubrics` rubrics whose edited output it is, starts
the judge simulator, and asks the sample's queries (three rounds per rubric) the way the
scorer does (scoring.jobs.ask_jobs) through one JudgeFleet in this process, `--concurrency`
per endpoint. Prints the process's peak RSS before and after, and the time taken.

    .venv/bin/python bench/fleet_memory.py [--rubrics 9 --endpoints 2 --concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _scratch

sys.path.insert(0, str(_scratch.ROOT))

from fleet_ramp import scorer_jobs  # noqa: E402

from judge.fleet import JudgeFleet  # noqa: E402
from judge.simulator import DEFAULT_MODEL  # noqa: E402
from scoring import synthetic  # noqa: E402
from scoring.jobs import ask_jobs  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_long_wav(path: Path, seconds: float) -> None:
    """Noise, written ten seconds at a time so that writing it leaves the peak alone."""
    import numpy as np
    import soundfile

    rng = np.random.default_rng(0)
    with soundfile.SoundFile(path, "w", samplerate=48000, channels=2,
                             subtype="PCM_16") as wav:
        for start in range(0, int(seconds * 48000), 480000):
            frames = min(480000, int(seconds * 48000) - start)
            wav.write((rng.standard_normal((frames, 2)) * 0.1).astype("float32"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rubrics", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=299.0)
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="per endpoint")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="fleet-memory-"))
    simulator = None
    try:
        meta = synthetic.write_benchmark(work, 1, seed=1, n_rubrics=args.rubrics)
        predictions = synthetic.write_system(work, json.loads(meta.read_text()), name="long",
                                             fmt="jsonl")
        output = work / json.loads(predictions.read_text())["audio_path"]
        write_long_wav(output, args.seconds)
        jobs = scorer_jobs(meta, predictions, work)
        ports = _scratch.free_ports(args.endpoints)
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        simulator = subprocess.Popen(
            _scratch.manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                            "--slots", str(args.concurrency),
                            "--latency-ms", str(args.latency_ms)),
            cwd=_scratch.ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
        _scratch.wait_http([f"{u}/health" for u in urls], process=simulator)

        before = peak_rss_mb()
        errors = []

        async def score():
            async with JudgeFleet(urls, model=DEFAULT_MODEL, concurrency=args.concurrency,
                                  timeout=300) as fleet:
                await ask_jobs(jobs, fleet, lambda job, answer: errors.append(answer.error))

        started = time.monotonic()
        asyncio.run(score())
        took = time.monotonic() - started
        print(f"{len(jobs)} queries about one {output.stat().st_size / 1e6:.0f} MB WAV "
              f"({args.seconds:g} s, 48 kHz stereo), {args.endpoints} x {args.concurrency} in "
              f"flight: {took:.1f} s, {sum(e is not None for e in errors)} failed")
        print(f"peak RSS: {before:.0f} MB before, {peak_rss_mb():.0f} MB after")
    finally:
        _scratch.stop_group(simulator)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
