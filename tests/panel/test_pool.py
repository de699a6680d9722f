"""The panel's pool (submissions.withheld.pool): its size under PANEL_POOL_ITEMS and
PANEL_POOL_SHARE, one rubric per item spread over the strata, fixed by the benchmark (the
same on every reading, grown by adding items), none for a kind without a panel; and the rule
read from it (a pair withheld until released)."""

from collections import Counter

import pytest
from django.core.cache import cache

from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.models import Criterion
from scoring.services import benchmark_import
from submissions.withheld import Withheld, pool, pool_release, withheld
from tests.scoring.airbench_data import foundation_meta, write


@pytest.fixture(autouse=True)
def whole_share(settings):
    """Every item of a small board may be pooled: PANEL_POOL_ITEMS alone bounds the pool."""
    settings.PANEL_POOL_ITEMS = 100
    settings.PANEL_POOL_SHARE = 1.0


def strata(benchmark, criterion_ids) -> Counter:
    kind = get_kind(benchmark.kind)
    return Counter((c.category, kind.panel_stratum(c.item.dimensions))
                   for c in Criterion.objects.select_related("item").filter(id__in=criterion_ids))


def test_the_pool_is_one_rubric_of_each_item_spread_over_the_strata(panel_board, settings):
    benchmark = panel_board.benchmark
    every = strata(benchmark, Criterion.objects.filter(item__benchmark=benchmark)
                   .values_list("id", flat=True))
    settings.PANEL_POOL_ITEMS = 4
    found = pool(benchmark)
    assert len(found) == 4
    for item_id, criterion_id in found.items():
        assert Criterion.objects.get(pk=criterion_id).item_id == item_id
    drawn = strata(benchmark, found.values())
    assert len(drawn) == 4 < len(every)  # four strata, one rubric each, before any second
    cache.clear()
    assert pool(benchmark) == found  # read again: the same, in the same order


def test_the_pool_grows_by_adding_items_and_keeps_to_its_share(panel_board, settings):
    benchmark = panel_board.benchmark
    sizes = {}
    for size in (2, 4, 6):
        settings.PANEL_POOL_ITEMS = size
        sizes[size] = list(pool(benchmark).items())
    assert sizes[2] == sizes[4][:2] and sizes[4] == sizes[6][:4]
    settings.PANEL_POOL_SHARE = 0.5  # of six items: three
    assert list(pool(benchmark).items()) == sizes[6][:3]
    settings.PANEL_POOL_SHARE = 0.1  # less than one item: no pool, nothing withheld
    assert pool(benchmark) == {} and withheld(benchmark) == Withheld()


def test_a_pair_is_withheld_until_released(panel_board, author, settings):
    settings.PANEL_POOL_ITEMS = 4
    submission = panel_board.score_by_criteria("Echo", author)
    benchmark = panel_board.benchmark
    first, second, *_ = pool(benchmark)
    rule = withheld(benchmark)
    assert rule(submission.pk, first) and rule(submission.pk, second)
    outside = [i.id for i in panel_board.items if i.id not in rule.pool]
    assert len(outside) == 2 and not any(rule(submission.pk, i) for i in outside)
    version = type(benchmark).objects.get(pk=benchmark.pk).board_version
    assert pool_release(benchmark, [(submission.pk, first)]) == 1
    assert type(benchmark).objects.get(pk=benchmark.pk).board_version == version + 1
    rule = withheld(benchmark)
    assert not rule(submission.pk, first) and rule(submission.pk, second)
    assert rule.items(submission.pk) == frozenset(rule.pool) - {first}


def test_a_kind_without_a_panel_has_no_pool(db, tmp_path, settings):
    settings.PANEL_POOL_SHARE = 1.0
    benchmark, _ = benchmark_import(kind=airbench.FOUNDATION, audio_root=None, slug="f",
                                    path=write(tmp_path / "Foundation_meta.json",
                                               foundation_meta()))
    assert benchmark.n_items and pool(benchmark) == {}
