"""README.md and docs/ against the code: docs/settings.md lists exactly the environment
variables the code reads, and every file, module and attribute the pages name exists.

Nothing here needs the network or a database: the code is read as text (its syntax tree), and
only a dotted name that goes past a module (`config.throttle.client_ip`) imports that module.
"""

import ast
import functools
import importlib
import os
import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import ROOT

SETTINGS_DOC = ROOT / "docs" / "settings.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The project's own packages: config, `make run`'s embedded (which reads settings of its own),
# and every app of INSTALLED_APPS kept in this repository.
PACKAGES = tuple(dict.fromkeys(
    ["config", "embedded", *(app.split(".")[0] for app in settings.INSTALLED_APPS
                 if (ROOT / app.split(".")[0] / "__init__.py").is_file())]))
# A variable's name as the code spells it: PORT, JUDGE_BASE_URLS.
VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")


def _readers() -> dict[str, dict[int, str]]:
    """The functions of config/env.py that read variables by name (env_int, env_rate, ...):
    name -> {position: parameter} of their parameters that take a variable's name (`name`,
    `id_name`)."""
    tree = ast.parse((ROOT / "config" / "env.py").read_text())
    return {node.name: {i: arg.arg for i, arg in enumerate(node.args.args)
                        if arg.arg == "name" or arg.arg.endswith("_name")}
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("env_")}


READERS = _readers()
OS_READERS = {"os.environ.get", "os.getenv"}
# Where a file named without a folder may be; the rest (the venv, data) is not the project's.
SKIPPED_DIRS = {".git", ".venv", "var", "node_modules", "__pycache__", "build", ".ci-cache"}
FILE = re.compile(r"[\w./*-]+\.(?:py|sh|md|html|js|yml)")
# Other files a page names (`config.json`, `results.jsonl`): not dotted names, not checked.
DATA_FILE = re.compile(r"\.(?:json|jsonl|toml|txt|csv|parquet|png|wav|flac|zip|gz|log)$")


def _dotted(node: ast.AST) -> str:
    """`os.environ.get` for the expression os.environ.get; "" for anything but names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _literal_names(nodes) -> list[str]:
    return [node.value for node in nodes if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and VARIABLE.fullmatch(node.value)]


def _names_read(tree: ast.AST):
    """The literal variable names an env_* reader, os.environ.get, os.getenv or
    os.environ[...] is given in `tree`, with their line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            reader = called.rsplit(".", 1)[-1]
            if reader in READERS:
                params = READERS[reader]
                names = _literal_names([*(node.args[i] for i in params if i < len(node.args)),
                                        *(kw.value for kw in node.keywords
                                          if kw.arg in params.values())])
            elif called in OS_READERS:
                names = _literal_names(node.args[:1])
            else:
                continue
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                _dotted(node.value) == "os.environ":
            names = _literal_names([node.slice])
        else:
            continue
        for name in names:
            yield name, node.lineno


