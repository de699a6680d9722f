"""The registry of benchmark kinds. A kind is a subclass of `Kind` (scoring.kinds.base); the
platform reaches every benchmark through the kind named by `Benchmark.kind`.

Adding a benchmark: a package here (`scoring/kinds/<name>/`) whose `__init__` exports `KINDS`,
a tuple of its `Kind` instances (its rules, its upload format, its output checks, its judge
jobs and simulated replies, its aggregation, results files, explorer view and "How scoring
works" text). Every such package is found when this registry is first imported; nothing else
names it. A kind kept elsewhere (the tests' own) is registered from the module paths of
settings.BENCHMARK_KINDS_EXTRA when the app starts (scoring.apps).
"""

from __future__ import annotations

import importlib
import pkgutil

from scoring.kinds.base import ItemRows, Job, Kind, Media, Metric, file_sha256

__all__ = ["KINDS", "ItemRows", "Job", "Kind", "Media", "Metric", "file_sha256", "get_kind",
           "register", "register_module", "simulated_replies"]

KINDS: dict[str, Kind] = {}
# Benchmark packages in the order forms and lists show them (others follow by name).
FIRST = ("mmae", "airbench")


def register(kind: Kind) -> Kind:
    """Make a kind known by its name (a benchmark stores that name)."""
    KINDS[kind.name] = kind
    return kind


def register_module(path: str) -> None:
    """Register the `KINDS` of a module (a dotted path)."""
    for kind in importlib.import_module(path).KINDS:
        register(kind)


def get_kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known: {', '.join(KINDS)}") from None


def simulated_replies() -> tuple:
    """Each kind's reply for the judge simulator (judge.simulator.SimulatorConfig.replies)."""
    return tuple(kind.simulated_reply for kind in KINDS.values())


def _packages() -> list[str]:
    found = [m.name for m in pkgutil.iter_modules(__path__) if m.ispkg]
    return sorted(found, key=lambda name: (FIRST.index(name) if name in FIRST else len(FIRST),
                                           name))


for _package in _packages():
    register_module(f"{__name__}.{_package}")
