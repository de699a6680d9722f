"""How long faults delay a submission's run through the whole pipeline in production settings,
and whether the figures come out the same.

Sets up a scratch PostgreSQL database (bench_recovery_<pid>), a Redis server of its own on a
free port (`redis-server --save "" --appendonly no`, so a restart loses everything), the judge
simulator (2 ports x 32 slots at 200 ms), a Celery worker for new work (`-Q celery`, 2
processes), one for validation (`-Q validation`), one for rescoring (`-Q rescore`) and Celery
beat (the sweepers), all with DJANGO_ENV=production. It writes a synthetic benchmark (600
samples, 5,400 rubrics: 16,200 queries in 3 rounds) and submits the same made-up system's
outputs once per run, each time by a new author (private uploads share no judgments): a clean
run first, then one run per fault, injected once a share of the answers is stored (`--at`, 40%)
or once the run is aggregating:

- kill-aggregating: SIGKILL the worker process running the aggregation (the worker starts a
  new process in its place); kill-scoring: SIGKILL a worker process scoring a batch;
- pg-scoring, pg-aggregating: pg_terminate_backend of every database connection of the
  workers and beat (their DATABASE_URL names them by application_name);
- redis-scoring: Redis SIGKILLed and started again, empty, on the same port;
- redis-down: Redis shut down saving its data (SHUTDOWN SAVE, as a Redis with an append-only
  file stops) and started again with it `--redis-down-seconds` (5) later;
- judge-down: the simulator killed, and started again on the same ports after
  `--judge-down-seconds` (60);
- redis-hung: Redis stopped (SIGSTOP: it takes connections and answers nothing) for
  `--hang-seconds` (15), then resumed (SIGCONT) with everything it held;
- slow-clients: the web server as the compose file runs it (`gunicorn config.wsgi -c
  python:config.gunicorn`, WEB_CONCURRENCY 2 as the image sets) gets `--slow-clients` (16)
  uploads trickling their bodies at 1 KB/s (each cut off starts again), while a probe asks for
  the board page one request after another: `--probe-seconds` (10) alone, then as long with
  the slow clients in; their median and worst times are printed;
- judge-garbage: from the run's start, the simulator answers `--garbage-rate` (0.1) of its
  requests with an unreadable reply that differs each time (a misbehaving judge, whose
  replies are no votes: asked again; past SCORING_MAX_LOST_SHARE the run fails on our side),
  and is started again clean after the run.

For each run it prints the time from queued to finished (ScoringRun.status_times), the extra
seconds against the clean run, whether the per-item results, slices and answers are exactly
the clean run's, whether every (rubric, round) has exactly one answer, and the queries lost
on our side and asked again; then a table with the command and the date. Every setting is the
production default (SCORING_STALE_SECONDS 90, SCORING_REQUEUE_SECONDS 120, the sweep every
30 s, JUDGE_LEASE_TTL 30, ...) except JUDGE_CONCURRENCY, 36 per endpoint as
bench/pipeline_throughput.py uses to keep the simulator's slots full. Every process and the
database are cleaned up at the end.

    .venv/bin/python bench/recovery.py [--samples 600 --rubrics 5400 --faults kill-aggregating
        kill-scoring pg-scoring pg-aggregating redis-scoring judge-down redis-hung slow-clients
        judge-garbage redis-down --at 0.4]
    .venv/bin/python bench/recovery.py --samples 75 --rubrics 667 --faults kill-scoring
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from datetime import datetime
from pathlib import Path

import _scratch
import httpx
import redis

ROOT = _scratch.ROOT
sys.path.insert(0, str(ROOT))
TERMINAL = ("finished", "failed", "cancelled")
WORKERS_APP = "recovery-worker"  # application_name of the workers' database connections
# Lines of the worker log that tell how a fault was met.
NOTABLE = ("WARNING", "ERROR", "CRITICAL", "WorkerLostError", "sweeper", "handed back")


class Stack:
    """The production processes on loopback: Redis, the simulator, two workers and beat."""

    def __init__(self, work: Path, args):
        self.work, self.args = work, args
        self.redis_port, self.web_port, *self.sim_ports = _scratch.free_ports(2 + args.endpoints)
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.log = work / "celery.log"
        self.redis = self.simulator = self.web = None
        self.processes: dict[str, subprocess.Popen] = {}
        self.names = {"worker": f"scoring{os.getpid()}@%h",
                      "validation": f"validation{os.getpid()}@%h",
                      "rescore": f"rescore{os.getpid()}@%h"}

    def env(self, db_url: str) -> dict:
        urls = ",".join(f"http://127.0.0.1:{p}" for p in self.sim_ports)
        return {"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_ENV": "production",
                "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1",
                "DATABASE_URL": db_url, "REDIS_URL": self.redis_url,
                "CELERY_BROKER_URL": self.redis_url, "MEDIA_ROOT": str(self.work / "media"),
                "VAR_DIR": str(self.work / "var"), "JUDGE_BASE_URLS": urls,
                "JUDGE_CONCURRENCY": str(self.args.judge_concurrency),
                "SUBMISSIONS_PER_DAY": "1000", "SUBMISSIONS_IN_FLIGHT": "10",
                # The authors' and staff's emails are kept in memory: no SMTP server here.
                "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
                "LOG_LEVEL": "WARNING"}

    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.work)],
            stdout=subprocess.DEVNULL, start_new_session=True)
        client = redis.Redis(port=self.redis_port)
        deadline = time.monotonic() + 20
        while True:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                if self.redis.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def restart_redis(self, keep: bool = False, down: float = 0) -> None:
        """SIGKILL Redis and start it again empty; with `keep`, shut it down saving what it
        holds and start it again with that, `down` seconds later."""
        dump = self.work / "dump.rdb"
        if keep:
            try:
                redis.Redis(port=self.redis_port).shutdown(save=True)
            except redis.ConnectionError:
                pass  # it closes the connection as it goes
        else:
            os.killpg(self.redis.pid, signal.SIGKILL)
            dump.unlink(missing_ok=True)
        self.redis.wait(timeout=30)
        time.sleep(down)
        self.start_redis()

    def hang_redis(self, seconds: float) -> None:
        """Stop Redis (its sockets stay open, nothing is answered) and resume it `seconds`
        later, everything it held kept."""
        os.killpg(self.redis.pid, signal.SIGSTOP)
        timer = threading.Timer(seconds, os.killpg, args=(self.redis.pid, signal.SIGCONT))
        timer.daemon = True
        timer.start()

    def start_simulator(self, env: dict, *options: str) -> None:
        self.simulator = subprocess.Popen(
            _scratch.manage("judge_simulator", "--ports", ",".join(map(str, self.sim_ports)),
                            "--slots", str(self.args.slots),
                            "--latency-ms", str(self.args.latency_ms), *options),
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
        _scratch.wait_http([f"http://127.0.0.1:{p}/health" for p in self.sim_ports],
                           process=self.simulator)

    def stop_simulator(self) -> None:
        os.killpg(self.simulator.pid, signal.SIGKILL)
        self.simulator.wait(timeout=10)

    def start_web(self, env: dict) -> None:
        """The web server as the compose file's `web` service runs it (its static files
        collected first, as the image does)."""
        subprocess.run(_scratch.manage("collectstatic", "--noinput", "-v", "0"), env=env,
                       cwd=ROOT, check=True, timeout=300)
        self.web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "python:config.gunicorn",
             "--bind", f"127.0.0.1:{self.web_port}"],
            env={**env, "WEB_CONCURRENCY": "2"}, cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while board_page(self.web_port, timeout=5) is None:
            if self.web.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the web server did not answer the board page")
            time.sleep(0.5)

    def start_celery(self, env: dict, app) -> None:
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        worker = ["worker", "--loglevel", "INFO", "--without-gossip", "--without-mingle"]
        commands = {
            "worker": [*worker, "-Q", "celery", "-n", self.names["worker"],
                       "--concurrency", str(self.args.processes)],
            "validation": [*worker, "-Q", "validation", "-n", self.names["validation"],
                           "--concurrency", "1"],
            "rescore": [*worker, "-Q", "rescore", "-n", self.names["rescore"],
                        "--concurrency", "1"],
            "beat": ["beat", "--loglevel", "INFO", "--schedule", str(self.work / "beat")],
        }
        with open(self.log, "a") as log:
            for name, command in commands.items():
                self.processes[name] = subprocess.Popen(
                    [*celery, *command], cwd=ROOT, env=env, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=1)) < 2:
            self.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the workers did not start:\n{self.tail()}")

    def check(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.tail()}")

    def pool(self) -> list[int]:
        return _scratch.children(self.processes["worker"].pid)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.redis is not None and self.redis.poll() is None:
            os.killpg(self.redis.pid, signal.SIGCONT)  # a hang cut short by an error
        for process in [*self.processes.values(), self.web, self.simulator, self.redis]:
            _scratch.stop_group(process)


def active_pids(app, stack: Stack, task: str) -> list[int]:
    """Pool processes of the scoring worker running `task` (Celery's inspect)."""
    name = stack.names["worker"].replace("%h", os.uname().nodename)
    replies = app.control.inspect(destination=[name], timeout=0.5).active() or {}
    return [t["worker_pid"] for tasks in replies.values() for t in tasks
            if t["name"] == task and t.get("worker_pid")]


def kill_process(stack: Stack, app, task: str) -> str:
    pids = active_pids(app, stack, task)
    if not pids:
        return ""
    os.kill(pids[0], signal.SIGKILL)
    return f"SIGKILLed worker process {pids[0]} ({task.rsplit('.', 1)[1]})"


def kill_connections(db_name: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = %s AND application_name = %s", [db_name, WORKERS_APP])
        return f"terminated {cursor.fetchone()[0]} database connections of the workers"


def judge_down(stack: Stack, env: dict, seconds: float) -> str:
    stack.stop_simulator()
    timer = threading.Timer(seconds, stack.start_simulator, args=(env,))
    timer.daemon = True
    timer.start()
    return f"judge simulator killed; started again {seconds:g} s later"


def board_page(port: int, timeout: float = 30) -> float | None:
    """Seconds the board page took to answer 200 (as through the proxy: HTTPS), or None."""
    started = time.monotonic()
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/b/mmae/", timeout=timeout,
                             headers={"X-Forwarded-Proto": "https"})
    except httpx.HTTPError:
        return None
    return time.monotonic() - started if response.status_code == 200 else None


def probe(port: int, seconds: float) -> list[float | None]:
    """The board page asked for one request after another for `seconds`: each one's time
    (None: an error, or no answer within 30 s)."""
    times, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        times.append(board_page(port))
    return times


class SlowUploads:
    """Upload requests whose bodies trickle in at about 1 KB/s (256 bytes every 0.25 s), each
    on a thread of its own; one the server cuts off (408, or closed) starts again."""

    BODY = 1_000_000

    def __init__(self, port: int, count: int):
        self.port, self.stopping = port, threading.Event()
        self.cut = self.timeouts = 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._upload, daemon=True) for _ in range(count)]
        for thread in self.threads:
            thread.start()

    def _upload(self) -> None:
        while not self.stopping.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
                    self._trickle(sock)
            except OSError:
                self.stopping.wait(0.25)

    def _trickle(self, sock: socket.socket) -> None:
        sock.sendall((f"POST /api/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"X-Forwarded-Proto: https\r\nContent-Type: multipart/form-data; "
                      f"boundary=slow\r\nContent-Length: {self.BODY}\r\n\r\n").encode())
        sent = 0
        while sent < self.BODY and not self.stopping.wait(0.25):
            if select.select([sock], [], [], 0)[0]:  # the server answered (408) or closed
                with self.lock:
                    self.cut += 1
                    self.timeouts += sock.recv(64).startswith(b"HTTP/1.1 408")
                return
            sock.sendall(b"x" * 256)
            sent += 256

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=15)


