"""Figures hold the numbers of the table beside them; plotly.js is served once, cached."""

import gzip
import json

import plotly
import pytest

from leaderboard.boards.model_pages import slice_rows
from leaderboard.boards.selectors import BoardQuery, leaderboard_rows
from leaderboard.pages import charts
from leaderboard.pages.views import PLOTLY_JS
from scoring.kinds import get_kind
from tests.config.test_csp import assert_nothing_from_outside, policy
from tests.html import assert_in_html, one, select


def figure_spec(html: str, div_id: str) -> dict:
    """The figure (data, layout, config) a page embeds as JSON for static/js/charts.js."""
    assert_in_html(f'<div id="{div_id}" class="plotly-chart" data-figure="{div_id}-figure">'
                   '</div>', html)
    return json.loads(one(html, f'script#{div_id}-figure[type="application/json"]').raw_text)


def figure_data(html: str, div_id: str) -> list[dict]:
    """The traces a page hands to Plotly.newPlot for one chart."""
    return figure_spec(html, div_id)["data"]


MMAE = get_kind("mmae")


def scatter(rows):
    return charts.metric_scatter(rows, x="IFR", y="EMR", kind=MMAE)


@pytest.fixture
def board_of_three(board):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0),
                    intervals={("overall", ""): {"IFR": (45.0, 56.0), "EMR": (25.0, 35.0)}})
    score_by_slices("Beta", (40.0, 70.0, 20.0),
                    intervals={("overall", ""): {"IFR": (30.0, 41.0), "EMR": (12.0, 28.0)}},
                    organisation="Acme")
    score_by_slices("Gamma", (20.0, 80.0, 10.0))  # no intervals: no whiskers
    return benchmark


def test_the_scatter_plots_the_rows_with_their_intervals_as_whiskers(board_of_three):
    rows = leaderboard_rows(benchmark=board_of_three)
    trace = scatter(rows).data[0]
    assert list(trace.x) == [50.0, 40.0, 20.0]
    assert list(trace.y) == [30.0, 20.0, 10.0]
    assert list(trace.error_x.array) == [6.0, 1.0, None]
    assert list(trace.error_x.arrayminus) == [5.0, 10.0, None]
    assert list(trace.error_y.array) == [5.0, 8.0, None]
    assert list(trace.error_y.arrayminus) == [5.0, 8.0, None]
    assert trace.hovertext[1].startswith("<b>Beta</b> (Acme)<br>rank 2<br>EMR 20.00 [12.00, "
                                         "28.00]<br>IFR 40.00 [30.00, 41.00]")
    assert list(trace.customdata) == [r["model_id"] for r in rows]


def test_the_scatter_leaves_out_a_row_without_both_figures(board_of_three):
    rows = leaderboard_rows(benchmark=board_of_three)
    rows[1]["IFR"] = None
    assert list(scatter(rows).data[0].x) == [50.0, 20.0]


def test_hover_text_escapes_model_names(board):
    benchmark, score_by_slices = board
    score_by_slices("<img src=x onerror=alert(1)>", (50.0, 60.0, 30.0))
    trace = scatter(leaderboard_rows(benchmark=benchmark)).data[0]
    assert trace.hovertext[0].startswith("<b>&lt;img src=x onerror=alert(1)&gt;</b>")


def test_names_show_as_written_quotes_included(board):
    """Plotly shows `&quot;` and `&#x27;` literally: a name's quotes are left as they are,
    its < > & escaped (plotly reads those), in the hover, the point labels and the heatmap."""
    benchmark, score_by_slices = board
    score_by_slices('Echo "Pro" it\'s <v2> & co', (50.0, 60.0, 30.0))
    trace = scatter(leaderboard_rows(benchmark=benchmark)).data[0]
    assert trace.hovertext[0].startswith("<b>Echo \"Pro\" it's &lt;v2&gt; &amp; co</b>")
    assert trace.text[0] == "Echo \"Pro\" it's &lt;v2&gt; &amp; …"
    heatmap = charts.pivot_heatmap({"rows": [{"model": 'A "b"', "cells": [1.0], "n": [3]}],
                                    "buckets": ['x "y"'], "metric": "IFR"}, MMAE)
    assert list(heatmap.layout.yaxis.ticktext) == ['A "b"']
    assert list(heatmap.data[0].x) == ['x "y"']
    assert "&quot;" not in json.dumps(heatmap.to_plotly_json())


