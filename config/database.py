"""Planner statistics after a bulk load.

PostgreSQL plans a query from each table's statistics (pg_class.reltuples and pg_statistic),
which autovacuum refreshes only some time after rows are committed. A benchmark import or a
seeded board inserts thousands of rows at once; until the statistics catch up the planner can
take a table holding 3,000 items for an empty one and choose a nested loop that reads the
whole table once per row: the explorer's bucket filter on a 3,000-item benchmark took over a
minute per page that way (tests/leaderboard/test_explorer_scale.py, with the statistics a
vacuum of the emptied table had left). PostgreSQL's manual (14.4, "Populating a Database")
says to run ANALYZE after a bulk load; `analyze` does, for the tables that were loaded.

ANALYZE also counts the rows the current transaction inserted, so it serves an import inside
a larger transaction as well. It takes each table's SHARE UPDATE EXCLUSIVE lock until the
transaction ends, which blocks no reader or writer; other databases need nothing.
"""

from django.db import connection


def analyze(*models) -> None:
    """Refresh the planner statistics of `models`' tables (PostgreSQL only)."""
    if connection.vendor != "postgresql" or not models:
        return
    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")
