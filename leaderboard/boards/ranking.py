"""Ranks and rank ranges of a board.

Ranks compare figures exactly: each figure is rounded to 1e-9 (so float noise from another
summation order never decides a rank), rows equal on the whole ranking key share a rank, and the
next key decides otherwise.

Rank ranges come from a paired bootstrap. Each replicate draws one resample of the benchmark's
items (with replacement, seeded), shared by every model, and recomputes every model's full
ranking key on it (scoring.kinds.base.Kind.replicate_figures); a row's rank range is the 2.5th to
97.5th percentile of its rank across the replicates. Two models that differ clearly keep their
order in nearly every replicate, whatever their EMR; two with identical answers tie in every
replicate. Ranges are computed for every slice, for the ranking and for a sort by each metric,
whenever the board's state changes (a background task), and stored.
"""

from __future__ import annotations

import numpy as np

from scoring.kinds import Kind, resample

REPLICATES = 1000


SEED = 0


RANK = "rank"  # the ranges of the ranking itself; others are keyed by the metric sorted on


def competition_ranks(keys: list[tuple]) -> list[int]:
    """Ranks of sort keys (smaller is better): equal keys share the best of their ranks."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    ranks = [0] * len(keys)
    for position, index in enumerate(order):
        previous = order[position - 1] if position else None
        ranks[index] = ranks[previous] if previous is not None \
            and keys[previous] == keys[index] else position + 1
    return ranks


def deciders(keys: list[tuple]) -> list[int | None]:
    """For sort keys in rank order: the position of the first figure on which each key
    differs from the one before it, the figure that placed its row; None for the first row
    and for a row equal to the one before on the whole key (it shares its rank)."""
    found: list[int | None] = [None] if keys else []
    for before, key in zip(keys, keys[1:], strict=False):
        found.append(next((i for i, (a, b) in enumerate(zip(before, key, strict=True))
                           if a != b), None))
    return found


# Ties are ordered by name lowered in ASCII only, then by submission id: SQL's LOWER under the
# C collation (PostgreSQL) and SQLite's LOWER lower exactly that, so a ranking made here (the
# worker's stored orders) and one made by the database (ranked_sql) order ties alike.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def name_key(name: str) -> str:
    return name.translate(_ASCII_LOWER)


def board_order(keys: list[tuple], names: list[str], ids: list[int]) -> list[tuple[int, int]]:
    """(index, rank) of each row in board order: by key (smaller is better), equal keys by
    name and then id; equal keys share the best of their ranks."""
    order = sorted(range(len(keys)), key=lambda i: (keys[i], name_key(names[i]), ids[i]))
    ranked: list[tuple[int, int]] = []
    for position, index in enumerate(order):
        tied = position and keys[order[position - 1]] == keys[index]
        ranked.append((index, ranked[-1][1] if tied else position + 1))
    return ranked


def sort_key(column: np.ndarray) -> np.ndarray:
    """A figure column (higher is better) as a sort key (smaller first), exact to 1e-9, NaN
    last."""
    return -np.where(np.isnan(column), -np.inf, np.round(column, 9))


def _replicate_ranks(columns: list[np.ndarray]) -> np.ndarray:
    """Competition ranks (R x M) from key columns (each R x M, higher is better) compared
    in order, exact to 1e-9, NaN last."""
    return _key_ranks([sort_key(c) for c in columns])


def _key_ranks(keys: list[np.ndarray]) -> np.ndarray:
    """Competition ranks (R x M) from sort keys (sort_key's) compared in order."""
    replicates, models = keys[0].shape
    if models <= PAIRWISE_ROWS:
        return _pairwise_ranks(keys)
    ranks = np.empty((replicates, models), dtype=np.int32)
    positions = np.arange(models)
    # Whether the first figure ties often is the figure's nature: read off the first replicate.
    first = np.sort(keys[0][0]) if replicates else np.array([])
    whole = len(keys) > 1 and models > 1 \
        and np.count_nonzero(first[1:] == first[:-1]) > TIED_SHARE * models
    # Where the first figure ties often (EMR), the first two figures sort every row and the
    # rest only the rows tied on both: 1.8 ms a replicate of 10,000 rows against 2.8 ms for
    # all three figures at once.
    prefix = 2 if whole else 1
    for r in range(replicates):
        ranks[r] = _row_ranks([k[r] for k in keys], positions, prefix=prefix)
    return ranks


# Above this share of rows tied on the first figure, the first two figures sort every row.
TIED_SHARE = 0.5

# Up to this many rows, every replicate is ranked at once by comparing rows pair by pair. One
# replicate at a time costs about 0.1 ms of NumPy calls whatever the size: a state's rank
# ranges took 7.1 s at 5 submissions and 11.8 s at 50, and 0.15 s and 1.2 s pair by pair
# (`bench/rank_ranges.py --submissions 5 50 --samples 14`, 2026-12-06). The pairs grow as
# rows squared: at about 50 rows of untied figures both ways take as long.
PAIRWISE_ROWS = 64
# Replicates compared at once: R x M x M booleans, 4 MB at 64 rows.
PAIRWISE_CHUNK = 1000


def _pairwise_ranks(keys: list[np.ndarray]) -> np.ndarray:
    """Competition ranks (R x M) from sort keys compared in order, by definition: one more
    than the rows whose key is smaller, figure by figure."""
    replicates, models = keys[0].shape
    ranks = np.empty((replicates, models), dtype=np.int32)
    for start in range(0, replicates, PAIRWISE_CHUNK):
        part = [k[start:start + PAIRWISE_CHUNK] for k in keys]
        ahead = np.zeros((len(part[0]), models, models), dtype=bool)  # [r, other, row]
        level = np.ones_like(ahead)  # equal on the figures compared so far
        for key in part:
            other, row = key[:, :, None], key[:, None, :]
            ahead |= level & (other < row)
            level &= other == row
        ranks[start:start + PAIRWISE_CHUNK] = ahead.sum(axis=1) + 1
    return ranks


def _row_ranks(row: list[np.ndarray], positions: np.ndarray, *, prefix: int = 1) -> np.ndarray:
    """Competition ranks of one replicate (smaller keys first): a row's rank is one more than
    the rows ahead of it on the first `prefix` figures, plus those ahead of it among the rows
    it ties with there, by the other figures. Sorting by the first figure alone, and by the
    others only the tied rows, costs about half of sorting every row by every figure where
    the first figure seldom ties (IFR, CR); where it often does (EMR), by the first two."""
    models = len(row[0])
    head = row[:prefix]
    # Ties need no stable sort (each group is ranked below by the other figures): NumPy's
    # SIMD quicksort takes 0.35 ms for 10,000 rows here, its stable sort 0.63 ms.
    order = np.argsort(row[0]) if prefix == 1 else np.lexsort(head[::-1])
    ranks = _sorted_ranks(head, order, positions)
    if len(row) <= prefix:
        return ranks
    same = np.ones(models - 1, dtype=bool)
    for key in head:
        ordered = key[order]
        same &= ordered[1:] == ordered[:-1]
    tied = np.zeros(models, dtype=bool)
    tied[1:] = same
    tied[:-1] |= tied[1:]  # every member of a group of rows equal on the first figures
    if not tied.any():
        return ranks
    members = order[tied]
    group = ranks[members]  # the group's rank on the first figures
    within = np.lexsort([*(k[members] for k in row[:prefix - 1:-1]), group])
    chosen = members[within]
    rest = np.stack([group[within], *(k[chosen] for k in row[prefix:])])
    new = np.ones(len(chosen), dtype=bool)
    new[1:] = (rest[:, 1:] != rest[:, :-1]).any(axis=0)
    at = np.arange(len(chosen))
    starts = np.maximum.accumulate(np.where(new, at, 0))
    group_starts = np.maximum.accumulate(np.where(
        np.r_[True, rest[0, 1:] != rest[0, :-1]], at, 0))
    ranks[chosen] = rest[0] + starts - group_starts
    return ranks


def _sorted_ranks(row: list[np.ndarray], order: np.ndarray,
                  positions: np.ndarray) -> np.ndarray:
    """Competition ranks from `order` (the rows sorted by `row`'s figures)."""
    ordered = np.stack([k[order] for k in row])
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)
    ranks = np.empty(len(order), dtype=np.int32)
    ranks[order] = np.maximum.accumulate(np.where(new, positions, 0)) + 1
    return ranks


