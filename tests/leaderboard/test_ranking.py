"""Exact ranks, and rank ranges from the paired bootstrap."""

import random

import numpy as np
import pytest

from leaderboard.boards import rank_ranges, ranking
from leaderboard.boards.selectors import BoardQuery, leaderboard_rows
from leaderboard.models import RankRanges
from scoring.models import Benchmark, SliceResult
from tests.html import one, select


def rows(benchmark, **query):
    """(model, rank, rank range) of the board as a request now reads it: the benchmark's row
    as it is now (its board's version, which each publication raised)."""
    benchmark = Benchmark.objects.get(pk=benchmark.pk)
    return [(r["model"], r["rank"], r["rank_range"])
            for r in leaderboard_rows(benchmark=benchmark, query=BoardQuery(**query))]


def test_float_noise_never_decides_a_rank_and_the_next_key_does(board):
    """Equal IFR reached by two summation orders: the higher CR ranks first."""
    benchmark, score_by_slices = board
    score_by_slices("A", (27.77777777777778, 40.0, 0.0))
    score_by_slices("B", (27.777777777777775, 50.0, 0.0))
    assert 27.77777777777778 != 27.777777777777775
    assert [(m, r) for m, r, _ in rows(benchmark)] == [("B", 1), ("A", 2)]


def test_rows_equal_on_the_whole_key_share_a_rank(board):
    benchmark, score_by_slices = board
    score_by_slices("A", (0.1 + 0.2, 50.0, 10.0))
    score_by_slices("B", (0.3, 50.0, 10.0))
    score_by_slices("C", (0.3, 49.0, 10.0))
    assert [(m, r) for m, r, _ in rows(benchmark)] == [("A", 1), ("B", 1), ("C", 3)]


def test_competition_ranks_are_exact_and_shared():
    assert ranking.competition_ranks([(2,), (1,), (2,), (3,)]) == [2, 1, 2, 4]


def clear_gap(passed_if: float):
    """Instruction-following rubrics pass with this chance, consistency ones never: EMR 0."""
    chance = random.Random(f"{passed_if}")
    return lambda sample, rubric: int(rubric.is_instruction_following
                                      and chance.random() < passed_if)


def the_same_answers(passes):
    """A pass function that gives every submission the same answers."""
    answers = {}
    return lambda sample, rubric: answers.setdefault((sample.id, rubric.index),
                                                     passes(sample, rubric))


def test_models_far_apart_on_ifr_get_disjoint_ranges_though_both_have_emr_0(item_board):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("Strong", clear_gap(0.9))
    score_by_item_passes("Weak", clear_gap(0.1))
    assert rank_ranges.refresh(benchmark, replicates=1000)
    (strong, weak) = rows(benchmark)
    assert [r["EMR"] for r in leaderboard_rows(benchmark=benchmark)] == [0.0, 0.0]
    assert (strong[0], weak[0]) == ("Strong", "Weak")
    assert strong[2] == (1, 1) and weak[2] == (2, 2)


def test_identical_answers_get_the_same_rank_and_identical_ranges(item_board):
    benchmark, score_by_item_passes, _ = item_board
    remembered = the_same_answers(clear_gap(0.5))
    score_by_item_passes("Twin A", remembered)
    score_by_item_passes("Twin B", remembered)
    score_by_item_passes("Other", clear_gap(0.45))
    rank_ranges.refresh(benchmark, replicates=1000)
    found = {m: (rank, spread) for m, rank, spread in rows(benchmark)}
    assert found["Twin A"] == found["Twin B"]
    assert found["Twin A"][1][0] <= found["Twin A"][0] <= found["Twin A"][1][1]


def test_close_models_get_overlapping_ranges(item_board):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("A", clear_gap(0.5))
    score_by_item_passes("B", clear_gap(0.52))
    rank_ranges.refresh(benchmark, replicates=1000)
    (_, _, first), (_, _, second) = rows(benchmark)
    assert first[1] >= second[0]  # overlapping


