"""A board page without ranking the whole board per request: the ranked orders the worker stores
for a board state, the database's ranking where it has not yet run, both equal to the Python
ranking (selectors) on every slice, and the pivot read a page at a time."""

import itertools

import pytest
from django.utils import timezone

from leaderboard.boards import board_pages, item_pages, rank_ranges, ranked_sql
from leaderboard.boards.model_pages import model_labels, pivot
from leaderboard.boards.selectors import (
    BoardQuery,
    board_table,
    bucket_choices,
    leaderboard_rows,
    licences,
)
from leaderboard.boards.state import representatives
from leaderboard.models import RankRanges, ReferenceFigure, ReferenceResult
from scoring.boards import board_changed
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import Submission
from tests.factories import board_benchmark, scored_submission
from tests.html import select, texts


def hrefs(page) -> list[str]:
    return [a.attrs.get("href") for a in select(page, "a[href]")]


SLICES = [("overall", ""), ("modality", "sound"), ("modality", "music"),
          ("operation", "local/removal")]


@pytest.fixture
def mixed_board(board, other_author):
    """A board with ties (exact and by float noise), names told apart only by case or not at
    all, figures missing on a slice, a partial submission, a hidden, a private, a flagged and
    an unfinished one, a chosen representative that is not the latest, reported results and
    two calibration baselines."""
    benchmark, score_by_slices = board
    noisy = 0.1 + 0.2  # equals 0.3 to 1e-9

    def slices(*figures):
        return dict(zip(SLICES[1:], figures, strict=False))

    score_by_slices("Alpha", (50.0, 60.0, 30.0),
                    slices=slices((70.0, 80.0, 40.0), (30.0, 40.0, 20.0), (1.0, 2.0, 3.0)))
    score_by_slices("alpha", (50.0, 60.0, 30.0), slices=slices((70.0, 80.0, 40.0)),
                    owner=other_author)
    score_by_slices("Beta", (noisy, 70.0, 30.0),
                    slices=slices((0.3, 45.0, 25.0), (10.0, 20.0, 5.0)))
    score_by_slices("Gamma", (0.3, 70.0, 30.0), slices=slices((35.0, 45.0, 25.0)))
    score_by_slices("Same", (20.0, 20.0, 10.0), slices=slices((20.0, 20.0, None), (9.0, 9.0, 9.0)))
    score_by_slices("Same", (20.0, 20.0, 10.0), slices=slices((20.0, 20.0, None)),
                    owner=other_author)
    score_by_slices("Partial", (5.0, 50.0, 2.0), coverage=0.5, slices=slices((5.0, 5.0, 5.0)))
    score_by_slices("Ünïcode", (5.0, 50.0, 2.0), slices=slices((None, None, None)))
    flagged = score_by_slices("Flagged", (40.0, 40.0, 40.0))
    hidden = score_by_slices("Hidden", (99.0, 99.0, 99.0))
    Submission.objects.filter(pk=flagged.pk).update(flag_reason="suspicious outputs")
    Submission.objects.filter(pk=hidden.pk).update(hidden=True)
    score_by_slices("Private", (99.0, 99.0, 99.0), public=False)
    score_by_slices("Running", (99.0, 99.0, 99.0), status="scoring")
    chosen = score_by_slices("Chosen", (1.0, 1.0, 1.0), slices=slices((1.0, 1.0, 1.0)))
    score_by_slices("Chosen", (90.0, 90.0, 90.0), slices=slices((90.0, 90.0, 90.0)))  # the latest
    chosen.representative = True
    chosen.save(update_fields=["representative"])
    for i in range(6):  # a tie of six, to cut across pages
        score_by_slices(f"Tied {5 - i}", (15.0, 15.0, 15.0), slices=slices((15.0, 15.0, 15.0)))
    reported = ReferenceResult.objects.create(benchmark_slug="mmae", model="Paper model",
                                              scope="2,000 samples", source="a paper")
    for (dimension, bucket), (ifr, cr, emr) in (
            (SLICES[0], (50.0, 60.0, 30.0)), (SLICES[0], (15.0, 15.0, 15.0)),
            (SLICES[1], (15.0, 15.0, 15.0))):
        ReferenceFigure.objects.update_or_create(
            result=reported, dimension=dimension, bucket=bucket,
            defaults={"values": {"IFR": ifr, "CR": cr, "EMR": emr}})
    tied = ReferenceResult.objects.create(benchmark_slug="mmae", model="Paper tie",
                                          scope="801 samples", source="a paper")
    ReferenceFigure.objects.create(result=tied, dimension="overall", bucket="",
                                   values={"IFR": 50.0, "CR": 60.0, "EMR": 30.0})
    for label, figures in (("Identity", (10.0, 95.0, 5.0)), ("Noise", (2.0, 3.0, 0.0))):
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=benchmark.judge_config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
            max_attempts=5, status="finished", purpose=ScoringRun.Purpose.BASELINE,
            label=label, status_times={"finished": timezone.now().isoformat()})
        for dimension, bucket in SLICES[:2]:
            SliceResult.objects.create(run=run, dimension=dimension, bucket=bucket, n=4, values={
                "n": 4, **dict(zip(("IFR", "CR", "EMR"), figures, strict=True))})
    board_changed(benchmark.id)
    return Benchmark.objects.get(pk=benchmark.pk)


