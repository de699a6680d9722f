"""Throughput of the whole submission pipeline (Celery on Redis, PostgreSQL) against the judge
simulator, as a share of the fleet's capacity.

Sets up a scratch PostgreSQL database (bench_pipeline_<pid>) and Redis db 14 (flushed before
and after) as the broker, writes a synthetic full-size set (2,000 samples, 17,741 rubrics,
0.5 s WAVs) and imports it, zips a made-up system's outputs (stored), starts the simulator
(`manage.py judge_simulator`, 2 ports x 32 slots at 200 ms) and `celery -A config worker
--concurrency P`, then submits through the service layer (submission_create with Django File
objects; the worker validates, then scores batch by batch). It waits with a progress bar (the
run's Answer count) and prints, from ScoringRun.status_times, the time from queued to finished
and the whole upload-to-finished time, queries/s, the capacity (endpoints x slots / latency)
and their ratio. In flight at most: JUDGE_CONCURRENCY per endpoint, across every worker process
(the leases in Redis). It also prints each worker process's resident memory (RSS) when the run
is queued, at its peak while scoring and at the end, and its peak over its whole life (VmHWM,
validation included): flat over a full-size run, and bounded with long outputs
(`--long-outputs N`: the first N outputs are `--long-seconds` 48 kHz stereo WAVs).
Every process, the scratch database and Redis db 14 are cleaned up at the end.

    .venv/bin/python bench/pipeline_throughput.py [--processes 2 --judge-concurrency 36
        --batch-items 40 --profile-seconds 0]
    .venv/bin/python bench/pipeline_throughput.py --samples 4 --rubrics 36 --long-outputs 4

With --profile-seconds S, py-spy records each worker process for S seconds once scoring is
under way, and the busiest functions are printed (profiling costs some CPU of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter
from datetime import datetime
from pathlib import Path

import _scratch
import redis

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))
REDIS_URL = "redis://127.0.0.1:6379/14"
TERMINAL = ("finished", "failed", "cancelled")


def sched(pid: int) -> tuple[float, float] | None:
    """(seconds on CPU, seconds runnable but waiting for a CPU) of a process, all threads,
    from /proc/PID/task/*/schedstat."""
    cpu = wait = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                run_ns, wait_ns, _ = Path(task, "schedstat").read_text().split()
            except (OSError, ValueError):
                continue
            cpu, wait = cpu + int(run_ns), wait + int(wait_ns)
    except OSError:
        return None
    return cpu / 1e9, wait / 1e9


def backends(db_name: str) -> list[int]:
    """PostgreSQL server processes connected to the scratch database."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [db_name])
        return [row[0] for row in cursor.fetchall()]


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    kb = _scratch.proc_status_kb(pid, field)
    return None if kb is None else kb / 1024


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class SlotSampler(threading.Thread):
    """Polls the simulator's /simulator/stats: requests holding a slot and waiting for one."""

    def __init__(self, urls: list[str], interval: float = 0.1):
        super().__init__(daemon=True)
        self.urls, self.interval = urls, interval
        self.samples: list[tuple[int, int]] = []  # (in progress, waiting), all endpoints
        self.elapsed = 0.0
        self.stopped = threading.Event()

    def run(self):
        import httpx

        started = time.monotonic()
        with httpx.Client(timeout=5) as client:
            while not self.stopped.wait(self.interval):
                try:
                    stats = [client.get(f"{u}/simulator/stats").json() for u in self.urls]
                except (httpx.HTTPError, ValueError):
                    continue
                self.samples.append((sum(s["in_progress"] for s in stats),
                                     sum(s["waiting"] for s in stats)))
                self.elapsed = time.monotonic() - started

    def stop(self):
        self.stopped.set()
        self.join(timeout=10)


def seconds_between(times: dict, start: str, end: str) -> float:
    return (datetime.fromisoformat(times[end]) - datetime.fromisoformat(times[start])) \
        .total_seconds()


def summarise_profile(path: Path, top: int) -> list[str]:
    """A py-spy raw file (--idle --threads) read as wall time of the worker's main thread:
    where it is, phase by phase (the callee of batch_score, or outside the task), then the
    functions that burn CPU (samples not waiting in select/poll/locks), own and inclusive."""
    phases, own, inclusive = Counter(), Counter(), Counter()
    total = busy = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_short(f) for f in stack.split(";")
                  if not f.startswith("process ") and not f.startswith("thread ")]
        if not frames or not any(f.startswith("_run_module_as_main ") for f in frames):
            continue  # not the main thread (the heartbeat thread, Celery's threads)
        n = int(count)
        total += n
        idle = frames[-1].split(" ")[0].rsplit(".", 1)[-1] in IDLE_LEAVES
        task = _index(frames, "score_batch ")
        if task is None:
            where = "aggregate_run task" if _index(frames, "aggregate_run ") is not None \
                else "outside a task (Celery waiting/fetching)"
        else:
            inner = _index(frames, "batch_score ")
            callee = frames[inner + 1] if inner is not None and inner + 1 < len(frames) \
                else (frames[task + 1] if task + 1 < len(frames) else "score_batch")
            where = f"score_batch > {callee.split(' ')[0]}"
            if callee.startswith("run ") and "asyncio" in callee:  # asyncio.run(_ask(...))
                where += " (waiting on sockets)" if idle else " (CPU in the event loop)"
        phases[where] += n
        if not idle:
            busy += n
            own[frames[-1]] += n
            for frame in set(frames[task + 1:] if task is not None else []):
                inclusive[frame] += n
    if not total:
        return ["  no samples of the main thread"]
    lines = [f"  main thread: {total} samples ({100 * busy / total:.0f}% on CPU)",
             "  wall time by phase:"]
    lines += [f"    {100 * n / total:5.1f}%  {w}" for w, n in phases.most_common()]
    lines += ["  CPU, own:"] + [f"    {100 * n / total:5.1f}%  {f}" for f, n in
                                own.most_common(top)]
    lines += ["  CPU, inclusive below score_batch:"] + [
        f"    {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    return lines


IDLE_LEAVES = {"select", "poll", "epoll", "wait", "acquire", "_recv", "recv", "sleep",
               "_wait_for_tstate_lock", "readinto", "read", "accept", "wait_c", "wait_epoll",
               "wait_select", "wait_poll"}


def _index(frames: list[str], prefix: str) -> int | None:
    return next((i for i, f in enumerate(frames) if f.startswith(prefix)), None)


def _short(frame: str) -> str:
    # "function (path/to/module.py:123)" -> "function (module.py)"; the line varies per sample
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", f"{ROOT}/", "lib/python3"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--rubrics", type=int, default=17741)
    parser.add_argument("--seconds", type=float, default=0.5, help="length of every WAV")
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--processes", type=int, default=2,
                        help="Celery worker processes (--concurrency)")
    parser.add_argument("--judge-concurrency", type=int, default=36,
                        help="JUDGE_CONCURRENCY: in flight per endpoint, all processes "
                             "together (a little above the slots, so none idles)")
    parser.add_argument("--batch-items", type=int, default=40, help="SCORING_BATCH_ITEMS")
    parser.add_argument("--long-outputs", type=int, default=0,
                        help="how many outputs are long 48 kHz stereo WAVs (the memory bound)")
    parser.add_argument("--long-seconds", type=float, default=299.0)
    parser.add_argument("--timeout", type=float, default=900,
                        help="give up when the run has not finished after this many seconds")
    parser.add_argument("--profile-seconds", type=float, default=0,
                        help="py-spy record each worker process this long (0: no profile)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    broker = redis.Redis.from_url(REDIS_URL)
    db_name = simulator = worker = sampler = None
    profilers: list[tuple[int, subprocess.Popen, Path]] = []
    try:
        broker.flushdb()
        db_name, url = _scratch.create_database("bench_pipeline")
        ports = _scratch.free_ports(args.endpoints)
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        env_extra = {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": url, "REDIS_URL": REDIS_URL, "CELERY_BROKER_URL": REDIS_URL,
            "MEDIA_ROOT": str(work / "media"), "VAR_DIR": str(work / "var"),
            "JUDGE_BASE_URLS": ",".join(urls),
            "JUDGE_CONCURRENCY": str(args.judge_concurrency),
            "SCORING_BATCH_ITEMS": str(args.batch_items),
            "SUBMISSIONS_PER_DAY": "1000", "SUBMISSIONS_IN_FLIGHT": "10",
            "LOG_LEVEL": "WARNING",
        }
        os.environ.update(env_extra)
        env = dict(os.environ)
        _scratch.migrate(env)

        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.files import File

        from config.celery import app as celery_app
        from scoring import synthetic
        from scoring.models import Answer, ScoringRun
        from scoring.services import benchmark_import
        from submissions.models import Submission
        from submissions.services import submission_create

        started = time.monotonic()
        bench_root = work / "mmae"
        meta = synthetic.write_benchmark(bench_root, args.samples, seed=1,
                                         n_rubrics=args.rubrics, seconds=args.seconds)
        samples = json.loads(meta.read_text())
        predictions = synthetic.write_system(bench_root, samples, name="bench", seed=2,
                                             fmt="jsonl", seconds=args.seconds)
        if args.long_outputs:
            from fleet_memory import write_long_wav

            for sample in samples[:args.long_outputs]:
                write_long_wav(bench_root / f"systems/bench/{sample['id']}.wav",
                               args.long_seconds)
            print(f"{args.long_outputs} outputs are {args.long_seconds:g} s 48 kHz stereo WAVs",
                  flush=True)
        archive_path = work / "audio.zip"
        with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_STORED) as archive:
            for sample in samples:
                relative = f"systems/bench/{sample['id']}.wav"
                archive.write(bench_root / relative, relative)
        benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=bench_root,
                                        slug="mmae", synthetic=True)
        print(f"synthetic set: {args.samples} samples, {args.rubrics} rubrics, "
              f"{args.seconds:g} s WAVs; archive {archive_path.stat().st_size / 1e6:.1f} MB; "
              f"{time.monotonic() - started:.1f} s to write and import", flush=True)

        simulator = subprocess.Popen(
            _scratch.manage("judge_simulator", "--ports", ",".join(map(str, ports)),
                            "--slots", str(args.slots), "--latency-ms", str(args.latency_ms)),
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
        _scratch.wait_http([f"{u}/health" for u in urls], process=simulator)

        log_path = work / "worker.log"
        worker = _scratch.celery_worker(env, args.processes, log_path, celery_app)
        pool = _scratch.children(worker.pid)
        print(f"worker: {args.processes} processes (pids {pool}), JUDGE_CONCURRENCY "
              f"{args.judge_concurrency} x {args.endpoints} endpoints = "
              f"{args.judge_concurrency * args.endpoints} in flight at most (fleet-wide leases) "
              f"for {args.endpoints * args.slots} slots; SCORING_BATCH_ITEMS {args.batch_items}",
              flush=True)

        user = get_user_model().objects.create_user("bench", "bench@example.com", "pw-bench-1")
        tracked = [worker.pid, *pool, simulator.pid, *_scratch.children(simulator.pid)]
        upload_started = time.time()
        with open(predictions, "rb") as p, open(archive_path, "rb") as a:
            submission = submission_create(
                user=user, benchmark=benchmark, model_name="Bench System", metadata={},
                public=False, predictions=File(p, name="submission.jsonl"),
                archive=File(a, name="audio.zip"))
        print(f"submission {submission.id} stored in {time.time() - upload_started:.2f} s; "
              f"validation queued", flush=True)

        from tqdm import tqdm

        deadline = time.monotonic() + args.timeout
        bar = run = None
        cpu_at_queue = busy_at_queue = None
        profiled = False
        while True:
            submission.refresh_from_db()
            if submission.status == Submission.Status.REJECTED:
                raise SystemExit(f"submission rejected: {submission.report}")
            if submission.current_run_id is not None:
                run = ScoringRun.objects.get(id=submission.current_run_id)
                if bar is None:
                    sampler = SlotSampler(urls)
                    sampler.start()
                    tracked += backends(db_name)
                    cpu_at_queue = {pid: sched(pid) for pid in tracked}
                    busy_at_queue = machine_busy()
                    bar = tqdm(total=run.total_queries, unit="q", smoothing=0.1,
                               mininterval=1.0, file=sys.stdout)
                    rss = {pid: [rss_mb(pid)] * 3 for pid in pool}  # at queue, peak, last
                    quarters = {pid: [] for pid in pool}  # RSS as each quarter is answered
                done = Answer.objects.filter(run_id=run.id).count()
                bar.update(done - bar.n)
                for pid, (first, peak, _) in rss.items():
                    now = rss_mb(pid)
                    if now is not None:
                        rss[pid] = [first, max(peak or 0, now), now]
                        if done >= (len(quarters[pid]) + 1) * run.total_queries / 4:
                            quarters[pid].append(now)
                if (args.profile_seconds and not profiled
                        and done > 0.15 * run.total_queries):
                    profiled = True
                    for pid in pool:
                        out = work / f"pyspy-{pid}.txt"
                        profilers.append((pid, subprocess.Popen(
                            [str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
                             str(pid), "--duration", str(int(args.profile_seconds)),
                             "--rate", "50", "--idle", "--threads", "--format", "raw",
                             "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT), out))
                if run.status in TERMINAL:
                    break
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited:\n{log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out after {args.timeout:g} s; worker log:\n"
                                 f"{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        seen_finished = time.time()
        sampler.stop()
        bar.close()
        # Backends that connected after the queueing started all the time they used.
        late = [pid for pid in backends(db_name) if pid not in tracked]
        cpu_at_queue.update({pid: (0.0, 0.0) for pid in late})
        tracked += late
        cpu_after = {pid: sched(pid) for pid in tracked}
        busy_after = machine_busy()
        submission.refresh_from_db()
        if run.status != "finished":
            raise SystemExit(f"run {run.status}: {run.error}\n{log_path.read_text()[-3000:]}")

        times, sub_times = run.status_times, submission.status_times
        queries = run.total_queries
        queued_to_finished = seconds_between(times, "queued", "finished")
        scoring = seconds_between(times, "scoring", "aggregating")
        aggregating = seconds_between(times, "aggregating", "finished")
        upload_to_finished = (datetime.fromisoformat(times["finished"]).timestamp()
                              - upload_started)
        validation = seconds_between({**sub_times, **times}, "uploaded", "queued")
        capacity = args.endpoints * args.slots / (args.latency_ms / 1000)
        achieved = queries / queued_to_finished
        answers = Answer.objects.filter(run=run)
        failed = answers.exclude(error=None).count()
        retried = answers.filter(attempts__gt=1).count()
        print()
        print(f"queries: {queries} ({answers.count()} answers stored, {failed} failed, "
              f"{retried} retried)")
        print(f"upload to finished (submission_create called -> run finished): "
              f"{upload_to_finished:.1f} s (seen by polling after "
              f"{seen_finished - upload_started:.1f} s)")
        print(f"  validation (uploaded -> queued): {validation:.1f} s")
        print(f"  queued -> scoring: {seconds_between(times, 'queued', 'scoring'):.1f} s; "
              f"scoring -> aggregating: {scoring:.1f} s; aggregating -> finished: "
              f"{aggregating:.1f} s")
        print(f"queued to finished: {queued_to_finished:.1f} s")
        print(f"fleet capacity: {args.endpoints} endpoints x {args.slots} slots / "
              f"{args.latency_ms:g} ms = {capacity:.0f} queries/s")
        print(f"achieved (queued to finished): {achieved:.1f} queries/s = "
              f"{achieved / capacity:.3f} of capacity")
        print(f"achieved (upload to finished): {queries / upload_to_finished:.1f} queries/s = "
              f"{queries / upload_to_finished / capacity:.3f} of capacity")
        print(f"settings: {args.processes} worker processes, JUDGE_CONCURRENCY "
              f"{args.judge_concurrency} per endpoint x {args.endpoints} endpoints, "
              f"SCORING_BATCH_ITEMS {args.batch_items}")
        span = queued_to_finished
        labels = {worker.pid: "celery main", simulator.pid: "simulator",
                  **{pid: f"worker process {pid}" for pid in pool}}
        print("CPU while queued to finished (on CPU / runnable but waiting for a CPU):")
        grouped: dict[str, list[float]] = {}
        for pid in tracked:
            if cpu_at_queue.get(pid) is None or cpu_after.get(pid) is None:
                continue
            label = labels.get(pid, "postgres backends of the scratch db (still connected)")
            used, waited = (cpu_after[pid][i] - cpu_at_queue[pid][i] for i in (0, 1))
            totals = grouped.setdefault(label, [0.0, 0.0])
            totals[0] += used
            totals[1] += waited
        for label, (used, waited) in grouped.items():
            print(f"  {label}: {used:.1f} s ({1000 * used / queries:.2f} ms/query) / "
                  f"{waited:.1f} s waiting for a CPU")
        ours = sum(used for used, _ in grouped.values())
        busy = (busy_after[0] - busy_at_queue[0]) / max(1, busy_after[1] - busy_at_queue[1])
        print(f"machine busy: {100 * busy:.0f}% of {os.cpu_count()} cores = "
              f"{busy * os.cpu_count() * span:.0f} CPU-s, of which the processes above "
              f"{ours:.0f} CPU-s (the rest: this script, Redis, other work on the machine)")
        slots = args.endpoints * args.slots
        scoring_samples = [(p, w) for p, w in sampler.samples if p or w]
        if scoring_samples:
            busy_share = len(scoring_samples) / max(1, len(sampler.samples))
            held = sum(p for p, _ in scoring_samples) / len(scoring_samples)
            waiting = sum(w for _, w in scoring_samples) / len(scoring_samples)
            full = sum(p == slots for p, _ in scoring_samples) / len(scoring_samples)
            print(f"simulator slots (sampled every 0.1 s while busy, n={len(scoring_samples)}):"
                  f" {held:.1f} of {slots} held on average ({100 * held / slots:.0f}%), all "
                  f"held {100 * full:.0f}% of the time, {waiting:.1f} requests waiting")
            hold = held * busy_share * sampler.elapsed / queries
            print(f"  busy {100 * busy_share:.0f}% of the samples; mean slot hold per query "
                  f"(Little's law) {1000 * hold:.0f} ms against {args.latency_ms:g} ms "
                  f"configured")
        for pid, (first, peak, last) in rss.items():
            print(f"worker process {pid} RSS: {first:.0f} MB when the run was queued, peak "
                  f"{peak:.0f} MB while scoring (sampled every 0.5 s), {last:.0f} MB at the end; "
                  f"peak over its life (VmHWM, validation included) {rss_mb(pid, 'VmHWM'):.0f} MB; "
                  f"as each quarter of the answers was stored: "
                  + ", ".join(f"{q:.0f}" for q in quarters[pid]) + " MB")
        latencies = sorted(answers.values_list("latency_ms", flat=True))
        if latencies:
            def pct(q):
                return latencies[min(len(latencies) - 1, int(q * len(latencies)))]
            print(f"judge latency seen by the workers (queueing included): mean "
                  f"{sum(latencies) / len(latencies):.0f} ms, p50 {pct(0.5):.0f}, p90 "
                  f"{pct(0.9):.0f}, p99 {pct(0.99):.0f}, max {latencies[-1]:.0f}")
        for pid, process, out in profilers:
            process.wait(timeout=args.profile_seconds + 60)
            if out.exists():
                print(f"py-spy profile of worker process {pid} "
                      f"({args.profile_seconds:g} s at 50 Hz):")
                print("\n".join(summarise_profile(out, 14)))
    finally:
        if sampler is not None:
            sampler.stop()
        for _, process, _ in profilers:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
        _scratch.stop_group(worker)
        _scratch.stop_group(simulator)
        _scratch.close_and_drop(db_name)
        broker.flushdb()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