def test_every_slice_gets_ranges_and_a_sort_reranks_with_its_own(item_board):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("High IFR", clear_gap(0.9))
    score_by_item_passes("High CR", lambda s, r: int(not r.is_instruction_following))
    rank_ranges.refresh(benchmark, replicates=500)
    slices = set(SliceResult.objects.filter(run__submissions__benchmark=benchmark)
                 .values_list("dimension", "bucket"))
    assert set(RankRanges.objects.values_list("dimension", "bucket")) == slices
    by_ifr = rows(benchmark, sort="IFR")
    by_cr = rows(benchmark, sort="CR")
    assert [m for m, *_ in by_ifr] == ["High IFR", "High CR"]
    assert [m for m, *_ in by_cr] == ["High CR", "High IFR"]
    assert by_cr[0][1:] == (1, (1, 1))
    # Sorting the other way lists the same ranks from the bottom.
    assert [m for m, *_ in rows(benchmark, sort="CR", descending=True)] == ["High IFR",
                                                                             "High CR"]


def test_ranges_are_computed_once_per_board_state(item_board, author):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("A", clear_gap(0.6))
    assert rank_ranges.refresh(benchmark, replicates=200) is True
    assert rank_ranges.refresh(benchmark, replicates=200) is False
    score_by_item_passes("B", clear_gap(0.2))  # a new publication changes the state
    assert [r[2] for r in rows(benchmark)] == [None, None]  # no range of the state before
    assert rank_ranges.refresh(benchmark, replicates=200) is True
    assert {r[0] for r in rows(benchmark)} == {"A", "B"}
    assert all(r[2] is not None for r in rows(benchmark))


def test_a_board_visit_neither_computes_nor_asks_a_worker(item_board, client, monkeypatch):
    """The change asks the worker (scoring.boards.board_changed); a visit only reads."""
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("A", clear_gap(0.6))
    asked = []
    monkeypatch.setattr("leaderboard.tasks.refresh_rank_ranges.delay", asked.append)
    monkeypatch.setattr("celery.current_app.send_task", lambda *a, **k: asked.append(a))
    for _ in range(3):
        page = client.get("/b/mmae/")
        assert page.status_code == 200 and b"Rank ranges are being computed" in page.content
    assert asked == [] and not RankRanges.objects.exists()


def test_rows_without_per_item_values_keep_their_figures_in_every_replicate(board):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 50.0, 30.0))
    score_by_slices("B", (50.0, 50.0, 20.0))
    rank_ranges.refresh(benchmark, replicates=100)
    assert [(m, spread) for m, _, spread in rows(benchmark)] == [("A", (1, 1)), ("B", (2, 2))]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_draws_are_seeded_and_each_replicate_draws_every_position(seed):
    first = ranking.draws(30, replicates=50, seed=seed)
    assert (first == ranking.draws(30, replicates=50, seed=seed)).all()
    assert (first.sum(axis=1) == 30).all()


# --- compare: are two models really apart? ------------------------------------------------


def test_a_clear_gap_is_a_verdict_with_its_interval_clear_of_zero(item_board):
    benchmark, score_by_item_passes, _ = item_board
    strong = score_by_item_passes("Strong", clear_gap(0.9))
    weak = score_by_item_passes("Weak", clear_gap(0.1))
    rows = rank_ranges.paired_differences(benchmark, strong, weak, replicates=500)
    overall = {c["metric"].key: c for c in rows[0]["cells"]}
    assert rows[0]["dimension"] == "overall" and rows[0]["n"] == 40
    assert overall["IFR"]["verdict"] == "A ahead" and overall["IFR"]["lo"] > 0
    assert overall["IFR"]["difference"] == pytest.approx(
        _figure(strong, "IFR") - _figure(weak, "IFR"))
    assert overall["EMR"] == {**overall["EMR"], "difference": 0.0, "verdict": "not separable"}
    backwards = rank_ranges.paired_differences(benchmark, weak, strong, replicates=500)
    assert {c["metric"].key: c["verdict"] for c in backwards[0]["cells"]}["IFR"] == "B ahead"
    assert {r["dimension"] for r in rows} == {"overall", "complexity", "complexity_group",
                                              "modality", "granularity", "operation"}