def _ranges(ranks: np.ndarray) -> list[list[int]]:
    best = np.percentile(ranks, 2.5, axis=0, method="lower")
    worst = np.percentile(ranks, 97.5, axis=0, method="higher")
    return [[int(b), int(w)] for b, w in zip(best, worst, strict=True)]


def draws(n_items: int, *, replicates: int, seed: int) -> np.ndarray:
    """How many times each item is drawn in each replicate (R x n)."""
    return resample.draws(n_items, replicates, np.random.default_rng(seed))


def slice_ranges(kind: Kind, *, weights: np.ndarray, values: dict, dims: list[dict],
                 fixed: dict[str, np.ndarray], figures: dict | None = None
                 ) -> dict[str, list[list[int]]]:
    """The ranges of one slice: for the ranking, and for a sort by each metric (that metric,
    then the ranking). `values` are the resampled models' per-item values of the slice's
    items; `fixed` holds, per metric, the figures of models without per-item values, which
    stay as they are in every replicate (they come after the resampled ones). `figures`:
    the replicates' figures of `values` when the caller has them already."""
    replicates = weights.shape[0]
    if figures is None:
        figures = kind.replicate_figures(weights, values, dims) if dims else {}
    metrics = [m.key for m in kind.metrics if not m.count]
    columns = {}
    for metric in metrics:
        parts = [figures[metric]] if metric in figures else []
        parts.append(np.broadcast_to(fixed[metric], (replicates, len(fixed[metric]))))
        # Each metric's sort key made once: the ranking and each sort use them all (at
        # 10,000 rows x 1,000 replicates, rounding took 19 s of a refresh made per use).
        columns[metric] = sort_key(np.concatenate(parts, axis=1))
    # A sort by the ranking's first figure ranks by the ranking's own key: ranked once.
    by_key: dict[tuple[str, ...], list[list[int]]] = {}

    def ranges(key: tuple[str, ...]) -> list[list[int]]:
        if key not in by_key:
            by_key[key] = _ranges(_key_ranks([columns[m] for m in key]))
        return by_key[key]

    result = {RANK: ranges(tuple(kind.ranking))}
    for metric in metrics:
        result[metric] = ranges((metric, *(m for m in kind.ranking if m != metric)))
    return result