def test_every_point_is_named_beside_it_up_to_the_limit_never_cut_by_the_edge(board,
                                                                              monkeypatch):
    benchmark, score_by_slices = board
    for i in range(7):
        score_by_slices(f"Model {i}", (50.0 + i, 60.0, 30.0 + i))
    trace = scatter(leaderboard_rows(benchmark=benchmark)).data[0]
    assert trace.mode == "markers+text" and trace.cliponaxis is False
    assert list(trace.text) == [f"Model {i}" for i in range(6, -1, -1)]
    monkeypatch.setattr(charts, "LABELLED_POINTS", 3)  # beyond it: the best ranked only
    trace = scatter(leaderboard_rows(benchmark=benchmark)).data[0]
    assert [t for t in trace.text if t] == ["Model 6", "Model 5", "Model 4"]


def test_rows_whose_figures_read_alike_share_one_point_named_for_all(board):
    """Two rows at 27.78 IFR and 30.00 EMR as the table shows them (27.777... and 27.78 read
    alike) are one point, its hover naming both, never two points drawn one on the other."""
    benchmark, score_by_slices = board
    score_by_slices("Twin A", (27.777777, 60.0, 30.0))
    score_by_slices("Twin B", (27.78, 50.0, 30.0))
    score_by_slices("Other", (20.0, 40.0, 10.0))
    trace = scatter(leaderboard_rows(benchmark=benchmark)).data[0]
    assert len(trace.x) == 2
    assert trace.text[0] in ("Twin A +1 tied", "Twin B +1 tied") and trace.text[1] == "Other"
    assert "<b>Twin A</b>" in trace.hovertext[0] and "<b>Twin B</b>" in trace.hovertext[0]
    assert trace.marker.size[0] > trace.marker.size[1]


def test_the_default_chart_never_plots_a_column_of_one_value(client, board):
    """Every row at EMR 0: the board's chart plots IFR against CR, the figures that separate
    the rows, not against a column of zeros."""
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 60.0, 0.0))
    score_by_slices("B", (40.0, 70.0, 0.0))
    html = client.get(f"/b/{benchmark.slug}/").content.decode()
    (trace,) = figure_data(html, "chart-board")
    assert sorted(trace["y"]) == [40.0, 50.0] and sorted(trace["x"]) == [60.0, 70.0]


def test_the_board_page_plots_exactly_the_rows_its_table_shows(client, board_of_three):
    response = client.get("/b/mmae/?q=a")  # Alpha, Beta and Gamma all match "a"...
    html = response.content.decode()
    assert [r["model"] for r in response.context["rows"]] == ["Alpha", "Beta", "Gamma"]
    (trace,) = figure_data(html, "chart-board")
    assert (trace["x"], trace["y"]) == ([50.0, 40.0, 20.0], [30.0, 20.0, 10.0])
    response = client.get("/b/mmae/?q=acme")  # ...a filter narrows table and chart alike
    (trace,) = figure_data(response.content.decode(), "chart-board")
    assert (trace["x"], trace["y"], trace["error_y"]["array"]) == ([40.0], [20.0], [8.0])


def test_the_board_page_names_plotly_for_its_charts_and_links_the_new_pages(client,
                                                                           board_of_three):
    """The chart library is no script of the page: charts.js loads it on demand."""
    html = client.get("/b/mmae/").content.decode()
    assert not select(html, f'script[src="/static-plotly-{plotly.__version__}.js"]')
    assert len(select(html, f'script[data-plotly="/static-plotly-{plotly.__version__}.js"]')) == 1
    alpha = board_of_three.submissions.get(model__name="Alpha").model_id
    beta = board_of_three.submissions.get(model__name="Beta").model_id
    assert_in_html(f'<a class="cut name" href="/m/{alpha}/" title="Alpha"><bdi>Alpha</bdi></a>',
                   html)
    assert select(html, 'a[href="/b/mmae/pivot/"]')
    assert select(html, f'a[href="/b/mmae/compare/?models={alpha},{beta}"]')