def test_identical_answers_are_not_separable_on_any_figure(item_board):
    benchmark, score_by_item_passes, _ = item_board
    remembered = the_same_answers(clear_gap(0.5))
    a, b = score_by_item_passes("Twin A", remembered), score_by_item_passes("Twin B", remembered)
    for row in rank_ranges.paired_differences(benchmark, a, b, replicates=200):
        for cell in row["cells"]:
            # Never "ahead"; a slice of few items gets no verdict at all.
            assert cell.get("verdict", "not separable") in ("not separable",
                                                            rank_ranges.TOO_FEW)
            assert cell["difference"] in (0.0, None)


def test_a_slice_of_few_items_shows_its_difference_without_a_verdict(item_board):
    benchmark, score_by_item_passes, _ = item_board
    strong = score_by_item_passes("Strong", clear_gap(0.9))
    weak = score_by_item_passes("Weak", clear_gap(0.1))
    rows = rank_ranges.paired_differences(benchmark, strong, weak, replicates=200)
    small = [r for r in rows if r["n"] < rank_ranges.MIN_VERDICT_ITEMS]
    assert small and all(c["verdict"] == rank_ranges.TOO_FEW
                         for r in small for c in r["cells"] if c["difference"] is not None)
    assert all(c.get("verdict") != rank_ranges.TOO_FEW
               for r in rows if r["n"] >= rank_ranges.MIN_VERDICT_ITEMS for c in r["cells"])


def test_the_compare_page_says_who_is_ahead(item_board, client):
    benchmark, score_by_item_passes, _ = item_board
    strong = score_by_item_passes("Strong", clear_gap(0.9))
    weak = score_by_item_passes("Weak", clear_gap(0.1))
    html = client.get(f"/b/mmae/compare/?models={strong.model_id},{weak.model_id}") \
        .content.decode()
    table = one(html, "table#differences-1")
    assert any(name.text == "Strong" and name.tail.startswith(" ahead")
               for name in table.select("span[class='cut name'][title=Strong]"))
    assert "not separable" in table.text
    verdicts = len(select(html, "table[id^=differences-] [class='verdict verdict-a-ahead'], "
                                "table[id^=differences-] [class='verdict verdict-b-ahead'], "
                                "table[id^=differences-] [class='verdict verdict-not-separable']"))
    assert f"Of the {verdicts} verdicts below, about {round(verdicts * 0.05)} would read" in html


def _figure(submission, metric):
    return SliceResult.objects.get(run=submission.current_run, dimension="overall") \
        .values[metric]


def test_deciders_name_the_first_figure_on_which_each_key_differs_from_the_one_before():
    keys = [(-5.0, -40.0), (-5.0, -30.0), (-5.0, -30.0), (-2.0, -90.0)]
    assert ranking.deciders(keys) == [None, 1, None, 0]
    assert ranking.deciders([]) == [] and ranking.deciders([(-1.0,)]) == [None]


def test_the_model_page_shows_its_rank_and_rank_range_and_links_the_board(item_board, client):
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("Strong", clear_gap(0.9))
    weak = score_by_item_passes("Weak", clear_gap(0.1))
    rank_ranges.refresh(benchmark, replicates=200)
    html = client.get(f"/m/{weak.model_id}/").content.decode()
    line = one(html, "p#board-rank-mmae")
    assert line.text.startswith("Rank 2 (range 2–2) of 2 on the ")
    assert line.one("strong").text == "2" and line.one("small").text == "(range 2–2)"
    assert line.one("a").get("href") == "/b/mmae/"


@pytest.mark.parametrize("levels", [(2, 1000, 1000), (1000, 3, 1000), (10**6,), (3, 3, 3)],
                         ids=["first figure ties often", "first figure seldom ties",
                              "one figure", "every figure ties"])
