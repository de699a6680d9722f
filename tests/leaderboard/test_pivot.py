"""The pivot: models x buckets of one dimension for one metric, as a table and a heatmap."""

import pytest

from leaderboard.boards.model_pages import pivot
from tests.html import select
from tests.leaderboard.test_charts import figure_data, figure_spec


@pytest.fixture
def board3(board, other_author):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={
        ("modality", "music"): (70.0, 80.0, 40.0), ("modality", "sound"): (30.0, 40.0, 20.0),
        ("granularity", "local"): (1.0, 2.0, 3.0)})
    score_by_slices("Beta", (40.0, 70.0, 30.0), slices={  # EMR ties with Alpha, IFR ranks it second
        ("modality", "sound"): (35.0, 45.0, 25.0), ("modality", "speech"): (10.0, 20.0, 5.0)})
    score_by_slices("Gamma", (90.0, 90.0, 5.0), slices={("modality", "music"): (60.0, 65.0, 2.5)},
                    owner=other_author)
    score_by_slices("Hidden", (99.0, 99.0, 99.0), slices={("modality", "jazz"): (9.0, 9.0, 9.0)},
                    public=False)
    score_by_slices("Running", (99.0, 99.0, 99.0), slices={("modality", "jazz"): (9.0, 9.0, 9.0)},
                    status="scoring")
    return benchmark


def test_cells_are_each_models_figure_per_bucket_in_board_order(board3):
    table = pivot(benchmark=board3, dimension="modality", metric="EMR")
    assert table["buckets"] == ["music", "sound", "speech"]
    assert [(r["rank"], r["model"], r["cells"]) for r in table["rows"]] == [
        (1, "Alpha", [40.0, 20.0, None]),
        (2, "Beta", [None, 25.0, 5.0]),
        (3, "Gamma", [2.5, None, None]),
    ]
    ifr = pivot(benchmark=board3, dimension="modality", metric="IFR")
    assert [r["cells"] for r in ifr["rows"]] == [[70.0, 30.0, None], [None, 35.0, 10.0],
                                                 [60.0, None, None]]
    assert [r["n"] for r in ifr["rows"]] == [[4, 4, None], [None, 4, 4], [4, None, None]]


def test_models_sharing_a_name_are_told_apart(board, other_author):
    benchmark, score_by_slices = board
    first = score_by_slices("Same", (50.0, 50.0, 20.0))
    second = score_by_slices("Same", (50.0, 50.0, 10.0), owner=other_author)
    table = pivot(benchmark=benchmark, dimension="modality", metric="CR")
    assert [r["model"] for r in table["rows"]] == [f"Same (#{first.model_id})",
                                                   f"Same (#{second.model_id})"]
    assert table["buckets"] == []


def test_the_pivot_reads_the_slices_in_one_query(board3, django_assert_num_queries):
    # The board's state (whether its ranges are stored), the representatives (their judge
    # config, runs, submissions, models, owners and the owners' verified log-ins, one table
    # each), then their slices.
    with django_assert_num_queries(8):
        pivot(benchmark=board3, dimension="operation", metric="CR")


def test_the_page_shows_the_same_numbers_in_the_table_and_the_heatmap(client, board3):
    response = client.get("/b/mmae/pivot/?dimension=modality&metric=CR")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Hidden" not in html and "Running" not in html and "jazz" not in html
    (alpha_row,) = [row for row in select(html, "#pivot tbody tr") if "Alpha" in row.text]
    assert [td.text for td in alpha_row.select("td[class=num]")] == ["80.00", "40.00", "–"]
    (trace,) = figure_data(html, "chart-pivot")
    assert trace["z"] == [r["cells"] for r in response.context["table"]["rows"]] == [
        [80.0, 40.0, None], [None, 45.0, 20.0], [65.0, None, None]]
    assert trace["y"] == [0, 1, 2]
    assert figure_spec(html, "chart-pivot")["layout"]["yaxis"]["ticktext"] == [
        "Alpha", "Beta", "Gamma"]
    assert trace["x"] == ["music", "sound", "speech"]


def test_the_defaults_are_modality_and_emr(client, board3):
    response = client.get("/b/mmae/pivot/")
    assert response.status_code == 200
    table = response.context["table"]
    assert (table["dimension"], table["metric"]) == ("modality", "EMR")


@pytest.mark.parametrize("query, message", [
    ("dimension=colour", "dimension: Select a valid choice. colour is not one of the available"),
    ("metric=WER", "metric: Select a valid choice. WER is not one of the available choices."),
])
def test_a_bad_parameter_is_a_400_naming_it(client, board3, query, message):
    response = client.get(f"/b/mmae/pivot/?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()
    assert "plotly-chart" not in response.content.decode()


def test_a_dimension_without_figures_shows_an_empty_table(client, board3):
    response = client.get("/b/mmae/pivot/?dimension=operation")
    assert response.status_code == 200
    assert response.context["table"]["buckets"] == []
    assert response.context["chart"] is None


def test_an_unknown_board_is_a_404_and_post_a_405(client, board3):
    assert client.get("/b/nope/pivot/").status_code == 404
    assert client.post("/b/mmae/pivot/").status_code == 405