def seeded_ids(benchmark):
    return {s.model.name: s.id for s in Submission.objects.filter(benchmark=benchmark)
            .select_related("model")}


def python_order(benchmark, dimension, bucket, **query):
    return [(r["submission"], r["rank"]) for r in leaderboard_rows(
        benchmark=benchmark, query=BoardQuery(dimension=dimension, bucket=bucket, **query))]


def every_slice(benchmark):
    return [("overall", "")] + [(d, b) for d, buckets in bucket_choices(benchmark).items()
                                for b in buckets]


def test_the_stored_order_of_every_slice_is_the_python_ranking(mixed_board):
    assert rank_ranges.refresh(mixed_board, replicates=20)
    stored = {(r.dimension, r.bucket): r for r in RankRanges.objects.filter(benchmark=mixed_board)}
    assert set(stored) == set(every_slice(mixed_board))
    for dimension, bucket in every_slice(mixed_board):
        order = stored[(dimension, bucket)].order
        assert [(pk, rank) for pk, rank, *_ in order] == \
            python_order(mixed_board, dimension, bucket)
    overall = [pk for pk, *_ in stored[("overall", "")].order]
    assert len(overall) == 16  # one row per model; hidden, private, unfinished ones left out
    assert seeded_ids(mixed_board)["Hidden"] not in overall
    ranks = [rank for _, rank, *_ in stored[("overall", "")].order]
    assert len(set(ranks)) < len(ranks) and ranks == sorted(ranks)


def test_the_database_ranks_every_slice_as_python_does(mixed_board):
    for (dimension, bucket), sort, descending in itertools.product(
            every_slice(mixed_board), ("rank", "EMR", "IFR", "CR"), (False, True)):
        expected = python_order(mixed_board, dimension, bucket, sort=sort, descending=descending)
        figures = ["EMR", "IFR", "CR"] if sort == "rank" else [sort, "EMR", "IFR", "CR"]
        rows, total = ranked_sql.window(mixed_board, figures, dimension, bucket, start=0, stop=100,
                                        descending=descending)
        assert [(pk, rank) for pk, rank, _ in rows] == expected, (dimension, bucket, sort)
        assert total == len(expected) == ranked_sql.count(mixed_board, dimension, bucket)
        middle, _ = ranked_sql.window(mixed_board, figures, dimension, bucket, start=2, stop=5,
                                      descending=descending)
        assert [(pk, rank) for pk, rank, _ in middle] == expected[2:5]


def test_the_database_gives_the_same_keys_as_the_worker(mixed_board):
    rank_ranges.refresh(mixed_board, replicates=20)
    for dimension, bucket in every_slice(mixed_board):
        stored = RankRanges.objects.get(benchmark=mixed_board, dimension=dimension, bucket=bucket)
        rows, _ = ranked_sql.window(mixed_board, ["EMR", "IFR", "CR"], dimension, bucket, start=0,
                                    stop=100)
        assert [[pk, rank, *key] for pk, rank, key in rows] == stored.order


def board_pages_of(benchmark, query, size):
    table = board_table(benchmark=benchmark, query=query)
    return [table[i:i + size] for i in range(0, max(1, len(table)), size)], len(table)


QUERIES = [BoardQuery(dimension=d, bucket=b, sort=sort, descending=descending, references=refs)
           for (d, b), sort, descending, refs in itertools.product(
               SLICES[:2], ("rank", "EMR", "CR"), (False, True), (True, False))]


@pytest.mark.slow
@pytest.mark.parametrize("stored", [True, False], ids=["stored", "in the database"])
def test_every_page_is_the_python_boards_page(mixed_board, stored):
    """Ranked rows, reported and diagnostic rows where their figures place them, ties cut
    across pages, in each direction, from the stored order or the database's."""
    if stored:
        rank_ranges.refresh(mixed_board, replicates=20)
    for query, size in itertools.product(QUERIES, (3, 7, 100)):
        expected, total = board_pages_of(mixed_board, query, size)
        for number, page in enumerate(expected, start=1):
            rows, paging = board_pages.board_page(mixed_board, query, number=number, size=size)
            assert rows == page, (query, size, number)
            assert paging["total"] == total