# Neighbouring pairs a slice's separable difference is taken over, at most: evenly spaced
# down the order beyond that (each pair is a replicates-long column of differences).
SEPARABLE_PAIRS = 200


def separable_differences(kind: Kind, *, values: dict, dims: list[dict],
                          spread: dict) -> dict[str, dict]:
    """What a slice's paired bootstrap can tell apart, per metric: {metric: {"difference",
    "pairs"}}, where `difference` is the median, over pairs of neighbouring rows (the
    resampled rows in the order of that metric's figure), of the half-width of the 95%
    interval of their paired difference: a difference under it is, at this number of items,
    typically not separable. Rows without per-item values are not resampled and not counted;
    a metric with fewer than two rows gets nothing. `spread`: the replicates' figures
    (Kind.replicate_figures), as slice_ranges ranks them."""
    if not dims:
        return {}
    point = kind.replicate_figures(np.ones((1, len(dims))), values, dims)
    result = {}
    for metric in (m.key for m in kind.metrics if not m.count):
        figures = point[metric][0]
        known = np.flatnonzero(~np.isnan(figures))
        order = known[np.argsort(-figures[known], kind="stable")]
        if len(order) < 2:
            continue
        pairs = np.arange(len(order) - 1)
        if len(pairs) > SEPARABLE_PAIRS:
            pairs = np.unique(np.linspace(0, len(order) - 2, SEPARABLE_PAIRS).round().astype(int))
        apart = spread[metric][:, order[pairs]] - spread[metric][:, order[pairs + 1]]
        lo, hi = np.nanpercentile(apart, [2.5, 97.5], axis=0)
        half = ((hi - lo) / 2)[~np.isnan(hi - lo)]
        if len(half):
            result[metric] = {"difference": round(float(np.median(half)), 9),
                              "pairs": int(len(half))}
    return result


def verdict(lo: float, hi: float) -> str:
    if lo > 0:
        return "A ahead"
    if hi < 0:
        return "B ahead"
    return "not separable"
