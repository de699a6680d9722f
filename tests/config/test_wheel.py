"""The project's wheel (`pip wheel --no-deps .`) holds every app of INSTALLED_APPS that is the
project's own, whole: its modules, migrations, management commands and templates."""

import shutil
import subprocess
import sys
import zipfile

import pytest
from django.conf import settings

from tests.conftest import ROOT

pytestmark = pytest.mark.integration  # builds the wheel with pip

# Built from a copy of the tracked files: setuptools' build/ in the work tree may hold files
# since deleted, which would go into the wheel.
TRACKED = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()


def own_apps() -> list[str]:
    return [app for app in settings.INSTALLED_APPS if (ROOT / app.split(".")[0]).is_dir()]


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in TRACKED:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    # Built with the .venv's setuptools, not in an isolated environment fetched from the
    # package index, and with no index at all: the suite needs no network (`unshare -n make
    # test`), as the image's wheel stage in tests/config/test_image.py.
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                             "--no-build-isolation", "--no-index", "--wheel-dir", str(out),
                             str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("mmae_board-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_the_wheel_holds_every_file_of_every_own_app(wheel_files):
    apps = own_apps()
    assert {"accounts", "audit", "judge", "scoring", "submissions", "leaderboard"} <= set(apps)
    for package in [*apps, "config"]:  # config: the settings, URLs, WSGI and Celery app
        files = [name for name in TRACKED if name.startswith(f"{package}/")]
        assert files, package
        missing = [name for name in files if name not in wheel_files]
        assert missing == [], f"{package}: not in the wheel"


def test_the_wheel_holds_the_migrations_and_commands(wheel_files):
    assert "audit/migrations/0001_initial.py" in wheel_files
    assert "scoring/management/commands/judge_simulator.py" in wheel_files
    migrations = {name.split("/")[0] for name in wheel_files if "/migrations/0001_" in name}
    assert migrations == {app for app in own_apps() if (ROOT / app / "migrations").is_dir()}


def test_the_wheel_holds_nothing_but_the_project_packages(wheel_files):
    top = {name.split("/")[0] for name in wheel_files if not name.startswith("mmae_board-")}
    assert top == {*own_apps(), "config"}
