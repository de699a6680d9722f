"""The registry of benchmark kinds. A kind is a subclass of `Kind` (scoring.kinds.base); the
platform reaches every benchmark through the kind named by `Benchmark.kind`.

Adding a benchmark: write a `Kind` subclass (its metadata, judge jobs, aggregation, results
files, explorer view and "How scoring works" text) and register it here.
"""

from __future__ import annotations

from scoring.kinds.airbench_chat import Chat
from scoring.kinds.airbench_foundation import Foundation
from scoring.kinds.base import ItemRows, Job, Kind, Media, Metric, file_sha256
from scoring.kinds.mmae import MMAE

__all__ = ["KINDS", "ItemRows", "Job", "Kind", "Media", "Metric", "file_sha256", "get_kind",
           "register"]

KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Make a kind known by its name (a benchmark stores that name)."""
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r}; known: {', '.join(KINDS)}") from None


for _kind in (MMAE(), Foundation(), Chat()):
    register(_kind)
