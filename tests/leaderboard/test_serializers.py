"""The read API's row serializers read a row dict's keys directly (KindFiguresOut._represent):
what they send is what DRF's own Serializer.to_representation sends, row for row."""

import pytest
from rest_framework import serializers as drf

from leaderboard.boards import serializers
from leaderboard.boards.selectors import baseline_rows, leaderboard_rows, reported_rows
from scoring.kinds import get_kind
from tests.leaderboard.test_board_pages import mixed_board  # noqa: F401 (a fixture)


def drf_own(serializer, row):
    return drf.Serializer.to_representation(serializer, row)


def test_board_reported_and_diagnostic_rows_are_drfs_own(mixed_board):  # noqa: F811
    kind = get_kind(mixed_board.kind)
    cases = [(serializers.BoardRowOut, leaderboard_rows(benchmark=mixed_board)),
             (serializers.ReportedOut, reported_rows(slug=mixed_board.slug, dimension="overall",
                                                     bucket="", kind=kind)),
             (serializers.DiagnosticOut, baseline_rows(benchmark=mixed_board, kind=kind,
                                                       dimension="overall", bucket=""))]
    for out, rows in cases:
        serializer = out(context={"kind": kind})
        assert rows, out.__name__
        for row in rows:
            fast = serializer.to_representation(row)
            assert fast == drf_own(serializer, row), (out.__name__, row)
            assert list(fast) == list(drf_own(serializer, row))  # the columns' order too


def test_a_missing_key_or_a_callable_goes_drfs_way(mixed_board):  # noqa: F811
    kind = get_kind(mixed_board.kind)
    serializer = serializers.BoardRowOut(context={"kind": kind})
    row = dict(leaderboard_rows(benchmark=mixed_board)[0])
    row["organisation"] = lambda: "Called"  # DRF calls a simple callable
    del row["flag"]  # allow_null: None
    assert serializer.to_representation(row) == drf_own(serializer, row)
    assert serializer.to_representation(row)["organisation"] == "Called"
    assert serializer.to_representation(row)["flag"] is None
    del row["model"]  # required: DRF's own error
    with pytest.raises(KeyError, match="model"):
        serializer.to_representation(row)
