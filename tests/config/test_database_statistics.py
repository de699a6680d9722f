"""A bulk load leaves PostgreSQL's planner the tables' true sizes (config/database.py).

Each test first sets the statistics a vacuum of an emptied table leaves (no rows on some
pages), as the earlier tests of a worker's database do: with them, the explorer's bucket filter
on 3,000 items chose a plan that took over a minute per page.
"""

import pytest
from django.core.management import call_command
from django.db import connection

from scoring.kinds.airbench import rules as airbench
from scoring.models import Criterion, Item, ItemBucket, ItemResult
from scoring.services import benchmark_import
from tests.scoring.airbench_data import foundation_item, write

TABLES = (Item, ItemBucket, Criterion, ItemResult)


def statistics_say_empty():
    with connection.cursor() as cursor:
        cursor.execute("UPDATE pg_class SET reltuples = 0, relpages = 50 WHERE relname = ANY(%s)",
                       [[model._meta.db_table for model in TABLES]])


def planned_rows(model) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s",
                       [model._meta.db_table])
        return cursor.fetchone()[0]


def imported(tmp_path, n: int):
    path = write(tmp_path / "foundation.json",
                 [foundation_item(i, ("Sound_AQA", "Music_AQA")[i % 2]) for i in range(n)])
    benchmark, _ = benchmark_import(kind=airbench.FOUNDATION, path=path, audio_root=None,
                                    slug="foundation")
    return benchmark


@pytest.fixture
def stale(db):
    assert connection.vendor == "postgresql"
    statistics_say_empty()
    assert planned_rows(Item) == 0


def test_an_import_inside_a_transaction_leaves_the_planner_its_rows(stale, tmp_path):
    benchmark = imported(tmp_path, 400)
    assert planned_rows(Item) == Item.objects.count() == 400
    assert planned_rows(ItemBucket) == ItemBucket.objects.count() > 400
    assert planned_rows(Criterion) == Criterion.objects.filter(item__benchmark=benchmark).count()


@pytest.mark.slow
def test_a_seeded_board_leaves_the_planner_its_item_results(stale, tmp_path):
    benchmark = imported(tmp_path, 300)
    call_command("seed_board", "--benchmark", benchmark.slug, "--submissions", "2",
                 "--resamples", "10", "--processes", "1")
    assert planned_rows(ItemResult) == ItemResult.objects.count() == 600