def test_a_board_without_rows_has_no_chart(client, board):
    html = client.get("/b/mmae/").content.decode()
    assert "plotly-chart" not in html and "static-plotly" not in html


def test_model_bars_and_radar_hold_the_slice_table_figures(board):
    benchmark, score_by_slices = board
    submission = score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={
        ("modality", "music"): (70.0, 80.0, 40.0), ("modality", "sound"): (30.0, None, 10.0)},
        intervals={("modality", "music"): {"IFR": (60.0, 75.0)}})
    rows = [r for r in slice_rows(submission.current_run_id, get_kind("mmae"))
            if r["dimension"] == "modality"]
    bars = charts.slice_bars(rows, ("IFR", "CR", "EMR"), MMAE)
    assert [t.name for t in bars.data] == ["IFR", "CR", "EMR"]
    assert [list(t.x) for t in bars.data] == [["music", "sound"]] * 3
    assert [list(t.y) for t in bars.data] == [[70.0, 30.0], [80.0, None], [40.0, 10.0]]
    assert (list(bars.data[0].error_y.array), list(bars.data[0].error_y.arrayminus)) == \
        ([5.0, None], [10.0, None])
    radar = charts.slice_radar(rows, ("IFR", "CR", "EMR"), MMAE)
    assert list(radar.data[2].theta) == ["music", "sound", "music"]  # a closed line
    assert list(radar.data[2].r) == [40.0, 10.0, 40.0]


def test_the_heatmap_holds_the_pivot_cells_top_down():
    pivot = {"dimension": "modality", "metric": "EMR", "buckets": ["music", "sound"],
             "rows": [{"model": "A", "cells": [10.0, None], "n": [3, None]},
                      {"model": "B<i>", "cells": [5.5, 7.25], "n": [3, 4]}]}
    figure = charts.pivot_heatmap(pivot, MMAE)
    trace = figure.data[0]
    assert [list(r) for r in trace.z] == [[10.0, None], [5.5, 7.25]]
    assert list(trace.y) == [0, 1] and list(trace.x) == ["music", "sound"]
    assert list(figure.layout.yaxis.tickvals) == [0, 1]
    assert list(figure.layout.yaxis.ticktext) == ["A", "B&lt;i&gt;"]
    # Formatted as the pivot's table formats EMR.
    assert [list(r) for r in trace.text] == [["10.00", ""], ["5.50", "7.25"]]
    assert charts.pivot_heatmap(pivot, MMAE).layout.yaxis.autorange == "reversed"


def test_figures_that_are_all_equal_get_a_real_axis_and_colour_range():
    pivot = {"dimension": "modality", "metric": "EMR", "buckets": ["music", "sound"],
             "rows": [{"model": "A", "cells": [0.0, 0.0], "n": [3, 3]}]}
    trace = charts.pivot_heatmap(pivot, MMAE).data[0]
    assert (trace.zmin, trace.zmax) == (0.0, 5.0)
    rows = [{"model": m, "model_id": i, "organisation": "", "rank": 1, "IFR": ifr, "CR": 50.0,
             "EMR": 0.0} for i, (m, ifr) in enumerate((("A", 40.0), ("B", 60.0)))]
    figure = scatter(rows)
    assert list(figure.layout.yaxis.range) == [0.0, 5.0]  # EMR: every point at 0
    assert figure.layout.xaxis.range is None  # IFR differs: plotly scales it