def slow_clients(stack: Stack, args) -> str:
    """The board page's times alone, then with slow uploads in, said in words."""
    alone = probe(stack.web_port, args.probe_seconds)
    uploads = SlowUploads(stack.web_port, args.slow_clients)
    time.sleep(3)  # every upload is in
    try:
        loaded = probe(stack.web_port, args.probe_seconds)
    finally:
        uploads.stop()
    return (f"{args.slow_clients} uploads trickling 1 KB/s to the web server; board page "
            f"{times_text(alone)} alone, {times_text(loaded)} with them in; uploads cut "
            f"{uploads.cut} times ({uploads.timeouts} with 408)")


def times_text(times: list[float | None]) -> str:
    done = [t for t in times if t is not None]
    if not done:
        return f"no answer in {len(times)} request(s)"
    failed = len(times) - len(done)
    return (f"median {statistics.median(done) * 1000:.0f} ms, worst "
            f"{max(done) * 1000:.0f} ms over {len(times)} requests"
            + (f", {failed} failed" if failed else ""))


# fault -> (when: a share of the answers stored, "aggregating", or "before" the upload; what)
FAULTS = {
    "kill-aggregating": ("aggregating", "SIGKILL the worker process aggregating"),
    "kill-scoring": ("answers", "SIGKILL a worker process scoring"),
    "pg-scoring": ("answers", "pg_terminate_backend of the workers' connections"),
    "pg-aggregating": ("aggregating", "pg_terminate_backend of the workers' connections"),
    "redis-scoring": ("answers", "Redis restarted empty"),
    "redis-down": ("answers", "Redis down for seconds, back with its data"),
    "judge-down": ("answers", "judge simulator down"),
    "redis-hung": ("answers", "Redis stopped, then resumed"),
    "slow-clients": ("answers", "slow uploads to the web server"),
    "judge-garbage": ("before", "the judge replies garbage to a share of its requests"),
}


