"""`field__any` (leaderboard.boards.lookups): one array parameter, typed as the column, so that
PostgreSQL hashes it once instead of comparing a bigint column with a smallint array element
by element (psycopg types a list of small ids as smallint[])."""

import pytest

from leaderboard.boards import lookups  # noqa: F401 - registers field__any
from scoring.models import SliceResult
from submissions.models import ModelEntry

pytestmark = pytest.mark.django_db


def test_the_array_is_typed_as_the_column_and_matches_as_in_would(board):
    benchmark, score_by_slices = board
    made = [score_by_slices(f"Model {i}", (float(i), float(i), float(i))) for i in range(3)]
    runs = [s.current_run_id for s in made[:2]]
    found = SliceResult.objects.filter(run_id__any=runs, dimension="overall")
    sql, _ = found.query.sql_with_params()
    assert "= ANY(%s::bigint[])" in sql
    assert sorted(found.values_list("run_id", flat=True)) == sorted(runs)
    assert set(found) == set(SliceResult.objects.filter(run_id__in=runs, dimension="overall"))
    names = ModelEntry.objects.filter(name__any=["Model 0", "Model 2", "nobody"])
    assert "::varchar(200)[]" in names.query.sql_with_params()[0]
    assert sorted(names.values_list("name", flat=True)) == ["Model 0", "Model 2"]
    assert not SliceResult.objects.filter(run_id__any=[]).exists()