def test_a_filtered_or_column_sorted_board_is_ranked_in_python_as_before(mixed_board):
    for query in (BoardQuery(search="alpha"), BoardQuery(licence="MIT"),
                  BoardQuery(open_weights=False), BoardQuery(sort="model"),
                  BoardQuery(sort="coverage", descending=True)):
        assert not board_pages.fast(board_pages.get_kind("mmae"), query)
        rows, _ = board_pages.board_page(mixed_board, query, number=1, size=100)
        assert rows == board_table(benchmark=mixed_board, query=query)


def test_a_page_past_the_end_is_not_found(mixed_board):
    from django.http import Http404

    with pytest.raises(Http404, match="past the last page"):
        board_pages.board_page(mixed_board, BoardQuery(), number=9, size=10)


def test_a_board_change_makes_the_stored_order_stale_until_the_worker_stores_the_new(
        mixed_board, author, board):
    _, score_by_slices = board
    rank_ranges.refresh(mixed_board, replicates=20)
    assert rank_ranges.stored_window(mixed_board, "overall", "", start=0, stop=3)[1]
    first = python_order(mixed_board, "overall", "")[0][0]  # of the state before
    assert board_pages.standing(mixed_board, first)["range"] is not None
    newcomer = score_by_slices("Newcomer", (100.0, 100.0, 100.0))  # tells the board: a new version
    benchmark = Benchmark.objects.get(pk=mixed_board.pk)
    assert benchmark.board_version > mixed_board.board_version
    # Neither the order nor the ranges of the state before: ranks from the database, no ranges
    assert rank_ranges.stored_window(benchmark, "overall", "", start=0, stop=3) == ({}, None, 0)
    assert rank_ranges.stored(benchmark, "overall", "") == {}
    rows, _ = board_pages.ranked_page(benchmark, BoardQuery(), number=1, size=2)
    assert [(r["submission"], r["rank"], r["rank_range"]) for r in rows] == [
        (newcomer.id, 1, None), (first, 2, None)]
    assert [r["rank_range"] for r in board_table(benchmark=benchmark)
            if r["rank_range"] is not None] == []
    assert board_pages.standing(benchmark, first)["range"] is None
    assert rank_ranges.refresh(benchmark, replicates=20)
    order = RankRanges.objects.get(benchmark=benchmark, dimension="overall").order
    assert order[0][:2] == [newcomer.id, 1]
    assert [(pk, rank) for pk, rank, *_ in order] == python_order(benchmark, "overall", "")


def test_the_bucket_list_is_the_stored_one_or_the_databases(mixed_board):
    expected = bucket_choices(mixed_board)
    assert board_pages.bucket_choices(mixed_board) == expected  # in the database: nothing stored
    rank_ranges.refresh(mixed_board, replicates=20)
    assert board_pages.bucket_choices(mixed_board) == expected
    # until the worker runs again, the database's: never a past state's
    board_changed(mixed_board.id)
    assert board_pages.bucket_choices(Benchmark.objects.get(pk=mixed_board.pk)) == expected


@pytest.mark.parametrize("probed", [0, 2, 64])
def test_the_databases_bucket_list_is_the_representatives_slices_alone(mixed_board, author,
                                                                       monkeypatch, probed):
    """ranked_sql.slices walks every pair of the slice table and keeps those a representative
    has: never one that only a hidden, private, superseded, baseline or other board's run has,
    whatever sorts before or after it; found among the first representatives probed or in
    the pair's rows (none probed, a few, all of them)."""
    monkeypatch.setattr(ranked_sql, "FIRST_REPRESENTATIVES", probed)
    runs = {s.model.name: s.current_run for s in Submission.objects.filter(
        benchmark=mixed_board).select_related("model", "current_run")}
    chosen_run = Submission.objects.get(benchmark=mixed_board, representative=True).current_run
    superseded = Submission.objects.filter(benchmark=mixed_board, model__name="Chosen").exclude(
        representative=True).get().current_run
    baseline = ScoringRun.objects.get(benchmark=mixed_board, label="Identity")
    elsewhere = board_benchmark(slug="mmae-other")
    other = scored_submission(elsewhere, author, "Elsewhere", {("overall", ""): (1.0, 1.0, 1.0)})
    for run, dimension, bucket in (
            (runs["Alpha"], "aaa", "first of all"), (runs["Gamma"], "zzz", "last of all"),
            (chosen_run, "modality", ""), (runs["Hidden"], "granularity", "only hidden"),
            (runs["Private"], "granularity", "only private"),
            (superseded, "operation", "only superseded"),
            (baseline, "modality", "only a baseline"),
            (other.current_run, "modality", "only elsewhere"),
            (other.current_run, "zzzz", "after everything")):
        SliceResult.objects.create(run=run, dimension=dimension, bucket=bucket, n=1,
                                   values={"n": 1, "IFR": 1.0, "CR": 1.0, "EMR": 1.0})
    board_changed(mixed_board.id)
    benchmark = Benchmark.objects.get(pk=mixed_board.pk)
    shown = {s.current_run_id for s in representatives(benchmark)}
    expected = set(SliceResult.objects.filter(run_id__in=shown).exclude(dimension="overall")
                   .values_list("dimension", "bucket"))
    assert {("aaa", "first of all"), ("zzz", "last of all"), ("modality", "")} < expected
    assert ranked_sql.slices(benchmark) == expected
    assert not {b for _, b in ranked_sql.slices(benchmark)} & {
        "only hidden", "only private", "only superseded", "only a baseline", "only elsewhere",
        "after everything"}