def inject(fault: str, *, stack: Stack, app, env: dict, db_name: str, args) -> str:
    """Do the fault; what was done, or "" when it found nothing to hit (then try again)."""
    if fault == "kill-aggregating":
        return kill_process(stack, app, "scoring.tasks.aggregate_run")
    if fault == "kill-scoring":
        return kill_process(stack, app, "scoring.tasks.score_batch")
    if fault in ("pg-scoring", "pg-aggregating"):
        return kill_connections(db_name)
    if fault == "redis-scoring":
        stack.restart_redis()
        return "Redis SIGKILLed and started again empty on the same port"
    if fault == "redis-down":
        stack.restart_redis(keep=True, down=args.redis_down_seconds)
        return (f"Redis shut down saving its data, started again with it "
                f"{args.redis_down_seconds:g} s later")
    if fault == "redis-hung":
        stack.hang_redis(args.hang_seconds)
        return f"Redis SIGSTOPped; SIGCONT {args.hang_seconds:g} s later"
    if fault == "slow-clients":
        return slow_clients(stack, args)
    if fault == "judge-garbage":
        stack.stop_simulator()
        stack.start_simulator(env, "--garbage-rate", str(args.garbage_rate))
        return (f"the simulator started again with --garbage-rate {args.garbage_rate:g} "
                "before the upload")
    return judge_down(stack, env, args.judge_down_seconds)


