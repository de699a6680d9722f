"""docker/ without a container engine: the compose file read as compose reads it, and the app
image's stages laid out in folders, each path of the image mapped under the stage's folder.

The laid-out image runs on a Python that cannot see the work tree: a venv of its own whose one
.pth names the project's .venv site-packages (the dependencies; that folder's own .pth files, the
editable install's finder among them, are not processed from there), with the image's PYTHONPATH
and PYTHONSAFEPATH, so that neither the current folder nor a script's folder is searched.
"""

import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import yaml

from tests.conftest import ROOT
from tests.servers import database_url_named

DOCKER = ROOT / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yml").read_text())
SERVICES = COMPOSE["services"]
# $$ is a literal $ (for the container's shell); ${VAR}, ${VAR:-default}, ${VAR:?error}.
VARIABLE = re.compile(r"\$\$|\$\{(\w+)(?::([-?])([^${}]*))?\}")
# A path of the image: "/" at the start of a word, after "=" or an opening quote.
IMAGE_PATH = re.compile(r"(^|[\s'\"=])/(?=[\w.*])")
# RUN steps not run here: the base system's set-up, and the dependencies' installation, which
# the project's .venv stands for (its packages are the same pyproject's).
SYSTEM_STEPS = ("apt-get ", "useradd ", "chown ")
DEPENDENCY_STEPS = re.compile(r"^pip (uninstall |install (?!.*--no-deps))")
PROGRAMS = {"pip": "pip", "gunicorn": "gunicorn", "celery": "celery"}


