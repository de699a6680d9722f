"""scoring.aggregation.benchmark_items and item_results_store: aggregation reads plain values,
keeps a benchmark's items per process, and stores per-item results in one COPY."""

import pytest

from scoring import aggregation
from scoring.kinds import get_kind
from scoring.models import Criterion, Item, ItemResult
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark
from tests.conftest import judge_config
from tests.factories import scored_submission

pytestmark = pytest.mark.django_db


@pytest.fixture
def benchmark(tmp_path):
    aggregation._ITEMS.clear()
    meta = write_benchmark(tmp_path, 6, seed=4)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path, slug="mmae")
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    benchmark.refresh_from_db()
    return benchmark


def test_items_are_read_as_the_kind_reads_them_from_model_rows(benchmark):
    kind = get_kind("mmae")
    items = aggregation.benchmark_items(benchmark.id, kind)
    rows = Item.objects.filter(benchmark=benchmark).prefetch_related("criteria").order_by(
        "position")
    assert [(i.id, i.key, i.position) for i in items] == [
        (r.id, r.key, r.position) for r in rows]
    assert [i.read for i in items] == [kind.from_rows(r.as_rows()) for r in rows]


def test_a_second_read_costs_one_query_and_a_changed_criterion_is_read_again(
        benchmark, django_assert_num_queries):
    kind = get_kind("mmae")
    first = aggregation.benchmark_items(benchmark.id, kind)
    with django_assert_num_queries(1):
        assert aggregation.benchmark_items(benchmark.id, kind) is first
    criterion = Criterion.objects.filter(item__benchmark=benchmark).order_by("-id").first()
    Criterion.objects.create(item=criterion.item, index=criterion.index + 1,
                             category=criterion.category, question="Is it new?",
                             spec=criterion.spec)
    again = aggregation.benchmark_items(benchmark.id, kind)
    assert again is not first
    changed = next(i for i in again if i.id == criterion.item_id)
    assert "Is it new?" in repr(changed.read)


def test_per_item_results_are_stored_with_the_kinds_failed_flag(benchmark, author):
    kind = get_kind("mmae")
    run = scored_submission(benchmark, author, "M", {("overall", ""): (0.5, 0.5, 0.5)}
                            ).current_run
    items = aggregation.benchmark_items(benchmark.id, kind)
    results = [{"run_id": run.id, "item_id": item.id, "position": item.position,
                "missing": n == 0, "values": {"IFR": None if n == 0 else 0.5, "CR": 1.0,
                                              "EM": n % 2, "rubric_scores": [1, n % 2]},
                "passed": bool(n % 2),
                "score": n / 10} for n, item in enumerate(items)]
    aggregation.item_results_store(kind, results)
    stored = list(ItemResult.objects.filter(run=run).order_by("position").values(
        "item_id", "missing", "values", "passed", "score", "failed", "position"))
    assert stored == [{**{k: r[k] for k in ("item_id", "missing", "values", "passed",
                                            "score", "position")},
                       "failed": kind.failed(r)} for r in results]
    assert any(row["failed"] for row in stored) and not all(row["failed"] for row in stored)
