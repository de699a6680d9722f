"""Soak: `make run` (python -m embedded.run) under real use by several people for an hour.

Starts embedded.run as a subprocess in a scratch folder of its own (VAR_DIR, a SQLite
DATABASE_URL, MEDIA_ROOT under it; free ports for PORT, SIMULATOR_PORTS and
EMBEDDED_REDIS_PORT; ACCOUNT_EMAIL_VERIFICATION=none so that new authors may upload at once),
everything on 127.0.0.1. Signs up 4 authors through the site's sign-up form and gets each an
API token from POST /api/token/. Each author then uploads a system every minute through
POST /api/submissions/ (real multipart uploads of the demo's files, as `manage.py submit` sends
them: predictions and archive of demo system a, then of system b, then the archive alone, each
under a model name of its own, public), and every upload is followed through
GET /api/submissions/<id>/ to its end. Meanwhile a few visitors (threads, anonymous) read the
home page, the board and its slices, the read API, the pivot, compare, model pages, submission
pages and their sample explorer, one request after another with a short pause.

The soak is about breakage, not about limits: SUBMISSIONS_PER_DAY, SUBMISSIONS_IN_FLIGHT and
the API and upload rate limits are set out of reach through the environment (printed with the
figures), so any refused upload is a failure. At the end (and on the progress line meanwhile)
it prints uploads made, finished, rejected, failed (on our side), still in flight; visitor
requests by status code, 5xx and unanswered, p50/p95 latency; the restarts embedded.run reported
on its console (its "restarting" lines). It exits 1 if any upload was refused, rejected, failed
or cancelled or is still unfinished after the drain, any 5xx was served or a request went
unanswered, or embedded.run died. With --kill-worker-every M it SIGKILLs the Celery worker (a
child of embedded.run) every M minutes, to show that the restarts hold and no upload is lost.
embedded.run's console is kept in the scratch folder, which is removed only when the soak passes.

    .venv/bin/python bench/soak.py [--minutes 60 --authors 4 --visitors 3]
    .venv/bin/python bench/soak.py --minutes 3 --kill-worker-every 1
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import _scratch
import httpx
from tqdm import tqdm

ROOT = _scratch.ROOT
BENCHMARK = "mmae-demo"
TERMINAL = ("finished", "rejected", "failed", "cancelled")
DIMENSIONS = ("complexity", "complexity_group", "modality", "granularity", "operation")
# Set out of reach for the soak, so that no quota or rate refusal passes for a failure.
LIMITS = {"SUBMISSIONS_PER_DAY": "100000", "SUBMISSIONS_IN_FLIGHT": "100000",
          "THROTTLE_UPLOAD": "off", "THROTTLE_API_USER": "off", "THROTTLE_API_ANON": "off",
          # the visitors share one address and ask new comparisons at random: 30 fresh
          # renders a minute (the default) would answer some of them 429
          "THROTTLE_RENDER": "off"}
# Settings of the parent's environment that would point embedded.run away from its own servers.
FOREIGN = ("REDIS_URL", "CELERY_BROKER_URL", "JUDGE_BASE_URLS", "DJANGO_ENV", "STATIC_ROOT",
           "UPLOAD_TEMP_DIR", "SITE_URL")
# embedded.run's console: "worker was killed by SIGKILL; restarting in 1 s", "worker: restarting".
DIED = re.compile(r"^(?P<name>[a-z ]+) (?:was killed by \w+|exited with code -?\d+); "
                  r"restarting in [\d.]+ s$")
RESTARTED = re.compile(r"^(?P<name>[a-z ]+): restarting$")
UPLOAD_TIMEOUT = httpx.Timeout(30.0, read=300.0)
VISIT_TIMEOUT = 30.0
POLL_SECONDS = 3.0


@dataclass
class Upload:
    author: str
    model: str
    sent: float
    id: int | None = None
    status: str = "uploading"
    ended: float | None = None
    problem: str = ""


@dataclass
class Figures:
    """Everything the threads count, under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    uploads: list[Upload] = field(default_factory=list)
    visits: Counter = field(default_factory=Counter)  # status code, or "no answer"
    latencies: list[float] = field(default_factory=list)
    page_latencies: dict[str, list[float]] = field(default_factory=dict)
    unanswered: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    died: Counter = field(default_factory=Counter)
    restarted: Counter = field(default_factory=Counter)
    console_errors: list[str] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)
    kills: int = 0

    def statuses(self) -> Counter:
        with self.lock:
            return Counter(u.status for u in self.uploads)

    def visit(self, page: str, path: str, status, seconds: float) -> None:
        with self.lock:
            self.visits[status] += 1
            if status == "no answer":
                self.unanswered.append(path)
                return
            self.latencies.append(seconds)
            self.page_latencies.setdefault(page, []).append(seconds)
            if status >= 500:
                self.server_errors.append(f"{status} {path}")
            elif status >= 400:
                self.client_errors.append(f"{status} {path}")


