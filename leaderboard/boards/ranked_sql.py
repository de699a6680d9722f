"""A board ranked by the database, for a board state whose ranked orders no worker has stored
yet (leaderboard.boards.board_pages): one query picks each model's representative (ROW_NUMBER over
its published submissions, the ORM's one rule compiled into it, as
leaderboard.boards.state.representatives picks them), joins its
slice, ranks by the kind's key with RANK() and returns one window of the order
(LIMIT/OFFSET), the same rows and ranks as leaderboard.boards.ranking.board_order gives.

Plans must not depend on planner statistics (a freshly seeded database has none): without
them PostgreSQL takes every table for a few rows and nests loops over bitmap scans of 10,000
rows each (1.6 s at 10,000 submissions). Nested loops are switched off for these queries
alone, so every join is a hash or merge join, linear in the rows (about 130 ms there).
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from django.db import connection, transaction

from scoring.models import SliceResult
from submissions.models import ModelEntry, Submission

NAME = re.compile(r"^\w+$")  # a figure's name, spliced into a JSON path


def _tables() -> dict[str, str]:
    return {"s": Submission._meta.db_table, "m": ModelEntry._meta.db_table,
            "f": SliceResult._meta.db_table}


def _candidates(benchmark, *, models: bool = False) -> tuple[str, list]:
    """FROM and WHERE of the submissions that may represent their model on the board: the
    published ones (`Submission.objects.published()`, the one rule, compiled here by the ORM)
    whose current run was scored with the board's judge (their models joined as `m` when
    asked)."""
    rule = Submission.objects.published().filter(
        benchmark_id=benchmark.id, current_run__benchmark_id=benchmark.id,
        current_run__judge_config_id=benchmark.judge_config_id).order_by().values("id")
    where, params = rule.query.sql_with_params()
    joined = " JOIN {m} m ON m.id = s.model_id" if models else ""
    sql = "FROM {s} s" + joined
    return sql.format(**_tables()) + f" WHERE s.id IN ({where})", list(params)


def _chosen(benchmark, *, materialized: bool = False) -> tuple[str, list]:
    """The CTE `chosen`: each model's representative (id, current_run_id, name, licence);
    `materialized`, computed once however often the query reads it."""
    candidates, params = _candidates(benchmark, models=True)
    return f"""reps AS (
        SELECT s.id, s.current_run_id, m.name, m.licence, ROW_NUMBER() OVER (
            PARTITION BY s.model_id
            ORDER BY s.representative DESC, s.created_at DESC, s.id DESC) AS pick
        {candidates}),
        chosen AS {"MATERIALIZED " if materialized else ""}(
            SELECT id, current_run_id, name, licence FROM reps WHERE pick = 1)""", params


def _key(name: str) -> tuple[str, list]:
    """One column of a ranking key as kind.rank_key computes it: minus the figure rounded to
    1e-9, a missing figure last (the figure's JSON text read as an exact decimal)."""
    if not NAME.match(name):
        raise ValueError(f"not a figure's name: {name!r}")
    if connection.vendor == "postgresql":
        return 'CAST(f."values" ->> %s AS numeric)', [name]
    return "json_extract(f.\"values\", '$.' || %s)", [name]


def _lowered(column: str) -> str:
    # ASCII-only lowering and code-point order, as leaderboard.boards.ranking.name_key.
    return f'LOWER({column} COLLATE "C")' if connection.vendor == "postgresql" \
        else f"LOWER({column})"


@contextmanager
def no_nested_loops():
    """PostgreSQL without nested loops for the enclosed queries (see the module's doc)."""
    if connection.vendor != "postgresql":
        yield connection.cursor()
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_nestloop = off")
        try:
            yield cursor
        finally:
            cursor.execute("SET LOCAL enable_nestloop TO DEFAULT")


def _ranked(benchmark, figures: list[str], dimension: str, bucket: str) -> tuple[str, list]:
    """The CTE `ranked`: the representatives with a figure on the slice and their key k0..."""
    chosen, params = _chosen(benchmark)
    columns = []
    for i, name in enumerate(figures):
        value, more = _key(name)
        columns.append(f"-COALESCE(ROUND({value}, 9), -1e18) AS k{i}")
        params += more
    sql = f"""WITH {chosen}, ranked AS (
        SELECT {", ".join(["chosen.id", "chosen.name", *columns])}
        FROM chosen JOIN {SliceResult._meta.db_table} f ON f.run_id = chosen.current_run_id
        WHERE f.dimension = %s AND f.bucket = %s)"""
    return sql, [*params, dimension, bucket]


def _order(figures: list[str], descending: bool = False) -> str:
    """ORDER BY of `ranked` in board order (the key, then the name, then the id)."""
    way = " DESC" if descending else ""
    return ", ".join(f"{c}{way}" for c in [*(f"k{i}" for i in range(len(figures))),
                                           _lowered("name"), "id"])


def window_sql(benchmark, figures: list[str], dimension: str, bucket: str, *, start: int,
               stop: int, descending: bool = False) -> tuple[str, list]:
    """The query of `window`, and its parameters."""
    sql, params = _ranked(benchmark, figures, dimension, bucket)
    keys = ", ".join(f"k{i}" for i in range(len(figures)))
    sql += f"""SELECT id, RANK() OVER (ORDER BY {keys}), COUNT(*) OVER (), {keys}
        FROM ranked ORDER BY {_order(figures, descending)} LIMIT %s OFFSET %s"""
    return sql, [*params, max(0, stop - start), start]


def window(benchmark, figures: list[str], dimension: str, bucket: str, *, start: int,
           stop: int, descending: bool = False) -> tuple[list[tuple], int | None]:
    """Rows [start, stop) of the slice ranked by `figures` (each best-first), as
    (submission id, rank, key), reversed when `descending`; and how many rows the slice
    ranks (None when the window is empty)."""
    sql, params = window_sql(benchmark, figures, dimension, bucket, start=start, stop=stop,
                             descending=descending)
    with no_nested_loops() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    rows = [(pk, rank, tuple(float(k) for k in key)) for pk, rank, _, *key in found]
    return rows, found[0][2] if found else None


def first(benchmark, figures: list[str], dimension: str, bucket: str, n: int) -> list[int]:
    """The submission ids of the slice's first `n` rows in board order (window's first rows
    without their ranks or the slice's count, which cost a sort of the whole slice)."""
    sql, params = _ranked(benchmark, figures, dimension, bucket)
    with no_nested_loops() as cursor:
        cursor.execute(f"{sql} SELECT id FROM ranked ORDER BY {_order(figures)} LIMIT %s",
                       [*params, n])
        return [pk for (pk,) in cursor.fetchall()]


def place_sql(benchmark, figures: list[str], dimension: str, bucket: str,
              submission_id: int) -> tuple[str, list]:
    """The query of `place`, and its parameters: rows before it counted, not the slice
    sorted (a third faster at 10,000 rows)."""
    sql, params = _ranked(benchmark, figures, dimension, bucket)

    def row(table: str, *, whole: bool) -> str:
        keys = [f"{table}.k{i}" for i in range(len(figures))]
        return "(" + ", ".join([*keys, _lowered(f"{table}.name"), f"{table}.id"] if whole
                               else keys) + ")"

    keys = ", ".join(f"me.k{i}" for i in range(len(figures)))
    before = f'{row("r", whole=True)} < {row("me", whole=True)}'  # the board's order
    better = f'{row("r", whole=False)} < {row("me", whole=False)}'  # the ranking key
    sql += f""", me AS (SELECT * FROM ranked WHERE id = %s)
        SELECT (SELECT COUNT(*) FROM ranked r WHERE {before}),
               1 + (SELECT COUNT(*) FROM ranked r WHERE {better}),
               (SELECT COUNT(*) FROM ranked), {keys}
        FROM me"""
    return sql, [*params, submission_id]


def place(benchmark, figures: list[str], dimension: str, bucket: str,
          submission_id: int) -> tuple[int, int, int, tuple] | None:
    """Where one row stands in the slice ranked by `figures`: (its position from 0 in board
    order, its rank, how many rows the slice ranks, its key), or None when the slice does not
    rank it; one row read, not the whole order."""
    with no_nested_loops() as cursor:
        cursor.execute(*place_sql(benchmark, figures, dimension, bucket, submission_id))
        found = cursor.fetchone()
    if found is None:
        return None
    position, rank, total, *key = found
    return position, rank, total, tuple(float(k) for k in key)


def count(benchmark, dimension: str, bucket: str) -> int:
    """How many rows the slice ranks."""
    sql, params = _ranked(benchmark, [], dimension, bucket)
    with no_nested_loops() as cursor:
        cursor.execute(sql + "SELECT COUNT(*) FROM ranked", params)
        return cursor.fetchone()[0]


def licences(benchmark) -> list[str]:
    """The licences of the board's models, sorted. A model is on the board when any of its
    submissions may represent it: no representative is picked (12 ms at 10,000 submissions,
    against 17 ms picking them)."""
    candidates, params = _candidates(benchmark)
    with no_nested_loops() as cursor:
        cursor.execute(f"SELECT DISTINCT m.licence FROM {ModelEntry._meta.db_table} m "
                       f"WHERE m.licence <> '' AND m.id IN (SELECT s.model_id {candidates})",
                       params)
        return sorted(licence for (licence,) in cursor.fetchall())


# How many representatives the bucket list probes for a pair before it reads the pair's rows.
FIRST_REPRESENTATIVES = 64


def slices(benchmark) -> set[tuple[str, str]]:
    """(dimension, bucket) of every slice the board's rows have figures for, the overall one
    aside.

    On PostgreSQL without reading every representative's slice rows: the distinct pairs of the
    whole table come from its (dimension, bucket, run) index, one probe each (a loose index
    scan, under a millisecond); a pair is kept if one of the first FIRST_REPRESENTATIVES
    representatives has it (a probe each, by run, pair), else if its rows in that index reach a
    representative's run (a hashed set of them), stopping at the first. A pair's rows are read
    at most once, after at most FIRST_REPRESENTATIVES probes, so at worst this costs about what
    the join with DISTINCT it replaces did, which read all 270,000 slice rows of 10,000
    representatives (and sorted them on disk). Each timed alternately with the old function in
    one process on the bench's seed of 10,000 (bench/board_latency.py), analysed, with a pair
    that only a board of 5 beside it has (2026-12-07 12:00, quiet): 155-182 ms against 23-41 ms
    for this, and for the board of 5, 26-41 ms against 3. Reading the pairs' rows alone (no
    probes first) took 37-98 ms for the large board and 41-89 for the small one, whose runs come
    after the large one's in the index; probing every representative instead, 39-72 ms for the
    large one (10,000 probes for the pair it lacks). The index is `sliceresult_slice_run`
    (leaderboard/migrations/0008_rank_order.py). The sub-queries are fenced (OFFSET 0) so that
    PostgreSQL cannot pull them up into that join again; their plans have no join to choose, so
    nested loops (the probes) stay allowed."""
    postgresql = connection.vendor == "postgresql"
    chosen, params = _chosen(benchmark, materialized=postgresql)
    table = SliceResult._meta.db_table
    if not postgresql:
        with connection.cursor() as cursor:
            cursor.execute(f"""WITH {chosen} SELECT DISTINCT f.dimension, f.bucket FROM chosen
                JOIN {table} f ON f.run_id = chosen.current_run_id WHERE f.dimension <> %s""",
                           [*params, SliceResult.OVERALL])
            return set(cursor.fetchall())
    sql = f"""WITH RECURSIVE {chosen}, pairs AS (
        (SELECT dimension, bucket FROM {table} ORDER BY dimension, bucket LIMIT 1)
        UNION ALL
        SELECT after.dimension, after.bucket FROM pairs CROSS JOIN LATERAL (
            SELECT f.dimension, f.bucket FROM {table} f
            WHERE (f.dimension, f.bucket) > (pairs.dimension, pairs.bucket)
            ORDER BY f.dimension, f.bucket LIMIT 1) after)
        SELECT pairs.dimension, pairs.bucket FROM pairs
        WHERE pairs.dimension <> %s AND (EXISTS (
            SELECT 1 FROM (SELECT current_run_id FROM chosen LIMIT %s) first WHERE EXISTS (
                SELECT 1 FROM {table} f WHERE f.run_id = first.current_run_id
                AND f.dimension = pairs.dimension AND f.bucket = pairs.bucket OFFSET 0)
            OFFSET 0) OR EXISTS (
            SELECT 1 FROM {table} f
            WHERE f.dimension = pairs.dimension AND f.bucket = pairs.bucket
            AND (f.run_id IN (SELECT current_run_id FROM chosen)) IS TRUE OFFSET 0))"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, SliceResult.OVERALL, FIRST_REPRESENTATIVES])
        return set(cursor.fetchall())


def name_counts(benchmark, names: list[str]) -> dict[str, int]:
    """How many of the board's models bear each of `names`."""
    if not names:
        return {}
    chosen, params = _chosen(benchmark)
    marks = ", ".join(["%s"] * len(names))
    with no_nested_loops() as cursor:
        cursor.execute(f"WITH {chosen} SELECT name, COUNT(*) FROM chosen "
                       f"WHERE name IN ({marks}) GROUP BY name", [*params, *names])
        return dict(cursor.fetchall())


def differing(benchmark, figures: list[str], dimension: str) -> str | None:
    """The first of `figures` whose values (to 1e-9) differ across the board's rows on the
    buckets of `dimension` (None: none does)."""
    chosen, params = _chosen(benchmark)
    columns = []
    for name in figures:
        value, more = _key(name)
        columns.append(f"MIN(ROUND({value}, 9)) < MAX(ROUND({value}, 9))")
        params += more * 2
    with no_nested_loops() as cursor:
        cursor.execute(f"""WITH {chosen} SELECT {", ".join(columns)} FROM chosen
            JOIN {SliceResult._meta.db_table} f ON f.run_id = chosen.current_run_id
            WHERE f.dimension = %s""", [*params, dimension])
        found = cursor.fetchone()
    return next((name for name, differs in zip(figures, found, strict=True) if differs), None)
