"""`make run` (embedded.run) holds: uploads side by side on SQLite are all scored, a killed
worker is started again, and SIGTERM stops every process it started."""

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.httpclient import HTTP
from tests.servers import free_ports

PASSWORD = "a-Sturdy-passphrase-7"
# What the test process's own settings point at, which embedded.run must choose for itself.
NOT_PASSED_ON = {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "JUDGE_BASE_URLS", "SITE_URL",
                 "VAR_DIR", "MEDIA_ROOT", "STATIC_ROOT", "PORT"}


@pytest.mark.integration
def test_sqlite_connections_use_wal_a_busy_timeout_and_immediate_transactions(tmp_path):
    script = ("import django; django.setup()\n"
              "from django.db import connection, transaction\n"
              "with connection.cursor() as c:\n"
              "    print(c.execute('PRAGMA journal_mode').fetchone()[0])\n"
              "    print(c.execute('PRAGMA busy_timeout').fetchone()[0])\n"
              "with transaction.atomic():\n"
              "    print(connection.connection.in_transaction, connection.transaction_mode)\n"
              "    with connection.cursor() as c:\n"
              # A second connection cannot write while an IMMEDIATE transaction holds the
              # write lock, though this one has only begun (a DEFERRED one would not lock).
              "        import sqlite3\n"
              "        other = sqlite3.connect(connection.settings_dict['NAME'], timeout=0)\n"
              "        try:\n"
              "            other.execute('CREATE TABLE probe (id integer)')\n"
              "        except sqlite3.OperationalError as exc:\n"
              "            print(exc)\n")
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings",
             "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["wal", "30000", "True IMMEDIATE",
                                          "database is locked"]


def stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command's name (state, parent, ...); None once the
    process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children_of(pid: int) -> list[int]:
    """Every process descended from `pid` now."""
    fields = {int(e.name): stat(int(e.name)) for e in Path("/proc").iterdir() if e.name.isdigit()}
    parents = {child: int(f[1]) for child, f in fields.items() if f}
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, of in parents.items() if of == parent]
        found += kids
        frontier += kids
    return found


