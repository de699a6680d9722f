"""The app image proven without a container engine: docker/Dockerfile laid out in folders
(tests/config/image.py), checked and migrated in production mode on a Python that sees only
the layout, then every compose service's command started on it against the suite's PostgreSQL
and Redis, and an upload through the API scored and shown on the board."""

import io
import json
import os
import signal
import subprocess
import time
import zipfile

import httpx
import pytest
import redis
from django.conf import settings

from scoring.synthetic import write_benchmark, write_system
from tests.config.image import app_environment, command, lay_out, scratch_database
from tests.conftest import BROKER, CAST_PASSWORD
from tests.httpclient import HTTP
from tests.servers import free_ports

pytestmark = pytest.mark.integration  # builds and runs the image's files in processes

SECRET_KEY = "image-" + "Zq8vR2mW5tY1uI4oP7aS0dF3gH6jK9lX2cV5bN8mQ1wE4rT7yU"
PROXY = {"X-Forwarded-Proto": "https"}  # as the TLS-terminating proxy says (BEHIND_PROXY)
# Where each project module is imported from, and which import finders are installed.
WHERE = ("import importlib, json, sys; print(json.dumps({'files': {name: importlib.import_module"
         "(name).__file__ for name in sys.argv[1:]}, 'finders': [type(f).__name__ for f in "
         "sys.meta_path], 'path': sys.path}))")


def own_packages() -> list[str]:
    return ["config", *(app for app in settings.INSTALLED_APPS
                        if (settings.BASE_DIR / app.split(".")[0]).is_dir())]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    # The wheel stage's `pip wheel` builds with the .venv's setuptools, not in an isolated
    # environment fetched from the package index, so that laying out the image needs no network
    # (`unshare -n make test`). pip reads its `--no-build-isolation` flag from the environment
    # as PIP_NO_BUILD_ISOLATION, whose value is the option's destination, `build_isolation`:
    # "0" turns isolation off. Only the layout sees it; the commands run later do not.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PIP_NO_BUILD_ISOLATION", "0")
        return lay_out(tmp_path_factory.mktemp("image"))


def production(image, database_url: str, **extra):
    return image.env(DJANGO_ENV="production", SECRET_KEY=SECRET_KEY,
                     DATABASE_URL=database_url, REDIS_URL=BROKER,
                     ALLOWED_HOSTS="leaderboard.example.org", **extra)


def test_the_image_imports_the_project_from_its_own_files_only(image):
    env = production(image, "postgres://unused@127.0.0.1/unused")
    result = image.run(["python", "-c", WHERE, *own_packages()], env)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    for name, path in found["files"].items():
        assert path.startswith(f"{image.workdir}/{name}/"), (name, path)
    assert "_EditableFinder" not in found["finders"]
    work_tree = str(settings.BASE_DIR)
    assert [entry for entry in found["path"] if entry.startswith(work_tree)
            and not entry.startswith(f"{work_tree}/.venv/")] == []
    # The image's Python files are the wheel's: its record lists each of them.
    (record,) = image.workdir.glob("mmae_board-*.dist-info/RECORD")
    listed = {line.split(",")[0] for line in record.read_text().splitlines()}
    laid_out = {str(path.relative_to(image.workdir)) for path in image.workdir.rglob("*.py")}
    assert laid_out - listed == {"manage.py"}


def test_the_image_passes_check_deploy_and_migrates_in_production(image):
    with scratch_database("layout") as database_url:
        env = production(image, database_url)
        check = image.run(["python", "manage.py", "check", "--deploy", "--fail-level",
                           "WARNING"], env)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "System check identified no issues" in check.stdout
        migrate = image.run(["python", "manage.py", "migrate", "--noinput"], env, timeout=300)
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr
        for app in ("audit", "judge", "scoring", "submissions", "leaderboard"):
            assert f"Applying {app}.0001" in migrate.stdout
        left = image.run(["python", "manage.py", "migrate", "--check"], env)
        assert left.returncode == 0, left.stdout + left.stderr


