"""The apps' layers and the absence of import circles (pyproject.toml [tool.importlinter]) hold
for the project, and the same contracts refuse an import that points up or closes a circle."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # each test runs lint-imports in a process
ROOT = Path(__file__).resolve().parent.parent
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())"]
APPS = ("config", "judge", "audit", "accounts", "scoring", "submissions", "leaderboard",
        "panel", "challenges", "exports")
LEADERBOARD_PACKAGES = ("api", "pages", "boards")


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_the_project_keeps_its_layers_and_has_no_circle():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def tree(tmp_path: Path, modules: dict[str, str]) -> Path:
    """A tree of the project's app packages, empty but for `modules`, with its contracts."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for app in APPS:
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    for package in LEADERBOARD_PACKAGES:
        (tmp_path / "leaderboard" / package).mkdir()
        (tmp_path / "leaderboard" / package / "__init__.py").write_text("")
    for module in ("urls", "models"):
        (tmp_path / "leaderboard" / f"{module}.py").write_text("")
    for name, text in modules.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_an_import_pointing_up_is_refused(tmp_path):
    result = lint(tree(tmp_path, {"judge/fleet.py": "from leaderboard.pages import views\n",
                                  "leaderboard/pages/views.py": ""}))
    assert result.returncode == 1
    assert "judge is not allowed to import leaderboard" in result.stdout


def test_a_circle_hidden_inside_a_function_is_refused(tmp_path):
    result = lint(tree(tmp_path, {
        "leaderboard/admin.py": "def ready():\n    from leaderboard import tasks\n",
        "leaderboard/tasks.py": "from leaderboard import admin\n"}))
    assert result.returncode == 1
    assert "No cycles are allowed in leaderboard" in result.stdout


def test_siblings_of_one_layer_do_not_import_each_other(tmp_path):
    result = lint(tree(tmp_path, {"audit/services.py": "from accounts import models\n",
                                  "accounts/models.py": ""}))
    assert result.returncode == 1
    assert "audit is not allowed to import accounts" in result.stdout


def test_the_boards_data_does_not_import_the_pages(tmp_path):
    result = lint(tree(tmp_path, {
        "leaderboard/boards/state.py": "from leaderboard.pages import responses\n",
        "leaderboard/pages/responses.py": ""}))
    assert result.returncode == 1
    assert "leaderboard.boards is not allowed to import leaderboard.pages" in result.stdout