def restore(fault: str | None, *, stack: Stack, env: dict) -> None:
    """Undo what a fault left for the next run (a garbage-replying judge)."""
    if fault == "judge-garbage":
        stack.stop_simulator()
        stack.start_simulator(env)


def figures(run) -> dict:
    """What a run published and what it was told: per-item results, slices and answers."""
    from scoring.models import Answer

    items = sorted(run.item_results.values_list(
        "item_id", "missing", "values", "passed", "score", "failed"))
    slices = sorted((d, b, n, json.dumps(v, sort_keys=True), json.dumps(i, sort_keys=True))
                    for d, b, n, v, i in run.slices.values_list(
                        "dimension", "bucket", "n", "values", "intervals"))
    answers = list(Answer.objects.filter(run=run).values_list(
        "criterion_id", "round", "choice", "verdict", "score", "error_kind"))
    return {"items": items, "slices": slices, "answers": sorted(answers, key=repr),
            "pairs": len({(a[0], a[1]) for a in answers})}


def one_run(label: str, *, fault: str | None, stack: Stack, app, env: dict, db_name: str,
            upload, args) -> dict:
    """Submit once, inject `fault` at its point, wait for the end; the run's figures."""
    from tqdm import tqdm

    from scoring.models import Answer, RunBatch, ScoringRun

    log_start = stack.log.stat().st_size
    done_what = None
    if fault and FAULTS[fault][0] == "before":
        done_what = inject(fault, stack=stack, app=app, env=env, db_name=db_name, args=args)
    submission = upload(label)
    deadline = time.monotonic() + args.timeout
    run, bar = None, None
    while True:
        submission.refresh_from_db()
        if submission.status == "rejected":
            raise SystemExit(f"submission rejected: {submission.report}")
        if submission.current_run_id is not None:
            run = ScoringRun.objects.get(id=submission.current_run_id)
            if bar is None:
                bar = tqdm(total=run.total_queries, unit="q", desc=label, mininterval=1.0,
                           file=sys.stdout)
            done = Answer.objects.filter(run_id=run.id).count()
            bar.update(done - bar.n)
            if fault and done_what is None and due(fault, run, done, args):
                done_what = inject(fault, stack=stack, app=app, env=env, db_name=db_name,
                                   args=args) or None
                if done_what:
                    at = (f"{done} answers stored" if FAULTS[fault][0] == "answers"
                          else "aggregating")
                    done_what = f"{done_what} at {at}"
                    bar.write(f"{label}: {done_what}")
            if run.status in TERMINAL:
                break
        stack.check()
        if time.monotonic() > deadline:  # a stall: reported as such, the next run goes on
            print(f"\n{label}: not finished after {args.timeout:g} s; log:\n{stack.tail()}")
            if run is None:
                raise SystemExit(f"{label}: the upload was never queued for scoring")
            break
        time.sleep(0.05 if fault and FAULTS[fault][0] == "aggregating" else 0.5)
    if bar is not None:
        bar.close()
    restore(fault, stack=stack, env=env)
    times = run.status_times
    notable = [line for line in stack.log.read_text(errors="replace")[log_start:].splitlines()
               if any(word in line for word in NOTABLE)]
    status = run.status if run.status in TERMINAL else f"{run.status} at --timeout"
    return {"label": label, "fault": fault, "run": run, "status": status,
            "error": run.error, "injected": done_what or ("missed" if fault else ""),
            "seconds": (datetime.fromisoformat(times["finished"])
                        - datetime.fromisoformat(times["queued"])).total_seconds()
            if "finished" in times else None,
            "reclaimed": RunBatch.objects.filter(run=run, claims__gt=1).count(),
            "lost": run.lost_queries,
            "figures": figures(run), "log": notable}