def variables_read() -> dict[str, str]:
    """Every environment variable the project's packages read: name -> where (file:line)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT)
            for name, line in _names_read(ast.parse(path.read_text(), str(where))):
                found.setdefault(name, f"{where}:{line}")
    assert "DATABASE_URL" in found, f"the scan of {PACKAGES} found no settings: {found}"
    return found


def variables_documented() -> dict[str, int]:
    """The variables docs/settings.md gives a table row (named in its first cell) or a heading
    to: name -> line. Names in the prose of a row or a paragraph do not count."""
    found = {}
    for number, line in enumerate(SETTINGS_DOC.read_text().splitlines(), start=1):
        if line.startswith("#"):
            place = line
        elif line.startswith("|") and not set(line) <= set("|-: "):
            place = line.split("|")[1]
        else:
            continue
        for span in re.findall(r"`([^`]+)`", place):
            if VARIABLE.fullmatch(span):
                found.setdefault(span, number)
    return found


@pytest.mark.slow
def test_every_variable_the_code_reads_has_a_row_in_docs_settings():
    documented = variables_documented()
    missing = [f"{name} (read at {where})" for name, where in sorted(variables_read().items())
               if name not in documented]
    assert missing == [], ("docs/settings.md has no row (or heading) for: "
                           + ", ".join(missing))


@pytest.mark.slow
def test_docs_settings_names_no_variable_the_code_does_not_read():
    read = variables_read()
    stale = [f"{name} (docs/settings.md:{line})"
             for name, line in sorted(variables_documented().items()) if name not in read]
    assert stale == [], ("docs/settings.md has a row for variables no code of "
                         f"{', '.join(PACKAGES)} reads any longer: " + ", ".join(stale))


@functools.cache
def _file_names() -> frozenset[str]:
    """The name of every file of the repository (not of SKIPPED_DIRS)."""
    names = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        names.update(files)
    return frozenset(names)


def file_problem(path: str) -> str | None:
    """None if the file is there: a path from the repository's root (also under templates/
    and static/, as Django finds those), a pattern, or a bare name found anywhere in it."""
    if path.startswith("../"):
        return None  # outside the repository (the specifications beside it): not its to check
    if "/" not in path:
        return None if path in _file_names() else "no file of that name in the repository"
    for base in (ROOT, ROOT / "templates", ROOT / "static"):
        if "*" in path and any(base.glob(path)) or (base / path).exists():
            return None
    return "no such file"


def _module_file(parts: list[str]) -> bool:
    folder = ROOT.joinpath(*parts)
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def name_problem(dotted: str) -> str | None:
    """None if `dotted` is a module of the project, or an attribute of one (the module is then
    imported, Django being set up)."""
    parts = dotted.split(".")
    known = max(i for i in range(1, len(parts) + 1) if _module_file(parts[:i]))
    if known == len(parts):
        return None
    module_name = ".".join(parts[:known])
    try:
        value = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - the message names what broke
        return f"importing {module_name} fails: {type(exc).__name__}: {exc}"
    for i in range(known, len(parts)):
        if not hasattr(value, parts[i]):
            package = i == known and ROOT.joinpath(*parts[:known]).is_dir()
            hint = f" and there is no {'/'.join(parts[:i + 1])}.py" if package else ""
            return f"{'.'.join(parts[:i])} has no attribute {parts[i]!r}{hint}"
        value = getattr(value, parts[i])
    return None


def references(page: Path):
    """(line, text, kind) for each file path and project dotted name in the page's code spans
    (fenced blocks included, word by word), and each relative link's target."""
    text = page.read_text()
    own = "|".join(PACKAGES)
    dotted = re.compile(rf"(?<![\w./=@:<-])(?:{own})(?:\.[A-Za-z_]\w*)+")
    fences = list(re.finditer(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", text, re.M | re.S))
    fenced = [(m.start(1), m.group(1)) for m in fences]
    outside = text
    for m in fences:  # blanked, keeping every offset (and so every line number)
        outside = outside[:m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + outside[m.end():]
    spans = fenced + [(m.start(1), m.group(1)) for m in re.finditer(r"`([^`]+)`", outside)]
    for start, span in spans:
        line = text.count("\n", 0, start) + 1
        for word in span.split():
            word = word.strip("()[]{},;'\"")
            if FILE.fullmatch(word) and "<" not in word:
                yield line, word, "file"
            elif not DATA_FILE.search(word):
                for match in dotted.finditer(word):
                    yield line, match.group(0).rstrip("."), "name"
    for match in re.finditer(r"\]\(([^)\s]+)\)", outside):
        target = match.group(1).split("#")[0]
        if target and not re.match(r"[a-z]+:", target):
            yield text.count("\n", 0, match.start()) + 1, target, "link"


def problem(page: Path, text: str, kind: str) -> str | None:
    if kind == "file":
        return file_problem(text)
    if kind == "name":
        return name_problem(text)
    return None if (page.parent / text).exists() else f"no such file beside {page.name}"


def test_the_pages_are_there():
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    assert {"README.md", "docs/settings.md", "docs/performance.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_path_and_dotted_name_the_page_mentions_exists(page):
    broken = []
    for line, text, kind in dict.fromkeys(references(page)):
        found = problem(page, text, kind)
        if found:
            broken.append(f"{page.relative_to(ROOT)}:{line}: `{text}`: {found}")
    assert broken == [], ("references to code or files that are not there (moved or "
                          "renamed? update the page):\n" + "\n".join(broken))
