"""docker/: the compose file and the images refer to real settings, queues, commands and files.

No Docker engine runs here, so the files are read: compose.yml with PyYAML (its ${VAR:-default}
interpolation done as compose does it), the Dockerfiles line by line.
"""

import re
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import get_commands

from tests.config.image import (
    SERVICES,
    app_environment,
    command,
    dockerfile,
    interpolate,
    run_steps,
    stages,
)
from tests.conftest import ROOT

APP_SERVICES = ("web", "worker", "worker-validate", "worker-rescore", "beat", "simulator")
# Read by boto3 (through django-storages), not by the settings module.
BOTO3_VARIABLES = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
SECRET_KEY = "compose-" + "Zq8vR2mW5tY1uI4oP7aS0dF3gH6jK9lX2cV5bN8mQ1wE4rT7yU"


def option(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def settings_source() -> str:
    """The settings' source: config/settings.py and the part it takes from
    config/settings_pipeline.py."""
    return "".join((ROOT / "config" / name).read_text()
                   for name in ("settings.py", "settings_pipeline.py"))


def test_the_stack_has_every_service():
    assert set(SERVICES) == {"postgres", "redis", "redis-cache", "web", "worker",
                             "worker-validate", "worker-rescore", "beat", "simulator", "judge"}
    assert SERVICES["simulator"]["profiles"] == ["simulator"]
    assert SERVICES["judge"]["profiles"] == ["gpu"]


def test_the_workers_consume_the_queues_the_settings_name():
    scoring, rescoring = command("worker"), command("worker-rescore")
    validating = command("worker-validate")
    assert option(scoring, "-Q") == settings.CELERY_TASK_DEFAULT_QUEUE == "celery"
    assert option(rescoring, "-Q") == settings.SCORING_RESCORE_QUEUE == "rescore"
    assert option(validating, "-Q") == settings.SUBMISSION_VALIDATION_QUEUE == "validation"
    environment = app_environment(SECRET_KEY=SECRET_KEY)
    assert environment["SCORING_RESCORE_QUEUE"] == "rescore"
    assert environment["SUBMISSION_VALIDATION_QUEUE"] == "validation"
    # Workers on one machine need distinct node names.
    assert len({option(words, "-n") for words in (scoring, rescoring, validating)}) == 3


def test_celery_and_web_commands_name_the_project_modules():
    for service in ("worker", "worker-validate", "worker-rescore", "beat"):
        words = command(service)
        assert words[:3] == ["celery", "-A", "config"]
        assert words[3] == ("beat" if service == "beat" else "worker")
    from config.celery import app
    from config.wsgi import application

    assert app.main == "mmae_board" and application is not None
    web = " ".join(command("web"))
    assert "python manage.py migrate --noinput" in web
    # PORT is a variable of the container's shell, unset there: gunicorn binds 8000.
    assert "exec gunicorn config.wsgi -c python:config.gunicorn --bind 0.0.0.0:${PORT:-8000}" \
        in web
    from config import gunicorn

    # The worker that reads requests whole and sends answers without a thread.
    assert gunicorn.worker_class == "config.web_worker.BufferedThreadWorker"
    assert "judge_simulator" in get_commands()
    assert command("simulator")[:3] == ["python", "manage.py", "judge_simulator"]


def test_every_app_variable_is_a_setting_the_app_reads():
    source = settings_source()
    unread = [name for name in SERVICES["web"]["environment"]
              if name not in BOTO3_VARIABLES and f'"{name}"' not in source]
    assert unread == []


def test_the_app_services_share_one_environment_and_the_media_volume():
    for service in APP_SERVICES:
        assert SERVICES[service]["environment"] == SERVICES["web"]["environment"]
    # Uploads are written by the web server and unpacked and read by the workers.
    for service in ("web", "worker", "worker-validate", "worker-rescore"):
        assert "media:/data/media" in SERVICES[service]["volumes"]
    assert app_environment(SECRET_KEY=SECRET_KEY)["MEDIA_ROOT"] == "/data/media"


def test_the_stack_refuses_to_start_without_a_secret_key():
    with pytest.raises(LookupError, match="SECRET_KEY: set SECRET_KEY"):
        app_environment()


@pytest.mark.integration
def test_the_compose_environment_passes_check_deploy():
    env = {**app_environment(SECRET_KEY=SECRET_KEY), "PATH": "/usr/bin:/bin",
           "VAR_DIR": "/tmp/compose-test-var", "MEDIA_ROOT": "/tmp/compose-test-var/media",
           "DJANGO_SETTINGS_MODULE": "config.settings"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
        capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert env["DJANGO_ENV"] == "production"
    assert env["DATABASE_URL"] == "postgres://postgres:postgres@postgres:5432/leaderboard"


def test_the_web_healthcheck_is_valid_python_that_passes_the_https_redirect():
    script = SERVICES["web"]["healthcheck"]["test"][-1]
    compile(script, "healthcheck", "exec")
    assert '"X-Forwarded-Proto": "https"' in script


def test_the_judge_service_runs_the_launch_script_with_its_settings():
    judge = SERVICES["judge"]
    assert (ROOT / judge["build"]["context"].replace("..", ".") / judge["build"]["dockerfile"]) \
        .is_file()
    # The script reads each of its settings as NAME=${NAME:-default}.
    script_settings = set(re.findall(r"^(\w+)=\$\{\1:-", (ROOT / "launch_qwen3_omni.sh")
                                     .read_text(), re.M))
    assert {"MODEL_DIR", "NUM_INSTANCES", "GPUS_PER_INSTANCE"} <= script_settings
    assert set(judge["environment"]) <= script_settings
    instructions = dockerfile("Dockerfile.judge")
    env_names = set(re.findall(r"(\w+)=", dict(instructions)["ENV"]))
    assert env_names <= script_settings
    assert ("COPY", "launch_qwen3_omni.sh /opt/judge/launch_qwen3_omni.sh") in instructions
    assert dict(instructions)["ENTRYPOINT"] == '["bash", "/opt/judge/launch_qwen3_omni.sh"]'
    assert judge["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    host, container, mode = interpolate(judge["volumes"][0], {}).split(":")
    assert host == container == re.search(r"MODEL_DIR=(\S+)", dict(instructions)["ENV"])[1]
    assert mode == "ro"


def test_the_app_image_copies_files_that_exist_and_installs_the_s3_extra():
    (_, wheel), (_, final) = stages("Dockerfile")
    for instruction, arguments in wheel + final:
        if instruction == "COPY" and not arguments.startswith("--from="):
            *sources, _ = arguments.split()
            assert all((ROOT / source).exists() for source in sources), arguments
    assert ("RUN", "pip wheel --no-deps --wheel-dir /wheels .") in wheel
    assert ("COPY", "--from=wheel /wheels /wheels") in final
    # What tests/config/test_image.py leaves to a real build: the system's packages and user,
    # and the dependencies (which the project's .venv stands for).
    left = [step for instruction, arguments in final if instruction == "RUN"
            for step in run_steps(arguments)[1]]
    assert [step.split()[:2] for step in left] == [
        ["apt-get", "update"], ["apt-get", "install"], ["pip", "install"], ["pip", "uninstall"],
        ["useradd", "--system"], ["chown", "app:app"]]
    assert left[2] == "pip install '/tmp/dependencies[s3]'"
    assert ("COPY", "pyproject.toml /tmp/dependencies/") in final
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^s3 = \[", pyproject, re.M)
    runs = " ".join(arguments for instruction, arguments in final if instruction == "RUN")
    assert "python manage.py collectstatic --noinput" in runs
    assert "collectstatic" in get_commands()
    assert dict(final)["CMD"].startswith('["gunicorn", "config.wsgi"')


def test_the_response_cache_has_a_redis_that_evicts_and_the_broker_one_that_never_does():
    cache_server, broker = command("redis-cache"), command("redis")
    assert option(cache_server, "--maxmemory-policy") == "allkeys-lru"
    assert interpolate(option(cache_server, "--maxmemory"), {}) == "256mb"
    assert option(broker, "--maxmemory-policy") == "noeviction"
    environment = app_environment(SECRET_KEY=SECRET_KEY)
    assert environment["RESPONSE_CACHE_URL"] == "redis://redis-cache:6379/0"
    assert environment["REDIS_URL"] == "redis://redis:6379/0"
    assert "redis-cache" in SERVICES["web"]["depends_on"]