def running(pid: int) -> bool:
    fields = stat(pid)
    return fields is not None and fields[0] != "Z"


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Embedded:
    """`python -m embedded.run` in a folder of its own, on free ports."""

    def __init__(self, folder: Path, **extra_env: str):
        self.web_port, simulator_a, simulator_b, self.redis_port = free_ports(4)
        self.log_path = folder / "run.log"
        var = folder / "var"
        env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED_ON}
        self.env = {
            **env, "VAR_DIR": str(var), "DATABASE_URL": f"sqlite:///{var / 'db.sqlite3'}",
            "PORT": str(self.web_port), "SIMULATOR_PORTS": f"{simulator_a},{simulator_b}",
            "EMBEDDED_REDIS_PORT": str(self.redis_port), "ACCOUNT_EMAIL_VERIFICATION": "none",
            "SUBMISSIONS_PER_DAY": "50", "SUBMISSIONS_IN_FLIGHT": "10", "THROTTLE_UPLOAD": "off",
            "SUBMISSIONS_RECONCILE_SECONDS": "1", **extra_env,
        }
        self.base = f"http://127.0.0.1:{self.web_port}"
        self.archive = var / "demo" / "uploads" / "demo-system-a.zip"
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "embedded.run"], cwd=ROOT,
                                            env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_for_web()
        self.token = self._token()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _wait_for_web(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"embedded.run exited:\n{self.log()[-3000:]}"
            try:
                if HTTP.get(f"{self.base}/api/", timeout=2).status_code < 500:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError(f"the web server did not answer:\n{self.log()[-3000:]}")

    def _token(self) -> str:
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from django.contrib.auth import get_user_model; get_user_model().objects."
             f"create_user('author', 'author@example.com', {PASSWORD!r})"],
            cwd=ROOT, env=self.env, check=True, capture_output=True, timeout=60)
        response = HTTP.post(f"{self.base}/api/token/",
                              data={"username": "author", "password": PASSWORD}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["token"]

    def upload(self, model_name: str) -> int:
        response = HTTP.post(
            f"{self.base}/api/submissions/", headers={"Authorization": f"Token {self.token}"},
            data={"benchmark": "mmae-demo", "model_name": model_name},
            files={"audio": ("demo-system-a.zip", self.archive.read_bytes())}, timeout=60)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def wait_until_ended(self, submission_id: int, timeout=180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            body = HTTP.get(f"{self.base}/api/submissions/{submission_id}/",
                             headers={"Authorization": f"Token {self.token}"}, timeout=30).json()
            if body["status"] in ("finished", "failed", "rejected"):
                return body
            time.sleep(0.5)
        raise AssertionError(f"submission {submission_id} still {body['status']}:\n"
                             f"{self.log()[-3000:]}")

    def children(self) -> list[int]:
        return children_of(self.process.pid)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def _stacks(tmp_path_factory):
    started: list[Embedded] = []
    yield started
    for stack in started:
        stack.stop()


@pytest.fixture
def embedded(_stacks, tmp_path_factory):
    """The module's `make run`, started once and again only if an earlier test stopped it
    (the SIGTERM test does): each test gets a running one in any order."""
    if not _stacks or _stacks[-1].process.poll() is not None:
        _stacks.append(Embedded(tmp_path_factory.mktemp("embedded")))
    return _stacks[-1]


@pytest.mark.integration
def test_uploads_side_by_side_with_page_loads_are_all_scored(embedded):
    pages = ["/", "/b/mmae-demo/", "/api/leaderboards/mmae-demo/", "/accounts/login/"] * 5

    def load(path):
        return HTTP.get(embedded.base + path, follow_redirects=True, timeout=60).status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        uploads = [pool.submit(embedded.upload, f"Side by side {n}") for n in range(3)]
        loads = list(pool.map(load, pages))
        ids = [upload.result() for upload in uploads]
    assert loads == [200] * len(pages)
    ended = [embedded.wait_until_ended(submission_id) for submission_id in ids]
    assert [body["status"] for body in ended] == ["finished"] * 3, ended
    assert "database is locked" not in embedded.log()


@pytest.mark.integration
def test_a_killed_worker_is_started_again_and_scores_later_uploads(embedded):
    [worker] = [pid for pid in embedded.children()
                if "celery -A config worker --beat" in command_of(pid)
                and stat(pid)[1] == str(embedded.process.pid)]
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while "worker was killed by SIGKILL; restarting in 1 s" not in embedded.log():
        assert time.monotonic() < deadline, embedded.log()[-3000:]
        time.sleep(0.2)
    submission_id = embedded.upload("After the kill")
    assert embedded.wait_until_ended(submission_id)["status"] == "finished"
    assert embedded.process.poll() is None  # the site stayed up throughout


@pytest.mark.integration
def test_sigterm_stops_every_process_it_started(embedded):
    started = embedded.children()
    names = " ".join(command_of(pid) for pid in started)
    for part in ("redis-server", "judge_simulator", "celery", "gunicorn"):
        assert part in names
    embedded.process.send_signal(signal.SIGTERM)
    assert embedded.process.wait(timeout=90) == 0
    deadline = time.monotonic() + 10
    while [pid for pid in started if running(pid)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [command_of(pid) for pid in started if running(pid)] == []
    for port in (embedded.web_port, embedded.redis_port):
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.integration
def test_a_second_run_on_the_same_folder_stops_at_once_saying_what_to_do(tmp_path):
    """One `make run` holds var/: another on the same folder (other ports) would share its
    database, Redis data and beat schedule, so it exits before starting anything."""
    import fcntl

    var = tmp_path / "var"
    var.mkdir()
    with open(var / "run.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242, web on port 8000\n")
        held.flush()
        env = {**os.environ, "VAR_DIR": str(var), "PORT": str(free_ports(1)[0])}
        second = subprocess.run([sys.executable, "-m", "embedded.run"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"another `make run` uses {var} (pid 4242, web on port 8000)" in second.stderr
    assert "VAR_DIR=<folder>" in second.stderr
    assert not (var / "redis").exists()  # nothing was started