def interpolate(value, env: dict) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error}, innermost first, and $$."""
    def one(match):
        if match.group(0) == "$$":
            return "\0"
        name, op, arg = match.groups()
        if env.get(name):
            return env[name]
        if op == "?":
            raise LookupError(f"{name}: {arg}")
        return arg or ""

    text = str(value)
    while VARIABLE.search(text):
        text = VARIABLE.sub(one, text)
    return text.replace("\0", "$")


def app_environment(**env) -> dict[str, str]:
    return {name: interpolate(value, env)
            for name, value in SERVICES["web"]["environment"].items()}


def command(service: str, **env) -> list[str]:
    raw = SERVICES[service]["command"]
    words = shlex.split(raw) if isinstance(raw, str) else [str(word) for word in raw]
    return [interpolate(word, env) for word in words]


def dockerfile(name: str) -> list[tuple[str, str]]:
    """(instruction, arguments) per instruction, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / name).read_text())
    return [tuple(line.strip().split(None, 1)) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def stages(name: str = "Dockerfile") -> list[tuple[str, list[tuple[str, str]]]]:
    """(stage name, its instructions) per FROM; a stage without `AS name` is named by index."""
    found = []
    for instruction, arguments in dockerfile(name):
        if instruction == "FROM":
            words = arguments.split()
            named = len(words) == 3 and words[1].upper() == "AS"
            found.append((words[2] if named else str(len(found)), []))
        else:
            found[-1][1].append((instruction, arguments))
    return found


def run_steps(arguments: str) -> tuple[list[str], list[str]]:
    """A RUN's `&&` steps: (those run here, those left to the image build)."""
    steps = [step.strip() for step in arguments.split("&&")]
    left = [step for step in steps
            if step.startswith(SYSTEM_STEPS) or DEPENDENCY_STEPS.match(step)]
    return [step for step in steps if step not in left], left


class IsolatedPython:
    """A venv in `folder` with the .venv's site-packages as its dependencies, and `pip`,
    `gunicorn` and `celery` commands that run their modules on it."""

    def __init__(self, folder: Path):
        self.folder = folder
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)],
                       check=True, timeout=120)
        site = Path(sysconfig.get_path("purelib", vars={"base": str(folder),
                                                        "platbase": str(folder)}))
        (site / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
        for program, module in PROGRAMS.items():
            script = folder / "bin" / program
            script.write_text(f'#!/bin/sh\nexec "{folder}/bin/python" -m {module} "$@"\n')
            script.chmod(0o755)

    def env(self) -> dict[str, str]:
        pip = {name: value for name, value in os.environ.items() if name.startswith("PIP_")}
        return {**pip, "PATH": f"{self.folder}/bin:/usr/bin:/bin", "HOME": str(self.folder),
                "LANG": "C.UTF-8", "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}


@dataclass
class Stage:
    """One stage's filesystem under `root`: its working directory and ENV so far."""

    root: Path
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)

    def inside(self, text: str) -> str:
        """`text` with each path of the image mapped under root."""
        return IMAGE_PATH.sub(lambda match: f"{match.group(1)}{self.root}/", text)

    def path(self, image_path: str) -> Path:
        return self.root / posixpath.join(self.workdir, image_path).lstrip("/")

    def copy(self, arguments: str, stages: dict[str, "Stage"]):
        words = arguments.split()
        flags = dict(word[2:].split("=", 1) for word in words if word.startswith("--"))
        *sources, target = [word for word in words if not word.startswith("--")]
        origin = stages[flags["from"]] if "from" in flags else None
        destination = self.path(target)
        for source in sources:
            found = origin.path(source) if origin else ROOT / source
            if not found.exists():
                raise FileNotFoundError(f"COPY {arguments}: {source} is not there ({found})")
            if found.is_dir():
                shutil.copytree(found, destination, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                into = target.endswith("/") or len(sources) > 1
                (destination if into else destination.parent).mkdir(parents=True,
                                                                      exist_ok=True)
                shutil.copy2(found, destination / found.name if into else destination)

    def run(self, arguments: str, python: IsolatedPython):
        steps, left = run_steps(arguments)
        self.left += left
        if not steps:
            return
        script = self.inside(" && ".join(steps))
        result = subprocess.run(["sh", "-c", script], cwd=self.path("."), capture_output=True,
                                text=True, timeout=300, env={**python.env(), **self.env})
        assert result.returncode == 0, f"RUN {script}\n{result.stdout}{result.stderr}"


@dataclass
class Image:
    """The final stage laid out: its files, ENV and working directory, on `python`."""

    stage: Stage
    python: IsolatedPython

    @property
    def workdir(self) -> Path:
        return self.stage.path(".")

    def env(self, **extra: str) -> dict[str, str]:
        mapped = {name: self.stage.inside(value) for name, value in extra.items()}
        return {**self.python.env(), **self.stage.env, **mapped}

    def run(self, words: list[str], env: dict, timeout: float = 120):
        return subprocess.run(words, cwd=self.workdir, capture_output=True, text=True,
                              timeout=timeout, env=env)

    def start(self, words: list[str], env: dict, log: Path) -> subprocess.Popen:
        """`words` run as the container would, in a process group of its own."""
        with open(log, "w") as out:
            return subprocess.Popen([self.stage.inside(word) for word in words],
                                    cwd=self.workdir, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)


def lay_out(folder: Path, name: str = "Dockerfile") -> Image:
    """Every stage of docker/`name`: WORKDIR, ENV, COPY (also --from a stage) and the RUN steps
    that build files; each stage's root is a folder under `folder`."""
    python = IsolatedPython(folder / "python")
    done: dict[str, Stage] = {}
    for stage_name, instructions in stages(name):
        stage = done[stage_name] = Stage(folder / f"stage-{stage_name}")
        stage.root.mkdir(parents=True)
        for instruction, arguments in instructions:
            if instruction == "WORKDIR":
                stage.workdir = posixpath.join(stage.workdir, arguments)
                stage.path(".").mkdir(parents=True, exist_ok=True)
            elif instruction in ("COPY", "ADD"):
                stage.copy(arguments, done)
            elif instruction == "ENV":
                for word in shlex.split(arguments):
                    variable, value = word.split("=", 1)
                    stage.env[variable] = stage.inside(value)
            elif instruction == "RUN":
                stage.run(arguments, python)
    return Image(stage, python)


def postgres_url() -> str:
    """The PostgreSQL server the suite runs on (tests/servers.py sets DATABASE_URL)."""
    for url in (os.environ.get("DATABASE_URL"), os.environ.get("TEST_DATABASE_URL")):
        if url and urlsplit(url).scheme in ("postgres", "postgresql", "pgsql"):
            return url
    raise AssertionError("these tests need PostgreSQL: run them with `make test`, or give "
                         "TEST_DATABASE_URL=postgres://... to `python -m tests.servers pytest`")


@contextmanager
def scratch_database(purpose: str):
    """A new, empty database on the suite's PostgreSQL server (its URL), dropped afterwards."""
    server = postgres_url()
    name = f"{urlsplit(server).path.lstrip('/') or 'mmae'}_{purpose}_{uuid.uuid4().hex[:8]}"
    maintenance = database_url_named(server, "postgres")  # the suite's own may not exist yet
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url_named(server, name)
    finally:
        with psycopg.connect(maintenance, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
