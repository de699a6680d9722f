"""Helpers shared by the bench scripts: scratch PostgreSQL databases, ports, processes.

Not a benchmark itself; the scripts next to it import it (`import _scratch`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = "postgres://postgres@127.0.0.1:5432/postgres"
PG_BASE = "postgres://postgres@127.0.0.1:5432"


def create_database(prefix: str) -> tuple[str, str]:
    """A new empty database named PREFIX_<pid>; (name, DATABASE_URL)."""
    name = f"{prefix}_{os.getpid()}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return name, f"{PG_BASE}/{name}"


def drop_database(name: str) -> None:
    """Drop a scratch database, disconnecting whoever is still on it."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def close_and_drop(name: str | None) -> None:
    """Close this process's Django connections (if Django is set up) and drop the database."""
    try:
        from django.db import connections

        connections.close_all()
    except Exception:  # noqa: BLE001 - Django may not be set up yet
        pass
    if name:
        drop_database(name)


def manage(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def migrate(env: dict) -> None:
    subprocess.run(manage("migrate", "--noinput", "-v", "0"), env=env, check=True, cwd=ROOT,
                   timeout=300)


def free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_http(urls: list[str], timeout: float = 30, process: subprocess.Popen | None = None):
    """Wait until every URL answers 200 (or raise)."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[:4]} exited with code {process.returncode}")
        try:
            if all(httpx.get(u, timeout=2).status_code == 200 for u in urls):
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"no answer from {urls} within {timeout} s")
        time.sleep(0.2)


def stop_group(process: subprocess.Popen | None, timeout: float = 20) -> None:
    """SIGTERM the process group a Popen(start_new_session=True) leads, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


def children(pid: int) -> list[int]:
    """Direct children of a process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def proc_status_kb(pid: int, field: str) -> int | None:
    """A field of /proc/PID/status in kB (VmRSS, VmHWM, ...), or None if the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def celery_worker(env: dict, processes: int, log_path: Path, app) -> subprocess.Popen:
    """`celery -A config worker` with `processes` pool processes, logging to `log_path`, once
    it answers a ping of `app` (the same broker); stop it with stop_group."""
    with open(log_path, "a") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--concurrency",
             str(processes), "--loglevel", "WARNING", "--without-gossip", "--without-mingle",
             "-n", f"bench{os.getpid()}@%h", "-Q",
             f"{env.get('CELERY_TASK_DEFAULT_QUEUE', 'celery')},"
             f"{env.get('SUBMISSION_VALIDATION_QUEUE', 'validation')}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=1):
        if worker.poll() is not None or time.monotonic() > deadline:
            stop_group(worker)
            raise RuntimeError(f"the worker did not start:\n{log_path.read_text()[-3000:]}")
    return worker
