"""The registry of benchmark kinds. A kind is a subclass of `Kind` (scoring.kinds.base); the
platform reaches every benchmark through the kind named by `Benchmark.kind`.

Adding a benchmark: a package here (`scoring/kinds/<name>/`) whose `__init__` exports `KINDS`,
a tuple of its `Kind` instances (its rules, its upload format, its output checks, its judge
jobs and simulated replies, its aggregation, results files, explorer view and "How scoring
works" text). Every such package is found when `KINDS` is first read; nothing else names it.
`get_kind(name)` imports only the package named as the kind up to its first hyphen (`mmae`,
`airbench` for `airbench-chat`) when that one holds it, so that the `score` command imports
the asked kind alone (AIR-Bench chat alone takes 70 ms). A kind kept elsewhere (the tests'
own) is registered from the module paths of settings.BENCHMARK_KINDS_EXTRA when the app starts
(scoring.apps).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from scoring.kinds.base import ItemRows, Job, Kind, Media, Metric, file_sha256

__all__ = ["KINDS", "ItemRows", "Job", "Kind", "Media", "Metric", "file_sha256", "get_kind",
           "register", "register_module", "simulated_replies"]

# Read as `KINDS` (module __getattr__), which loads every package first.
_KINDS: dict[str, Kind] = {}
_loaded: list[str] = []  # the packages imported so far
_complete: list[bool] = []  # [True] once every package is, and _KINDS is in its order
# Benchmark packages in the order forms and lists show them (others follow by name).
FIRST = ("mmae", "airbench")


def register(kind: Kind) -> Kind:
    """Make a kind known by its name (a benchmark stores that name)."""
    _KINDS[kind.name] = kind
    return kind


def register_module(path: str) -> None:
    """Register the `KINDS` of a module (a dotted path)."""
    for kind in importlib.import_module(path).KINDS:
        register(kind)


def get_kind(name: str) -> Kind:
    if name not in _KINDS and name.split("-")[0] in _packages():
        _load(name.split("-")[0])
    kinds = _KINDS if name in _KINDS else _all()
    try:
        return kinds[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known: {', '.join(kinds)}") from None


def simulated_replies() -> tuple:
    """Each kind's reply for the judge simulator (judge.simulator.SimulatorConfig.replies)."""
    return tuple(kind.simulated_reply for kind in _all().values())


def __getattr__(name: str):
    if name == "KINDS":
        return _all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _packages() -> tuple[str, ...]:
    found = [m.name for m in pkgutil.iter_modules(__path__) if m.ispkg]
    return tuple(sorted(found, key=lambda name: (
        FIRST.index(name) if name in FIRST else len(FIRST), name)))


def _load(package: str) -> None:
    if package not in _loaded:
        register_module(f"{__name__}.{package}")
        _loaded.append(package)


def _all() -> dict[str, Kind]:
    """Every kind, those of this folder's packages first in FIRST's order, then those
    registered from elsewhere; the same dict object each time (callers may keep it)."""
    if not _complete:
        for package in _packages():
            _load(package)
        ours = [kind.name for package in _packages()
                for kind in importlib.import_module(f"{__name__}.{package}").KINDS]
        others = {k: v for k, v in _KINDS.items() if k not in ours}
        ordered = {name: _KINDS[name] for name in ours} | others
        _KINDS.clear()
        _KINDS.update(ordered)
        _complete.append(True)
    return _KINDS
