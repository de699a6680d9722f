"""Rank ranges refreshed by several workers at once (threads on PostgreSQL): every refresh
ends without an error and one set of ranges stays, of the board's current state."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from leaderboard.boards import rank_ranges, state
from leaderboard.models import RankRanges
from tests.leaderboard.test_ranking import clear_gap

pytestmark = pytest.mark.slow


def test_refreshes_finishing_at_once_store_one_set(transactional_db, item_board):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("A", clear_gap(0.7))
    score_by_item_passes("B", clear_gap(0.3))
    start = threading.Barrier(8)

    def refresh(_):
        start.wait(timeout=30)
        try:
            return rank_ranges.refresh(benchmark, replicates=50)
        finally:
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        computed = list(pool.map(refresh, range(8)))
    assert True in computed  # and none raised (an IntegrityError would, through map)
    benchmark.refresh_from_db()
    stored = RankRanges.objects.filter(benchmark=benchmark)
    assert {row.state for row in stored} == {state.board_stamp(benchmark)}
    assert stored.count() == len({(row.dimension, row.bucket) for row in stored})
    assert rank_ranges.refresh(benchmark, replicates=50) is False