def due(fault: str, run, done: int, args) -> bool:
    if FAULTS[fault][0] == "before":
        return False  # done before the upload
    if FAULTS[fault][0] == "aggregating":
        return run.status == "aggregating"
    return done >= args.at * run.total_queries


def compare(result: dict, clean: dict) -> str:
    """Whether a run's figures are exactly the clean run's, and what differs."""
    mine, theirs = result["figures"], clean["figures"]
    wrong = [part for part in ("items", "slices", "answers") if mine[part] != theirs[part]]
    return "equal" if not wrong else "DIFFER: " + ", ".join(wrong)


def report(results: list[dict], args) -> None:
    clean = results[0]
    print()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"date: {datetime.now().astimezone().isoformat(timespec='seconds')}; "
          f"{clean['run'].total_queries} queries per run ({args.samples} samples, "
          f"{args.rubrics} rubrics x 3 rounds); simulator {args.endpoints} x {args.slots} slots "
          f"at {args.latency_ms:g} ms; {args.processes} worker processes, JUDGE_CONCURRENCY "
          f"{args.judge_concurrency}; SCORING_* defaults")
    header = ("run", "queued->finished", "extra", "figures vs clean",
              "answers (expected) / distinct (rubric, round)", "batches re-claimed",
              "lost, asked again", "fault")
    rows = [header]
    for r in results:
        f, total = r["figures"], r["run"].total_queries
        seconds = "-" if r["seconds"] is None else f"{r['seconds']:.1f} s"
        extra = ("" if r is clean or r["seconds"] is None or clean["seconds"] is None
                 else f"{r['seconds'] - clean['seconds']:+.1f} s")
        rows.append((r["label"] + ("" if r["status"] == "finished" else f" ({r['status']})"),
                     seconds, extra, "-" if r is clean else compare(r, clean),
                     f"{len(f['answers'])} ({total}) / {f['pairs']}", str(r["reclaimed"]),
                     str(r["lost"]), r["injected"]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for r in results:
        if r["error"]:
            print(f"{r['label']}: run error: {r['error']}")
        if r["fault"] and r["log"]:
            print(f"{r['label']}: worker/beat log ({len(r['log'])} notable lines, first 12):")
            print("\n".join("  " + line[:300] for line in r["log"][:12]))


def prepare(work: Path, args):
    """Write and import the synthetic set; a function that submits it for a new author."""
    from django.contrib.auth import get_user_model
    from django.core.files import File

    from scoring import synthetic
    from scoring.services import benchmark_import
    from submissions.services import submission_create

    bench_root = work / "mmae"
    meta = synthetic.write_benchmark(bench_root, args.samples, seed=1, n_rubrics=args.rubrics,
                                     seconds=args.seconds)
    samples = json.loads(meta.read_text())
    predictions = synthetic.write_system(bench_root, samples, name="bench", seed=2, fmt="jsonl",
                                         seconds=args.seconds)
    archive_path = work / "audio.zip"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_STORED) as archive:
        for sample in samples:
            relative = f"systems/bench/{sample['id']}.wav"
            archive.write(bench_root / relative, relative)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=bench_root, slug="mmae",
                                    synthetic=True)

    def upload(label: str):
        user = get_user_model().objects.create_user(label, f"{label}@example.com", "pw-bench-1")
        with open(predictions, "rb") as p, open(archive_path, "rb") as a:
            return submission_create(
                user=user, benchmark=benchmark, model_name=f"Bench System {label}", metadata={},
                public=False, predictions=File(p, name="submission.jsonl"),
                archive=File(a, name="audio.zip"))

    return upload


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", "--fault", nargs="+", choices=list(FAULTS),
                        default=list(FAULTS), help="the faults to run, in this order")
    parser.add_argument("--at", type=float, default=0.4,
                        help="share of the answers stored when a scoring fault is injected")
    parser.add_argument("--judge-down-seconds", type=float, default=60.0)
    parser.add_argument("--redis-down-seconds", type=float, default=5.0,
                        help="how long redis-down keeps Redis stopped")
    parser.add_argument("--hang-seconds", type=float, default=15.0,
                        help="how long redis-hung keeps Redis stopped")
    parser.add_argument("--slow-clients", type=int, default=16,
                        help="slow uploads of slow-clients (the web server has 2 x 4 threads)")
    parser.add_argument("--probe-seconds", type=float, default=10.0,
                        help="how long slow-clients times the board page, alone and loaded")
    parser.add_argument("--garbage-rate", type=float, default=0.1,
                        help="share of the judge's replies that are garbage in judge-garbage")
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--rubrics", type=int, default=5400)
    parser.add_argument("--seconds", type=float, default=0.5, help="length of every WAV")
    parser.add_argument("--endpoints", type=int, default=2)
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--processes", type=int, default=2,
                        help="processes of the scoring worker (--concurrency)")
    parser.add_argument("--judge-concurrency", type=int, default=36)
    parser.add_argument("--timeout", type=float, default=1200,
                        help="give up on a run not finished after this many seconds")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if not 0 < args.at < 1:
        parser.error("--at must be between 0 and 1")
    return args