@pytest.mark.parametrize("pairwise", [0, 1000], ids=["row by row", "pair by pair"])
def test_replicate_ranks_are_one_more_than_the_rows_strictly_ahead(levels, pairwise,
                                                                    monkeypatch):
    """Competition ranks by the whole key, exact to 1e-9, NaN last, against their definition
    computed pair by pair: both ways of sorting (by every figure, or by the first and then the
    tied rows) give them, and so does the comparison of every pair at once (small boards)."""
    monkeypatch.setattr(ranking, "PAIRWISE_ROWS", pairwise)
    monkeypatch.setattr(ranking, "PAIRWISE_CHUNK", 7)  # chunks that do not divide 20
    rng = np.random.default_rng(len(levels) + levels[0])
    columns = [np.round(rng.integers(0, n, (20, 60)) / n * 100, 9) for n in levels]
    for column in columns:
        column[rng.random(column.shape) < 0.1] = np.nan
    found = ranking._replicate_ranks(columns)
    keys = [np.where(np.isnan(c), -np.inf, np.round(c, 9)) for c in columns]
    for r in range(20):
        rows = [tuple(k[r, m] for k in keys) for m in range(60)]
        assert list(found[r]) == [1 + sum(other > mine for other in rows) for mine in rows]


def test_what_a_slice_can_tell_apart_is_the_median_half_width_of_neighbours_differences(
        item_board, client):
    """Three models whose samples pass whole or not at all (EMR per sample 0 or 1): the stored
    separable difference in EMR is the median, over the two neighbouring pairs, of the
    half-width of the 95% interval of their paired difference, computed here from the samples'
    0/1 values with the board's own draws; the board and the API say it."""
    benchmark, score_by_item_passes, samples = item_board
    chance = {"A": 0.8, "B": 0.55, "C": 0.3}
    whole = {name: [int(random.Random(f"{name}{s.id}").random() < p) for s in samples]
             for name, p in chance.items()}
    position = {s.id: i for i, s in enumerate(samples)}
    for name in chance:
        score_by_item_passes(name, lambda s, r, name=name: whole[name][position[s.id]])
    assert rank_ranges.refresh(benchmark, replicates=400)
    stored = RankRanges.objects.get(benchmark=benchmark, dimension="overall").separable
    assert stored["items"] == len(samples)

    weights = ranking.draws(len(samples), replicates=400, seed=ranking.SEED)
    emr = {name: 100 * (weights @ np.array(v)) / weights.sum(axis=1)
           for name, v in whole.items()}
    order = sorted(chance, key=lambda n: -np.mean(whole[n]))
    halves = []
    for upper, lower in zip(order, order[1:], strict=False):
        lo, hi = np.percentile(emr[upper] - emr[lower], [2.5, 97.5])
        halves.append((hi - lo) / 2)
    assert stored["metrics"]["EMR"]["pairs"] == 2
    assert stored["metrics"]["EMR"]["difference"] == pytest.approx(np.median(halves), abs=1e-6)

    said = f"EMR differences under {np.median(halves):.2f} points are not separable here"
    page = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert said in one(page, "#separable").text
    api = client.get(f"/api/leaderboards/{benchmark.slug}/").json()
    assert api["separable"]["metrics"]["EMR"]["difference"] == pytest.approx(
        np.median(halves), abs=1e-6)


def test_a_figure_equal_on_every_row_hands_the_statement_to_the_next_of_the_key(
        item_board, client):
    """EMR 0 for both rows in every resample: the board says so and gives what IFR, which
    decides their order, can tell apart."""
    benchmark, score_by_item_passes, _ = item_board
    score_by_item_passes("Strong", clear_gap(0.9))
    score_by_item_passes("Weak", clear_gap(0.4))
    assert rank_ranges.refresh(benchmark, replicates=300)
    stored = RankRanges.objects.get(benchmark=benchmark, dimension="overall").separable
    assert stored["metrics"]["EMR"]["difference"] == 0
    ifr = stored["metrics"]["IFR"]["difference"]
    assert ifr > 0
    text = one(client.get(f"/b/{benchmark.slug}/").content.decode(), "#separable").text
    assert text.startswith("EMR is the same for every row in every resample here; IFR "
                           f"differences under {ifr:.2f} points are not separable here")
    # Sorted by a figure, that figure is the one said.
    text = one(client.get(f"/b/{benchmark.slug}/?sort=CR").content.decode(), "#separable").text
    assert text.startswith("CR differences under ")