def test_the_chart_opens_on_a_figure_that_separates_the_rows():
    rows = [{"EMR": 0.0, "IFR": 40.0, "CR": 50.0}, {"EMR": 0.0, "IFR": 60.0, "CR": 50.0}]
    assert charts.separating_metric(MMAE, rows) == "IFR"
    assert charts.separating_metric(MMAE, [{**rows[0], "EMR": 5.0}, rows[1]]) == "EMR"
    assert charts.separating_metric(MMAE, rows[:1]) == "EMR"  # nothing separates one row


def test_plotly_js_is_the_installed_bundle_with_long_cache_headers(client, db):
    url = f"/static-plotly-{plotly.__version__}.js"
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response.content == PLOTLY_JS.read_bytes()
    packed = client.get(url, headers={"Accept-Encoding": "gzip, deflate"})
    assert packed["Content-Encoding"] == "gzip" and packed["Vary"] == "Accept-Encoding"
    assert gzip.decompress(packed.content) == response.content


def test_an_old_plotly_url_redirects_to_the_current_one(client, db):
    response = client.get("/static-plotly-1.0.0.js")
    assert response.status_code == 302
    assert response["Location"] == f"/static-plotly-{plotly.__version__}.js"


def test_plotly_js_answers_get_only(client, db):
    assert client.post(f"/static-plotly-{plotly.__version__}.js").status_code == 405


def test_a_chart_renders_without_plotly_js_inline(board_of_three):
    html = charts.to_html(scatter(leaderboard_rows(benchmark=board_of_three, query=BoardQuery())),
                          div_id="x")
    spec = figure_spec(html, "x")
    assert spec["data"][0]["type"] == "scatter" and spec["config"] == charts.CONFIG
    # Data only: the one <script> holds JSON, which the Content-Security-Policy lets through.
    (script,) = select(html, "script")
    assert script.get("type") == "application/json"
    assert len(html) < 20_000  # no inline bundle, no default template


# Content-Security-Policy: plotly.js injects styles, so chart pages allow inline ones.
def test_a_page_with_a_chart_allows_inline_styles_and_nothing_else_inline(client, board_of_three):
    response = client.get("/b/mmae/")
    assert response.status_code == 200
    assert select(response, ".plotly-chart")
    assert_nothing_from_outside(policy(response), inline_styles=True)


def test_a_page_without_a_chart_allows_nothing_inline(client, board_of_three):
    response = client.get(f"/s/{board_of_three.submissions.get(model__name='Alpha').pk}/")
    assert response.status_code == 200
    assert_nothing_from_outside(policy(response), inline_styles=False)


LONG = "Echo Editor " + "x" * 188  # 200 characters, as long as a model's name may be


def test_a_long_name_is_cut_on_the_heatmaps_axis_and_whole_in_its_hover():
    twins = [{"model": f"{LONG[:-1]}{end}", "cells": [10.0, 20.0], "n": [3, 3]} for end in "ab"]
    figure = charts.pivot_heatmap({"dimension": "modality", "metric": "EMR",
                                   "buckets": ["music", "sound"], "rows": twins}, MMAE)
    ticks = list(figure.layout.yaxis.ticktext)
    assert ticks == [LONG[:charts.SHORT_NAME_CHARS - 1] + "…"] * 2
    assert list(figure.data[0].y) == [0, 1]  # two rows, though their ticks read the same
    hover = figure.data[0].hovertext[1][0]
    assert hover.startswith("<b>") and hover[3:hover.index("</b>")].replace("<br>", "") \
        == twins[1]["model"]
    assert max(len(line) for line in hover.split("<br>")) <= charts.HOVER_LINE_CHARS + 3


def test_a_long_name_is_cut_beside_its_point_and_whole_in_its_hover():
    rows = [{"model": LONG, "model_id": 1, "organisation": "", "rank": 1, "IFR": 40.0,
             "CR": 50.0, "EMR": 5.0}]
    trace = scatter(rows).data[0]
    assert trace.text[0] == LONG[:charts.SHORT_NAME_CHARS - 1] + "…"
    assert trace.hovertext[0][3:trace.hovertext[0].index("</b>")].replace("<br>", "") == LONG