def main():
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-recovery-"))
    stack = Stack(work, args)
    db_name = None
    try:
        db_name, url = _scratch.create_database("bench_recovery")
        env_extra = stack.env(url)
        os.environ.update(env_extra)
        env = dict(os.environ)
        workers_env = {**env, "DATABASE_URL": f"{url}?application_name={WORKERS_APP}"}
        _scratch.migrate(env)
        stack.start_redis()

        import django

        django.setup()
        from config.celery import app

        started = time.monotonic()
        upload = prepare(work, args)
        print(f"synthetic set: {args.samples} samples, {args.rubrics} rubrics; "
              f"{time.monotonic() - started:.1f} s to write and import", flush=True)
        stack.start_simulator(env)
        stack.start_celery(workers_env, app)
        if "slow-clients" in args.faults:
            stack.start_web(env)
        print(f"scoring worker processes {stack.pool()}, rescore worker, beat; Redis on port "
              f"{stack.redis_port}; simulator on {stack.sim_ports}", flush=True)
        results = []
        for fault in [None, *args.faults]:
            label = fault or "clean"
            results.append(one_run(label, fault=fault, stack=stack, app=app, env=env,
                                   db_name=db_name, upload=upload, args=args))
        report(results, args)
    finally:
        stack.stop()
        _scratch.close_and_drop(db_name)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