def test_the_snapshot_names_the_licences(mixed_board):
    snapshot = board_pages.board_snapshot(mixed_board)
    assert snapshot["licences"] == licences(mixed_board) == ["MIT"]
    assert [d["model"] for d in snapshot["diagnostics"]] == ["Identity", "Noise"]


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "in the database"])
def test_the_pivot_page_is_the_full_pivots_page(mixed_board, stored):
    if stored:
        rank_ranges.refresh(mixed_board, replicates=20)
    full = pivot(benchmark=mixed_board, dimension="modality", metric="IFR")
    by_submission = {r["submission"]: r for r in full["rows"]}
    order = python_order(mixed_board, "overall", "")
    for number in range(1, 5):
        table, paging = board_pages.pivot_page(mixed_board, dimension="modality", metric="IFR",
                                               number=number, size=5)
        assert table["buckets"] == full["buckets"]
        assert [(r["submission"], r["rank"]) for r in table["rows"]] == \
            order[(number - 1) * 5: number * 5]
        for row in table["rows"]:
            assert {k: row[k] for k in ("model", "cells", "n")} == {
                k: by_submission[row["submission"]][k] for k in ("model", "cells", "n")}
        assert paging["total"] == len(order)


def test_the_pivot_tells_apart_names_shared_beyond_its_page(mixed_board):
    rows = []
    for number in range(1, 17):
        table, _ = board_pages.pivot_page(mixed_board, dimension="modality", metric="CR",
                                          number=number, size=1)
        rows += table["rows"]
    same = [r for r in rows if r["model"].startswith("Same")]
    assert [r["model"] for r in same] == [f"Same (#{r['model_id']})" for r in same]
    assert len({r["model_id"] for r in same}) == 2
    # "Alpha" and "alpha" are two names.
    assert {"Alpha", "alpha"} <= {r["model"] for r in rows}


def test_labels_count_each_name_once(board, other_author):
    class Model:
        def __init__(self, pk, name):
            self.id, self.name = pk, name

    models = [Model(i, "Same" if i % 2 else f"Model {i}") for i in range(2000)]
    labels = model_labels(models)
    assert labels[1] == "Same (#1)" and labels[2] == "Model 2"
    assert sum(1 for v in labels.values() if "(#" in v) == 1000


def test_the_pivot_opens_on_the_first_ranking_metric_that_differs(mixed_board, board):
    assert board_pages.pivot_metric(mixed_board, "modality") == "EMR"
    benchmark, score_by_slices = board
    assert board_pages.pivot_metric(benchmark, "complexity") == "EMR"  # no cells at all


