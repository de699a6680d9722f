"""Slow clients against the web server as every deployment runs it (gunicorn with
config.gunicorn, config/web_worker.py): uploads trickling in, headers that never end and readers
that never read hold no thread, so pages keep answering; past WEB_HEADER_SECONDS and WEB_MIN_RATE
a request gets 408; one address holds at most WEB_CONNECTIONS_PER_ADDRESS connections. The same
clients against gunicorn's own threaded worker stall every page: the check can fail."""

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.httpclient import HTTP
from tests.servers import free_ports

pytestmark = pytest.mark.integration

NOT_PASSED_ON = {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "RESPONSE_CACHE_URL"}
THREADS = 2


def environment(folder: Path, prepared: Path, **extra_env: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED_ON}
    return {**env, "DJANGO_ENV": "development", "VAR_DIR": str(folder),
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "STATIC_ROOT": str(prepared / "staticfiles"), **extra_env}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """A migrated database and the collected static files, made once for the module."""
    folder = tmp_path_factory.mktemp("prepared")
    for command in (("migrate", "--noinput", "-v", "0"),
                    ("collectstatic", "--noinput", "-v", "0")):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT,
                       env=environment(folder, folder), check=True, capture_output=True,
                       timeout=120)
    return folder


class Server:
    def __init__(self, folder: Path, prepared: Path, *options: str, **extra_env: str):
        (self.port,) = free_ports(1)
        self.base = f"http://127.0.0.1:{self.port}"
        folder.mkdir()
        shutil.copy(prepared / "db.sqlite3", folder / "db.sqlite3")
        self.env = environment(folder, prepared, **extra_env)
        self.log = open(folder / "web.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "python:config.gunicorn",
             "--bind", f"127.0.0.1:{self.port}", "--workers", "1", "--threads", str(THREADS),
             *options], cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not self.answers("/accounts/login/"):
            assert self.process.poll() is None, (folder / "web.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the web server did not start"
            time.sleep(0.2)

    def answers(self, path: str, timeout: float = 2) -> bool:
        try:
            return HTTP.get(self.base + path, timeout=timeout).status_code == 200
        except httpx.HTTPError:
            return False

    def page_seconds(self, path="/accounts/login/", timeout=20.0) -> float:
        """How long a page takes to answer (`timeout` when it does not)."""
        started = time.monotonic()
        try:
            assert HTTP.get(self.base + path, timeout=timeout).status_code == 200
        except httpx.TimeoutException:
            return timeout
        return time.monotonic() - started

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture
def serve(tmp_path, prepared):
    servers = []

    def start(*options, **env):
        servers.append(Server(tmp_path / f"web{len(servers)}", prepared, *options, **env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


class Trickle:
    """Clients that send a request (or read an answer) a little at a time, on threads of
    their own, until stopped."""

    def __init__(self, server: Server):
        self.server, self.stopping, self.threads = server, threading.Event(), []
        self.socks: list[socket.socket] = []

    def _connect(self, receive_buffer: int | None = None) -> socket.socket:
        sock = socket.socket()
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.connect(("127.0.0.1", self.server.port))
        self.socks.append(sock)
        return sock

    def _run(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def uploads(self, count: int, body_bytes=200_000, every=0.25, piece=256):
        """POSTs of `body_bytes` sent `piece` bytes every `every` seconds (1 KB/s)."""
        def upload():
            sock = self._connect()
            sock.sendall((f"POST /api/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                          f"application/x-www-form-urlencoded\r\n"
                          f"Content-Length: {body_bytes}\r\n\r\n").encode())
            sent = 0
            while sent < body_bytes and not self.stopping.wait(every):
                try:
                    sock.sendall(b"x" * piece)
                except OSError:
                    return
                sent += piece
        for _ in range(count):
            self._run(upload)

    def headers(self, count: int, every=0.5):
        """Requests whose headers never end (a header line every `every` seconds)."""
        def loris():
            sock = self._connect()
            sock.sendall(b"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            number = 0
            while not self.stopping.wait(every):
                try:
                    sock.sendall(f"X-Slow-{number}: 1\r\n".encode())
                except OSError:
                    return
                number += 1
        for _ in range(count):
            self._run(loris)

    def readers(self, count: int):
        """Requests for the API schema (about 90 KB) whose answers are never read."""
        for _ in range(count):
            sock = self._connect(receive_buffer=4096)
            sock.sendall(b"GET /api/schema/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

    def stop(self):
        self.stopping.set()
        for sock in self.socks:
            sock.close()


@pytest.fixture
def trickle():
    made = []

    def start(server):
        made.append(Trickle(server))
        return made[-1]

    yield start
    for one in made:
        one.stop()


def test_slow_uploads_headers_and_readers_hold_no_thread(serve, trickle):
    server = serve(WEB_MIN_RATE="100", WEB_HEADER_SECONDS="60")  # the clients stay the course
    assert server.page_seconds() < 2
    slow = trickle(server)
    slow.uploads(4 * THREADS)
    slow.headers(4 * THREADS)
    slow.readers(4 * THREADS)
    time.sleep(3)  # every slow client is in
    times = [server.page_seconds() for _ in range(5)]
    assert max(times) < 2, times


def test_the_same_clients_stall_gunicorns_own_threaded_worker(serve, trickle):
    server = serve("--worker-class", "gthread")
    slow = trickle(server)
    slow.uploads(THREADS)  # one per thread is enough
    time.sleep(3)
    assert server.page_seconds(timeout=8) == 8


@pytest.fixture
def strict(serve):
    """A server with a short grace, a minimum rate a fair client passes, and a small cap."""
    return serve(WEB_MIN_RATE="4096", WEB_HEADER_SECONDS="1", WEB_CONNECTIONS_PER_ADDRESS="3")


def test_requests_slower_than_the_minimum_rate_get_408_and_fair_ones_arrive_whole(strict):
    sock = socket.create_connection(("127.0.0.1", strict.port))
    sock.sendall(b"POST /api/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n"
                 b"\r\n" + b"x" * 1000)
    sock.settimeout(10)
    started = time.monotonic()
    answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"The request came too slowly." in answer
    assert 1 <= time.monotonic() - started < 5  # 1 s of grace, and 1,000 bytes at 4,096/s
    sock.close()
    # Headers that never end get the same.
    sock = socket.create_connection(("127.0.0.1", strict.port))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    sock.settimeout(10)
    assert sock.recv(4096).startswith(b"HTTP/1.1 408 ")
    sock.close()
    # A body in pieces at a fair pace, with Expect: 100-continue, on a connection kept alive.
    with httpx.Client(base_url=strict.base, timeout=10) as client:
        piece = b"username=author&password=" + b"x" * 100 + b"&"

        def pieces():
            for _ in range(20):
                time.sleep(0.02)
                yield piece
        response = client.post("/api/token/", content=pieces(), headers={
            "Content-Type": "application/x-www-form-urlencoded", "Expect": "100-continue",
            "Content-Length": str(20 * len(piece))})
        assert response.status_code == 400
        assert response.json() == {"errors": ["Unable to log in with provided credentials."]}
        schema = client.get("/api/schema/")
        assert schema.status_code == 200 and len(schema.content) > 50_000
        assert int(schema.headers["Content-Length"]) == len(schema.content)
        assert client.get("/accounts/login/").status_code == 200


def test_one_address_holds_at_most_its_share_of_connections(strict):
    held = [socket.create_connection(("127.0.0.1", strict.port)) for _ in range(3)]
    extra = socket.create_connection(("127.0.0.1", strict.port))
    extra.settimeout(5)
    assert extra.recv(4096).startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    for sock in held + [extra]:
        sock.close()
    time.sleep(0.5)  # the worker sees them close
    assert strict.page_seconds() < 2