# --- embedded.run ---------------------------------------------------------------------------

def run_env(folder: Path) -> dict:
    web, sim_a, sim_b, redis_port = _scratch.free_ports(4)
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    var = folder / "var"
    env.update({"VAR_DIR": str(var), "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
                "MEDIA_ROOT": str(var / "media"), "PORT": str(web),
                "SIMULATOR_PORTS": f"{sim_a},{sim_b}", "EMBEDDED_REDIS_PORT": str(redis_port),
                "ACCOUNT_EMAIL_VERIFICATION": "none", "PYTHONUNBUFFERED": "1", **LIMITS})
    return env


def start_run(env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "embedded.run"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)


def read_console(process: subprocess.Popen, log: Path, figures: Figures) -> None:
    """Copy embedded.run's console to `log`, counting its deaths, restarts and errors."""
    with open(log, "w") as out:
        for line in process.stdout:
            out.write(line)
            text = line.rstrip("\n")
            died, restarted = DIED.match(text), RESTARTED.match(text)
            with figures.lock:
                if died:
                    figures.died[died["name"]] += 1
                if restarted:
                    figures.restarted[restarted["name"]] += 1
                if text.startswith("Traceback") or "ERROR" in text:
                    figures.console_errors.append(text)


def celery_worker_pid(run_pid: int) -> int | None:
    """The Celery worker's main process: a child of embedded.run running `celery ... worker`."""
    for pid in _scratch.children(run_pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"celery" in argv and b"worker" in argv:
            return pid
    return None


def kill_worker_every(minutes: float, run_pid: int, figures: Figures,
                      stop: threading.Event) -> None:
    while not stop.wait(minutes * 60):
        pid = celery_worker_pid(run_pid)
        if pid is None:
            continue  # between a death and its restart
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        with figures.lock:
            figures.kills += 1


# --- authors ------------------------------------------------------------------------------

def sign_up(base: str, number: int) -> tuple[str, str]:
    """An account made through the sign-up form, and an API token from POST /api/token/."""
    username = f"soak-author-{number}"
    password = f"Soak-{number}-{random.getrandbits(64):x}"
    with httpx.Client(base_url=base, timeout=60) as client:
        client.get("/accounts/signup/").raise_for_status()
        response = client.post("/accounts/signup/", data={
            "csrfmiddlewaretoken": client.cookies["csrftoken"], "username": username,
            "email": f"{username}@example.com", "password1": password, "password2": password})
        if response.status_code != 302:
            raise RuntimeError(f"sign-up of {username}: HTTP {response.status_code} "
                               f"{response.text[:500]}")
        response = client.post("/api/token/", data={"username": username, "password": password})
        response.raise_for_status()
        return username, response.json()["token"]


def layouts(demo: Path) -> list[dict[str, Path]]:
    """The demo's systems as authors upload them: predictions and archive, or the archive."""
    uploads, systems = demo / "uploads", demo / "systems"
    return [
        {"predictions": systems / "demo-system-a" / "predictions.json",
         "audio": uploads / "demo-system-a.zip"},
        {"predictions": systems / "demo-system-b" / "submission.jsonl",
         "audio": uploads / "demo-system-b.zip"},
        {"audio": uploads / "demo-system-a.zip"},
    ]


def upload(client: httpx.Client, record: Upload, files: dict[str, Path]) -> None:
    form = {"benchmark": BENCHMARK, "model_name": record.model, "public": "true",
            "organisation": "Soak", "open_weights": str(random.random() < 0.5).lower()}
    try:
        with ExitStack() as stack:
            parts = {part: (path.name, stack.enter_context(open(path, "rb")))
                     for part, path in files.items()}
            response = client.post("/api/submissions/", data=form, files=parts)
    except httpx.HTTPError as exc:
        record.status, record.problem = "refused", f"no answer: {type(exc).__name__}: {exc}"
        return
    if response.status_code != 201:
        record.status = "refused"
        record.problem = f"HTTP {response.status_code}: {response.text[:300]}"
        return
    record.id, record.status = response.json()["id"], "uploaded"


def author(base: str, name: str, token: str, offset: float, every: float, files: list,
           figures: Figures, stop: threading.Event) -> None:
    """One upload every `every` seconds, the first `offset` seconds in."""
    started = time.monotonic()
    headers = {"Authorization": f"Token {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=UPLOAD_TIMEOUT) as client:
        for number in itertools.count(1):
            if stop.wait(max(0.0, started + offset + (number - 1) * every - time.monotonic())):
                return
            record = Upload(author=name, model=f"{name} system {number:03d}",
                            sent=time.monotonic())
            with figures.lock:
                figures.uploads.append(record)
            upload(client, record, files[(number - 1) % len(files)])


def follow(base: str, tokens: dict[str, str], figures: Figures, stop: threading.Event) -> None:
    """Poll every upload not yet at its end; a poll that gets no answer is tried again."""
    clients = {name: httpx.Client(base_url=base, headers={"Authorization": f"Token {t}"},
                                  timeout=VISIT_TIMEOUT) for name, t in tokens.items()}
    try:
        while not stop.wait(POLL_SECONDS):
            with figures.lock:
                open_ = [u for u in figures.uploads if u.id is not None
                         and u.status not in TERMINAL]
            for record in open_:
                poll(clients[record.author], record)
    finally:
        for client in clients.values():
            client.close()


def poll(client: httpx.Client, record: Upload) -> None:
    try:
        response = client.get(f"/api/submissions/{record.id}/")
    except httpx.HTTPError:
        return
    if response.status_code != 200:
        return  # a 5xx here shows in the console's errors; the next poll asks again
    detail = response.json()
    record.status = detail["status"]
    if record.status in TERMINAL:
        record.ended = time.monotonic()
        errors = (detail.get("report") or {}).get("errors") or []
        record.problem = "; ".join(map(str, errors[:3])) or detail.get("failure") or ""


# --- visitors -----------------------------------------------------------------------------

def finished_ids(figures: Figures) -> list[int]:
    with figures.lock:
        return [u.id for u in figures.uploads if u.status == "finished"]


def pages(models: list[int], submissions: list[int]) -> list[tuple[str, str]]:
    """(page, path) that a visitor may ask for next, given the models and submissions seen."""
    board = f"/b/{BENCHMARK}"
    dimension = random.choice(DIMENSIONS)
    found = [("home", "/"), ("board", f"{board}/"),
             ("api board", f"/api/leaderboards/{BENCHMARK}/"),
             ("pivot", f"{board}/pivot/?dimension={dimension}")]
    if len(models) >= 2:
        chosen = ",".join(map(str, random.sample(models, min(len(models), 3))))
        found.append(("compare", f"{board}/compare/?models={chosen}"))
    if models:
        found.append(("model", f"/m/{random.choice(models)}/"))
    if submissions:
        pk = random.choice(submissions)
        # A board has slices once a result is in (before, a slice answers 400: no buckets).
        found += [("slice", f"{board}/?dimension={dimension}"),
                  ("api slice", f"/api/leaderboards/{BENCHMARK}/?dimension={dimension}"),
                  ("submission", f"/s/{pk}/"), ("explorer", f"/s/{pk}/samples/"),
                  ("api submission slices", f"/api/submissions/{pk}/slices/")]
    return found


def visitor(base: str, figures: Figures, stop: threading.Event, pause: float) -> None:
    models: list[int] = []
    with httpx.Client(base_url=base, timeout=VISIT_TIMEOUT, follow_redirects=True) as client:
        while not stop.wait(random.uniform(0, 2 * pause)):
            page, path = random.choice(pages(models, finished_ids(figures)))
            started = time.monotonic()
            try:
                response = client.get(path)
            except httpx.HTTPError:
                figures.visit(page, path, "no answer", time.monotonic() - started)
                continue
            figures.visit(page, path, response.status_code, time.monotonic() - started)
            if page == "board" and response.status_code == 200:
                models = sorted({int(m) for m in re.findall(r'href="/m/(\d+)/"', response.text)})


# --- figures ------------------------------------------------------------------------------

def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def progress_line(figures: Figures) -> str:
    counts = figures.statuses()
    ended = sum(counts[s] for s in TERMINAL) + counts["refused"]
    with figures.lock:
        visits, fives = sum(figures.visits.values()), len(figures.server_errors)
        restarts = sum(figures.restarted.values())
    return (f"uploads {len(figures.uploads)} finished {counts['finished']} rejected "
            f"{counts['rejected']} failed {counts['failed']} refused {counts['refused']} "
            f"in flight {len(figures.uploads) - ended} | visits {visits} 5xx {fives} | "
            f"restarts {restarts}")


def report(figures: Figures, args, command: str, date: str, run_died: str | None) -> list[str]:
    """Print the figures; answer the reasons the soak failed (none: it passed)."""
    counts = figures.statuses()
    in_flight = [u for u in figures.uploads if u.status not in (*TERMINAL, "refused")]
    took = [u.ended - u.sent for u in figures.uploads if u.status == "finished"]
    print(f"\nsoak of `make run` (python -m embedded.run), {date}\n  {command}")
    print(f"  {args.minutes:g} min, {args.authors} authors uploading every "
          f"{args.upload_every:g} s, {args.visitors} visitors, worker SIGKILLed "
          + (f"every {args.kill_worker_every:g} min ({figures.kills} times)"
             if args.kill_worker_every else "never") + f"; {os.cpu_count()} CPUs")
    print("  limits out of reach for the soak: " + " ".join(f"{k}={v}" for k, v in LIMITS.items()))
    print(f"uploads: {len(figures.uploads)} made, {counts['finished']} finished, "
          f"{counts['rejected']} rejected, {counts['failed']} failed (on our side), "
          f"{counts['cancelled']} cancelled, {counts['refused']} refused at upload, "
          f"{len(in_flight)} still in flight")
    print(f"  upload to finished: p50 {percentile(took, 0.5) or 0:.1f} s, "
          f"p95 {percentile(took, 0.95) or 0:.1f} s, max {max(took, default=0):.1f} s")
    for record in figures.uploads:
        if record.status not in ("finished",):
            print(f"  {record.model} (submission {record.id}): {record.status} {record.problem}")
    codes = ", ".join(f"{code}: {n}" for code, n in sorted(figures.visits.items(), key=str))
    print(f"visitor requests: {sum(figures.visits.values())} ({codes or 'none'}); "
          f"5xx: {len(figures.server_errors)}; p50 {ms(percentile(figures.latencies, 0.5))}, "
          f"p95 {ms(percentile(figures.latencies, 0.95))}")
    for page, values in sorted(figures.page_latencies.items()):
        print(f"  {page}: {len(values)} requests, p50 {ms(percentile(values, 0.5))}, "
              f"p95 {ms(percentile(values, 0.95))}")
    answers = figures.server_errors + [f"no answer: {p}" for p in figures.unanswered]
    for line in (answers + figures.client_errors)[:20]:
        print(f"  {line}")
    deaths = ", ".join(f"{k} {v}" for k, v in sorted(figures.died.items())) or "none"
    restarts = ", ".join(f"{k} {v}" for k, v in sorted(figures.restarted.items())) or "none"
    print(f"embedded.run's console: deaths {deaths}; restarts {restarts}; "
          f"{len(figures.console_errors)} error or traceback lines")
    for line in figures.console_errors[:10]:
        print(f"  {line[:300]}")
    problems = [f"{n} uploads {s}" for s, n in counts.items()
                if s in ("refused", "rejected", "failed", "cancelled")]
    problems += [f"{len(in_flight)} uploads unfinished"] if in_flight else []
    problems += [f"{len(figures.server_errors)} responses 5xx"] if figures.server_errors else []
    problems += [f"{len(figures.unanswered)} requests unanswered"] if figures.unanswered else []
    problems += [f"embedded.run {run_died}"] if run_died else []
    print("result: " + ("PASS" if not problems else "FAIL: " + "; ".join(problems)))
    return problems


# --- the soak -----------------------------------------------------------------------------

def started_threads(targets: list[tuple]) -> list[threading.Thread]:
    threads = [threading.Thread(target=t, args=a, daemon=True) for t, *a in targets]
    for thread in threads:
        thread.start()
    return threads


def wait_for_site(base: str, process: subprocess.Popen, env: dict) -> None:
    print(f"starting embedded.run in {env['VAR_DIR']} (web {base}, judge simulator "
          f"{env['SIMULATOR_PORTS']}, redis {env['EMBEDDED_REDIS_PORT']})", flush=True)
    _scratch.wait_http([f"{base}/b/{BENCHMARK}/"], timeout=300, process=process)


def soak(args, process: subprocess.Popen, env: dict, figures: Figures) -> str | None:
    """Run the authors, visitors and killer for the soak's minutes, then drain; answer how
    embedded.run died, if it did."""
    base = f"http://127.0.0.1:{env['PORT']}"
    wait_for_site(base, process, env)
    tokens = dict(sign_up(base, n) for n in range(1, args.authors + 1))
    files = layouts(Path(env["VAR_DIR"]) / "demo")
    stop_load, stop_follow = threading.Event(), threading.Event()
    every = args.upload_every
    load = [(author, base, name, token, i * every / args.authors, every, files, figures,
             stop_load) for i, (name, token) in enumerate(tokens.items())]
    load += [(visitor, base, figures, stop_load, args.pause)] * args.visitors
    if args.kill_worker_every:
        load.append((kill_worker_every, args.kill_worker_every, process.pid, figures, stop_load))
    threads = started_threads(load)
    follower = started_threads([(follow, base, tokens, figures, stop_follow)])
    died = watch(process, figures, args.minutes * 60, "soak", lambda: False)
    stop_load.set()
    for thread in threads:
        thread.join(timeout=UPLOAD_TIMEOUT.read + 10)
    if died is None:
        died = watch(process, figures, args.drain_minutes * 60, "drain",
                     lambda: not any(u.status not in (*TERMINAL, "refused")
                                     for u in figures.uploads))
    stop_follow.set()
    follower[0].join(timeout=VISIT_TIMEOUT * len(figures.uploads) + 10)
    return died


def watch(process: subprocess.Popen, figures: Figures, seconds: float, label: str,
          done) -> str | None:
    """Show the progress line each second for `seconds` or until done(); answer how
    embedded.run died, if it did."""
    deadline = time.monotonic() + seconds
    # One line each half-minute when the console is a file rather than a terminal.
    every = 1 if sys.stderr.isatty() else 30
    with tqdm(total=int(seconds), desc=label, unit="s", dynamic_ncols=True,
              mininterval=every) as bar:
        while time.monotonic() < deadline and not done():
            if process.poll() is not None:
                return f"died: exited with code {process.returncode}"
            time.sleep(1)
            bar.set_postfix_str(progress_line(figures), refresh=False)
            bar.update(int(seconds - max(0.0, deadline - time.monotonic())) - bar.n)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--authors", type=int, default=4)
    parser.add_argument("--upload-every", type=float, default=60, help="seconds, per author")
    parser.add_argument("--visitors", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.5,
                        help="a visitor's mean pause between two requests, in seconds")
    parser.add_argument("--kill-worker-every", type=float, default=0, metavar="MINUTES",
                        help="SIGKILL the Celery worker this often (0: never)")
    parser.add_argument("--drain-minutes", type=float, default=6,
                        help="how long to wait, after the soak, for uploads still in flight")
    args = parser.parse_args()
    command = shlex.join([os.path.relpath(sys.executable, ROOT), *sys.argv])
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    env, figures = run_env(folder), Figures()
    process = start_run(env)
    console = started_threads([(read_console, process, folder / "console.log", figures)])
    try:
        died = soak(args, process, env, figures)
    finally:
        _scratch.stop_group(process, timeout=60)
        console[0].join(timeout=10)
    if died is None and process.returncode != 0:
        died = f"stopped with code {process.returncode} on SIGTERM"
    if report(figures, args, command, date, died):
        print(f"embedded.run's console and files kept in {folder}")
        return 1
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