@pytest.mark.parametrize("query", ["window", "place"])
def test_the_databases_ranking_plan_has_no_nested_loop(mixed_board, query):
    """Without planner statistics PostgreSQL nested loops over bitmap scans of every row
    (1.6 s at 10,000 submissions); the ranking query's plan must join by hash or merge (the
    suite runs on PostgreSQL): a window of the order, and one row's place in it."""
    figures = ["EMR", "IFR", "CR"]
    sql, params = ranked_sql.window_sql(mixed_board, figures, "modality", "sound", start=0,
                                        stop=100) if query == "window" else \
        ranked_sql.place_sql(mixed_board, figures, "modality", "sound",
                             seeded_ids(mixed_board)["Beta"])
    with ranked_sql.no_nested_loops() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "Hash Join" in plan or "Merge Join" in plan
    assert "Nested Loop" not in plan


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "in the database"])
def test_a_standing_is_where_the_python_board_lists_the_row(mixed_board, stored):
    """The model page's standing (rank, range, rows ranked, position with the reference rows
    inline) from the stored order or the database's, for every row the board ranks."""
    if stored:
        rank_ranges.refresh(mixed_board, replicates=20)
    table = board_table(benchmark=mixed_board)
    ranked = [r for r in table if r["rank"] is not None]
    assert len(table) > len(ranked) > 10  # reference rows stand among the ranked ones
    for position, row in enumerate(table):
        if row["rank"] is None:
            continue
        found = board_pages.standing(mixed_board, row["submission"])
        assert found == {"rank": row["rank"], "range": row["rank_range"], "of": len(ranked),
                         "position": position}, row["model"]
        assert (found["range"] is not None) == stored
    assert board_pages.standing(mixed_board, seeded_ids(mixed_board)["Hidden"]) is None


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "in the database"])
def test_the_item_pages_sides_are_the_python_boards_rows(mixed_board, stored):
    """The item page's systems (each model's representative, in board order, with its rank)
    from the stored order or the database's, as the Python board ranks them."""
    if stored:
        rank_ranges.refresh(mixed_board, replicates=20)
    sides = item_pages.board_order(mixed_board)
    assert [(s.entry.id, s.rank) for s in sides] == python_order(mixed_board, "overall", "")
    assert len(sides) == 16


def test_the_licences_are_those_of_the_models_on_the_board(mixed_board):
    """A model's licence lists when one of its submissions is on the board: not a hidden,
    private or unfinished one's."""
    from submissions.models import ModelEntry

    for name, licence in (("Hidden", "GPL-3.0"), ("Private", "CC-BY-NC-4.0"),
                          ("Running", "proprietary"), ("Gamma", "Apache-2.0")):
        ModelEntry.objects.filter(name=name).update(licence=licence)
    assert ranked_sql.licences(mixed_board) == licences(mixed_board) == ["Apache-2.0", "MIT"]


@pytest.mark.parametrize("way", ["stored", "in the database"])
def test_the_compare_link_names_the_top_two(mixed_board, way, monkeypatch):
    """The board's top two models, whichever way they are read: the worker's order, or the
    database's first two rows."""
    first = ranked_sql.first
    if way == "stored":  # the stored order is read, not the database's ranking
        monkeypatch.setattr(ranked_sql, "first", None)
        rank_ranges.refresh(mixed_board, replicates=20)
        mixed_board = Benchmark.objects.get(pk=mixed_board.pk)  # a new request learns the new state
    top = leaderboard_rows(benchmark=mixed_board)[:2]
    expected = ",".join(str(r["model_id"]) for r in top)
    assert board_pages.top_two(mixed_board) == expected
    # The database's first rows are the window's, ties and names told apart by case included.
    for dimension, bucket in SLICES:
        window, _ = ranked_sql.window(mixed_board, ["EMR", "IFR", "CR"], dimension, bucket,
                                      start=0, stop=50)
        assert first(mixed_board, ["EMR", "IFR", "CR"], dimension, bucket, 50) \
            == [pk for pk, _, _ in window]


def test_a_first_board_page_names_the_top_two_from_its_own_ranking(mixed_board, client,
                                                                    monkeypatch):
    """Before the worker stored the state, the board's first page ranks the overall slice
    in the database, and the compare link takes the top two from those rows rather than
    asking the database again; a slice's page (another ranking) still asks."""
    asked = []
    first = ranked_sql.first
    monkeypatch.setattr(ranked_sql, "first", lambda *args: asked.append(args[2:4]) or
                        first(*args))
    expected = ",".join(str(r["model_id"]) for r in leaderboard_rows(benchmark=mixed_board)[:2])
    link = f"/b/mmae/compare/?models={expected}"
    assert link in hrefs(client.get("/b/mmae/"))
    assert asked == []
    board_changed(mixed_board.id)
    assert link in hrefs(client.get("/b/mmae/?dimension=modality&bucket=sound"))
    assert asked == [("overall", "")]


@pytest.mark.django_db
def test_boards_that_share_a_title_are_told_apart_by_slug_in_the_tabs(client):
    board_benchmark(slug="final-single", title="Audio Editing Challenge")
    board_benchmark(slug="final-agent", title="Audio Editing Challenge", sha256="b" * 64)
    board_benchmark(slug="mmae", title="MMAE", sha256="c" * 64)
    tabs = texts(client.get("/b/mmae/"), "nav.tabs a")
    assert sorted(tabs) == ["Audio Editing Challenge final-agent",
                            "Audio Editing Challenge final-single", "MMAE"]
