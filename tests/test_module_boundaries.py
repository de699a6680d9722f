"""Boundaries read from the source: no module uses another module's private name, and no module
but leaderboard.boards.state keeps values of a board state (one owner, one store: state.kept)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "judge", "audit", "accounts", "scoring", "submissions", "leaderboard",
        "panel", "challenges", "exports")
# Module-level stores outside leaderboard.boards.state, each with why it is not a board state's.
NOT_BOARD_STATE = {
    # What a seeding process draws with, set once per forked process of the command.
    ("leaderboard/management/commands/seed_board.py", "_drawing"),
    # A rule handed down at start-up by the app above (challenges: which rows came late),
    # not a value of any board state.
    ("leaderboard/boards/marks.py", "_late_rules"),
    # The store's own locks: which values its threads are making now, none kept after.
    ("leaderboard/boards/state.py", "_making"),
}


def modules():
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text())


def private_uses(path: Path, tree: ast.Module) -> list[str]:
    """`from app.module import _name` and `module._name` where `module` is one of the
    project's (Django's `_meta`, a public API by its convention, aside)."""
    found, aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module \
                and node.module.split(".")[0] in APPS:
            for alias in node.names:
                aliases.add(alias.asname or alias.name)
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                                 f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            aliases |= {a.asname or a.name.split(".")[0] for a in node.names
                        if a.name.split(".")[0] in APPS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in aliases and node.attr.startswith("_") \
                and not node.attr.startswith("__") and node.attr != "_meta":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.slow
def test_no_module_uses_another_modules_private_name():
    found = [use for path, tree in modules() for use in private_uses(path, tree)]
    assert found == []


def test_the_private_name_check_finds_one():
    tree = ast.parse("from leaderboard.boards.selectors import _hidden\n"
                     "from leaderboard.pages import views\nviews._page(1)\n")
    assert len(private_uses(ROOT / "x.py", tree)) == 2


def stores(path: Path, tree: ast.Module) -> list[tuple[str, str]]:
    """Module-level mutable containers with a private name: where a process keeps values."""
    found = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        value = getattr(node, "value", None)
        mutable = isinstance(value, ast.Dict | ast.List | ast.Set) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name | ast.Attribute)
            and getattr(value.func, "id", getattr(value.func, "attr", "")) in (
                "dict", "OrderedDict", "defaultdict", "set", "list"))
        for target in targets:
            if mutable and isinstance(target, ast.Name) and target.id.startswith("_") \
                    and not target.id.startswith("__") \
                    and not target.id.isupper():  # a constant's name is upper case
                found.append((str(path.relative_to(ROOT)), target.id))
    return found


@pytest.mark.slow
def test_only_the_board_state_module_keeps_per_state_values():
    kept = {store for path, tree in modules() for store in stores(path, tree)
            if store[0].split("/")[0] in ("leaderboard", "panel")}
    assert kept - NOT_BOARD_STATE == {("leaderboard/boards/state.py", "_process")}


# The rule's words in SQL written by hand: `public = %s`, `hidden = false`, `publish_at IS NULL`.
RULE_IN_SQL = re.compile(r"\b(public|hidden)\s*=\s*(%s|true|false)\b|\bpublish_at\s+IS\s+NULL",
                         re.IGNORECASE)


QUERIES = ("filter", "exclude", "get", "Q")  # calls that choose rows


def published_rule_uses(path: Path, tree: ast.Module) -> list[str]:
    """Filters that restate who may see a submission (`hidden=False`, `public=True`,
    `publish_at__isnull=True`, through `submissions__` too, as keyword arguments of a call),
    and SQL that does: the rule's own words."""
    words = {"hidden": False, "public": True, "publish_at__isnull": True}
    words |= {f"{through}__{name}": value for through in ("submissions", "submission")
              for name, value in words.items()}
    found = [f"{path.relative_to(ROOT)}:{node.lineno}: {keyword.arg}"
             for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", getattr(node.func, "id", "")) in QUERIES
             for keyword in node.keywords
             if keyword.arg in words and isinstance(keyword.value, ast.Constant)
             and keyword.value.value is words[keyword.arg]]
    return found + [f"{path.relative_to(ROOT)}:{node.lineno}: SQL {match.group(0)!r}"
                    for node in ast.walk(tree) if isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    for match in [RULE_IN_SQL.search(node.value)] if match]


@pytest.mark.slow
def test_the_published_rule_is_written_once():
    """submissions.models says who may see a submission and which runs are everyone's; every
    other module asks it (scoring through scoring.visibility)."""
    found = [use for path, tree in modules() for use in published_rule_uses(path, tree)
             if path.relative_to(ROOT).as_posix() not in (
                 "submissions/models.py",
                 # Staff unhiding a submission: an action, not a filter.
                 "submissions/management/commands/moderate.py",
                 # The audit log's own flag of which events its public changelog lists.
                 "audit/selectors.py")]
    assert found == []


def test_the_published_rule_check_finds_them():
    tree = ast.parse("Run.objects.filter(submissions__public=True, submissions__hidden=False)\n"
                     "Q(publish_at__isnull=True)\n"
                     "sql = 'WHERE s.public = %s AND s.hidden = %s AND s.publish_at IS NULL'")
    assert len(published_rule_uses(ROOT / "x.py", tree)) == 4
