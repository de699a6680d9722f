"""Figures over bootstrap replicates, for every model at once: the arithmetic a kind's
`replicate_figures` is built from.

A replicate is a resample of the benchmark's items, given as a row of `weights` (how many times
each item was drawn). A per-item value is a column per model (NaN where the item has no value,
as a null in a per-item row). Every function returns one figure per (replicate, model): an
R x M array, NaN where the replicate leaves nothing to average.
"""

from __future__ import annotations

import numpy as np


def draws(n_items: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """How many times each item is drawn in each replicate (R x n): n items drawn with
    replacement, R times."""
    picks = rng.integers(0, n_items, size=(replicates, n_items))
    flat = (picks + n_items * np.arange(replicates)[:, None]).ravel()
    return np.bincount(flat, minlength=replicates * n_items) \
        .reshape(replicates, n_items).astype(np.float64)


def mean(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The weighted mean of each model's values, skipping NaN (an item without a value)."""
    present = ~np.isnan(values)
    total = weights @ np.where(present, values, 0.0)
    count = weights @ present.astype(weights.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)


def ratio(weights: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """sum(numerator) / sum(denominator) over the drawn items, NaN where the latter is 0."""
    top, bottom = weights @ numerator, weights @ denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def mean_of(parts: list[np.ndarray]) -> np.ndarray:
    """The unweighted mean of several figures, skipping those that are NaN (a part the
    replicate left empty), as a kind's summary skips a part with no value."""
    if not parts:
        raise ValueError("no parts to average")
    # numpy's nanmean, written out: its warning on an all-NaN column would need
    # warnings.catch_warnings, whose filters are the process's, not the thread's (a page drawn
    # in another thread at the same time then warned anyway)
    stacked = np.stack(parts)
    counts = (~np.isnan(stacked)).sum(axis=0)
    return np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)


def groups(dims: list[dict], key: str) -> dict[str, np.ndarray]:
    """Item positions by the value of one of their dimensions, in first-seen order."""
    found: dict[str, list[int]] = {}
    for position, item in enumerate(dims):
        found.setdefault(item[key], []).append(position)
    return {value: np.array(positions) for value, positions in found.items()}