class Stack:
    """Compose services started as processes of the laid-out image, one log file each."""

    def __init__(self, image, env: dict, logs):
        self.image, self.env, self.logs, self.processes = image, env, logs, {}

    def start(self, service: str, **compose_env: str):
        words = command(service, **compose_env)
        self.processes[service] = self.image.start(words, self.env, self.log(service))

    def log(self, service: str):
        return self.logs / f"{service}.log"

    def wait(self, predicate, what: str, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for service, process in self.processes.items():
                assert process.poll() is None, \
                    f"{service} exited ({process.returncode}):\n{self.tail(service)}"
            value = predicate()
            if value:
                return value
            time.sleep(0.2)
        logs = "\n".join(f"--- {service}\n{self.tail(service)}" for service in self.processes)
        raise AssertionError(f"timed out waiting for {what}\n{logs}")

    def tail(self, service: str) -> str:
        return self.log(service).read_text()[-3000:]

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def answers(url: str, **kwargs) -> bool:
    try:
        return HTTP.get(url, headers=PROXY, timeout=2, **kwargs).status_code < 500
    except httpx.HTTPError:
        return False


def author_token(image, env) -> str:
    """An author with a confirmed address and an API token, made through manage.py shell."""
    script = ("from allauth.account.models import EmailAddress; "
              "from django.contrib.auth import get_user_model; "
              "from accounts.models import ApiToken; "
              f"user = get_user_model().objects.create_user('author', 'author@example.com', "
              f"'{CAST_PASSWORD}'); "
              "EmailAddress.objects.create(user=user, email=user.email, primary=True, "
              "verified=True); print(ApiToken.issue(user=user, name='compose')[1])")
    result = image.run(["python", "manage.py", "shell", "-c", script], env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()[-1]


def small_upload(root) -> tuple[bytes, bytes]:
    """A 4-sample benchmark under `root` and one system's (predictions, audio archive)."""
    samples = json.loads(write_benchmark(root, 4, seed=8).read_text())
    predictions = write_system(root, samples, name="sys", seed=3, fmt="jsonl")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for sample in samples:
            relative = f"systems/sys/{sample['id']}.wav"
            archive.write(root / relative, relative)
    return predictions.read_bytes(), buffer.getvalue()


@pytest.fixture
def stack(image, tmp_path):
    web_port, *judge_ports = free_ports(3)
    with scratch_database("stack") as database_url:
        compose = {
            "SECRET_KEY": SECRET_KEY, "DATABASE_URL": database_url, "REDIS_URL": BROKER,
            "ALLOWED_HOSTS": "127.0.0.1", "SITE_URL": f"https://127.0.0.1:{web_port}",
            "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend",
            "JUDGE_BASE_URLS": ",".join(f"http://127.0.0.1:{p}" for p in judge_ports),
            "SIMULATOR_PORTS": ",".join(map(str, judge_ports)),
            "WORKER_CONCURRENCY": "1", "RESCORE_CONCURRENCY": "1", "VALIDATION_CONCURRENCY": "1",
        }
        # The services' shared environment, its paths (/data/media, the media volume) in the
        # layout; PORT moves gunicorn off the container's 8000.
        env = image.env(**app_environment(**compose), PORT=str(web_port))
        running = Stack(image, env, tmp_path)
        running.compose, running.base = compose, f"http://127.0.0.1:{web_port}"
        try:
            yield running
        finally:
            running.stop()
            broker = redis.Redis.from_url(BROKER)
            for key in ("celery", "validation", "rescore", "unacked", "unacked_index"):
                broker.delete(key)


@pytest.mark.integration
def test_the_compose_services_score_an_upload_and_show_it_on_the_board(image, stack,
                                                                         tmp_path):
    compose, base = stack.compose, stack.base
    stack.start("simulator", **compose)
    stack.start("web", **compose)  # migrates, then serves
    stack.wait(lambda: answers(f"{base}/admin/login/"), "the web service to answer")
    for service in ("worker", "worker-validate", "worker-rescore", "beat"):  # web healthy
        stack.start(service, **compose)
    stack.wait(lambda: all("ready." in stack.log(worker).read_text()
                           for worker in ("worker", "worker-validate", "worker-rescore")),
               "the workers")
    assert ".> rescore " in stack.log("worker-rescore").read_text()
    assert ".> validation " in stack.log("worker-validate").read_text()
    assert ".> celery " in stack.log("worker").read_text()

    bench = tmp_path / "bench"
    predictions, archive = small_upload(bench)
    imported = image.run(["python", "manage.py", "import_mmae", str(bench / "MMAE-meta.json"),
                          "--audio-root", str(bench), "--slug", "mmae", "--synthetic"],
                         stack.env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    headers = {**PROXY, "Authorization": f"Token {author_token(image, stack.env)}"}
    created = HTTP.post(f"{base}/api/submissions/", headers=headers, timeout=30, data={
        "benchmark": "mmae", "model_name": "Compose Model", "public": "true"}, files={
        "predictions": ("submission.jsonl", predictions), "audio": ("audio.zip", archive)})
    assert created.status_code == 201, created.text
    submission = created.json()["id"]

    def status():
        return HTTP.get(f"{base}/api/submissions/{submission}/", headers=headers,
                         timeout=10).json()["status"]

    stack.wait(lambda: status() == "finished", "the submission to be scored")
    board = HTTP.get(f"{base}/api/leaderboards/mmae/", headers=PROXY, timeout=10).json()
    (row,) = board["rows"]
    assert (row["model"], row["submission"], row["simulated"]) == \
        ("Compose Model", submission, True)
    page = HTTP.get(f"{base}/b/mmae/", headers=PROXY, timeout=10)
    assert page.status_code == 200 and "Compose Model" in page.text
    plain = HTTP.get(f"{base}/b/mmae/", timeout=10)  # production sends plain HTTP to https
    assert plain.status_code == 301 and plain.headers["location"].startswith("https://")
    stack.wait(lambda: "Sending due task" in stack.log("beat").read_text(), "beat to send")
