"""The one rule of which per-item results public pages withhold: a submission's results on an
item of the listening panel's pool, until people have rated them and they leave the pool.

The pool is PANEL_POOL_ITEMS items (at most a PANEL_POOL_SHARE of them) of a benchmark whose
kind has a panel, one rubric each (the one the panel asks about), spread over the strata the
panel balances (the rubric's category x Kind.panel_stratum), in an order hashed from the
benchmark and the rubric alone: the same in every process, known before any submission is
scored, so that no rubric a rater is asked about had its judge's verdict on public pages
before. Raising the settings adds items at the end and keeps the rest; an item added so had
its results public until then.

While a (submission, item) pair is withheld, the explorer, the item and compare pages, the
items dataset (read API, downloads, snapshots), the results files a visitor downloads, the
output's audio and spectrogram on the submission's address, and the judge card say nothing of
the item's figures, votes or judge replies for that submission. It leaves the pool when the
panel releases it (`pool_release`, a board change, so every page kept per board state changes
with it). Aggregates (the board, slices, the pivot) count every item."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from scoring.boards import board_changed
from scoring.kinds import get_kind
from scoring.models import Benchmark, Criterion
from submissions.models import PoolRelease

# What a page says where it withholds a result.
NOTE = "withheld while the listening panel rates it"


def pool(benchmark: Benchmark) -> dict[int, int]:
    """The benchmark's pool: item id -> the id of its rubric the panel asks about, in drawing
    order. Read once per benchmark and size: a benchmark's items never change."""
    size = min(settings.PANEL_POOL_ITEMS, int(benchmark.n_items * settings.PANEL_POOL_SHARE))
    if size <= 0 or not get_kind(benchmark.kind).has_panel:
        return {}
    return cache.get_or_set(f"panel-pool:{benchmark.pk}:{benchmark.sha256}:{size}",
                            lambda: _draw_pool(benchmark, size), timeout=None)


def _draw_pool(benchmark: Benchmark, size: int) -> dict[int, int]:
    """Round robin over the strata, the strata and each stratum's rubrics in an order hashed
    from the benchmark and their names (so that a small pool favours no category); an item is
    taken once."""
    kind = get_kind(benchmark.kind)

    def hashed(*parts) -> str:
        return hashlib.sha256(":".join(map(str, (benchmark.slug, benchmark.version, *parts)))
                              .encode()).hexdigest()

    strata: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
    for pk, index, category, item_id, key, dims in (
            Criterion.objects.filter(item__benchmark=benchmark)
            .values_list("id", "index", "category", "item_id", "item__key", "item__dimensions")):
        strata.setdefault((category, kind.panel_stratum(dims)), []).append(
            (hashed(key, index), item_id, pk))
    queues = [sorted(found, reverse=True)
              for _, found in sorted(strata.items(), key=lambda s: hashed(*s[0]))]
    chosen: dict[int, int] = {}
    while len(chosen) < size and any(queues):
        for queue in queues:
            while queue and queue[-1][1] in chosen:
                queue.pop()
            if queue and len(chosen) < size:
                _, item_id, criterion_id = queue.pop()
                chosen[item_id] = criterion_id
    return chosen


@dataclass(frozen=True)
class Withheld:
    """The withheld pairs of a benchmark: `held(submission_id, item_id)` says whether public
    pages withhold that submission's results on that item."""

    pool: dict[int, int] = field(default_factory=dict)
    released: frozenset[tuple[int, int]] = frozenset()

    def __call__(self, submission_id: int, item_id: int) -> bool:
        return item_id in self.pool and (submission_id, item_id) not in self.released

    def items(self, submission_id: int) -> frozenset[int]:
        """The ids of the items whose results of this submission are withheld."""
        return frozenset(i for i in self.pool if (submission_id, i) not in self.released)


def withheld(benchmark: Benchmark, *, submission_ids: Iterable[int] | None = None) -> Withheld:
    """The rule for the benchmark's submissions (or only those given): two reads, the pool
    (kept) and the pairs released."""
    found = pool(benchmark)
    if not found:
        return Withheld()
    released = PoolRelease.objects.filter(item__benchmark=benchmark)
    if submission_ids is not None:
        released = released.filter(submission_id__in=list(submission_ids))
    return Withheld(found, frozenset(released.values_list("submission_id", "item_id")))


def pool_release(benchmark: Benchmark, pairs: Iterable[tuple[int, int]]) -> int:
    """Release (submission id, item id) pairs of the pool: public pages show their results
    from then on. One board change for them all; how many were released."""
    rows = [PoolRelease(submission_id=s, item_id=i) for s, i in set(pairs)]
    if not rows:
        return 0
    with transaction.atomic():
        made = PoolRelease.objects.bulk_create(rows, ignore_conflicts=True)
        board_changed(benchmark.id)
    return len(made)
