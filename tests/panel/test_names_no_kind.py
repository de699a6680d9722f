"""The panel names no benchmark kind: what differs between kinds it asks of the kind
(Kind.has_panel, panel_question, panel_verdict, panel_stratum), so that a new kind with
rubrics gets a panel without a line changed here."""

import importlib
import pkgutil
import re
from pathlib import Path

import scoring.kinds
from tests.conftest import ROOT


def kind_names() -> set[str]:
    """Every kind package of scoring/kinds/ and every name and address of its kinds."""
    names = set()
    for package in pkgutil.iter_modules(scoring.kinds.__path__):
        if package.ispkg:
            names.add(package.name)
            for kind in importlib.import_module(f"scoring.kinds.{package.name}").KINDS:
                names.update({kind.name, kind.slug})
    return {flat(name) for name in names if name}


def flat(text: str) -> str:
    """Casefolded, without the hyphens and underscores that spell a name apart (AIR-Bench)."""
    return re.sub(r"[-_]", "", text.casefold())


def panel_files() -> list[Path]:
    """The app's modules (migrations too), its templates and its page's script."""
    return [*sorted((ROOT / "panel").rglob("*.py")),
            *sorted((ROOT / "templates" / "panel").iterdir()), ROOT / "static" / "js" / "panel.js"]


def test_the_panel_names_no_kind():
    names = kind_names()
    assert {"mmae", "airbench", "airbenchchat"} <= names
    assert "airbench" in flat('if title.startswith("AIR-Bench"):')  # as a title spells it
    found = [(str(path.relative_to(ROOT)), number, name)
             for path in panel_files()
             for number, line in enumerate(path.read_text().splitlines(), start=1)
             for name in names if name in flat(line)]
    assert found == []

