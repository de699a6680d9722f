"""Plotly figures of the leaderboard's pages.

Each builder takes the very row dicts its page's table shows (selectors build them), so a chart
cannot disagree with the numbers beside it. Pages load plotly.js once (views.plotly_js) and
static/js/charts.js, and embed each figure with `to_html`.
"""

from __future__ import annotations

import json
from html import escape

import plotly.graph_objects as go
import plotly.io as pio
from django.utils.html import format_html, json_script
from django.utils.safestring import SafeString

METRICS = ("IFR", "CR", "EMR")
PALETTE = ("#2f5fd0", "#2e9e5b", "#d9822b", "#8e44ad")
COLOURS = {"IFR": "#2f5fd0", "CR": "#2e9e5b", "EMR": "#d9822b",
           "acc_strict": "#2f5fd0", "acc": "#2e9e5b", "score": "#2f5fd0",
           "pass_A": "#2e9e5b", "pass_B": "#d9822b"}
NAMES = {"IFR": "IFR (instruction following)", "CR": "CR (consistency)",
         "EMR": "EMR (exact match)", "acc_strict": "acc (strict: correct of all)",
         "acc": "acc (correct of parsed)", "score": "score (mean of both passes)",
         "pass_A": "pass A (reference first)", "pass_B": "pass B (swapped)"}


def _colour(metric: str, index: int) -> str:
    return COLOURS.get(metric, PALETTE[index % len(PALETTE)])
CONFIG = {"displaylogo": False, "responsive": True, "showSendToCloud": False,
          "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13,
        "color": "#1d2433"}
GRID = "#e6e9f0"


def to_html(figure: go.Figure, *, div_id: str) -> SafeString:
    """The figure as a <div> and its JSON (data, layout, config); static/js/charts.js draws
    it with the plotly.js the page loads. Data, not an inline script, so that pages keep a
    Content-Security-Policy without 'unsafe-inline' scripts."""
    spec = json.loads(pio.to_json(figure, validate=False))
    return format_html('<div id="{}" class="plotly-chart" data-figure="{}-figure"></div>{}',
                       div_id, div_id, json_script({**spec, "config": CONFIG},
                                                   f"{div_id}-figure"))


def _layout(**extra) -> dict:
    # No plotly template: the default one adds about 8 KB of JSON to every figure.
    return {"template": "none", "font": FONT, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
            "margin": {"l": 60, "r": 20, "t": 30, "b": 50}, "hoverlabel": {"align": "left"},
            **extra}


def _axis(title: str, **extra) -> dict:
    return {"title": {"text": title}, "gridcolor": GRID, "zerolinecolor": GRID,
            "linecolor": "#c4cbd7", "automargin": True, **extra}


def error_bars(values: list, intervals: list) -> dict:
    """Asymmetric error bars reaching from each value to its interval's ends (None: no bar)."""
    plus, minus = [], []
    for value, interval in zip(values, intervals, strict=True):
        if value is None or interval is None:
            plus.append(None)
            minus.append(None)
        else:
            plus.append(max(0.0, interval[1] - value))
            minus.append(max(0.0, value - interval[0]))
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
            "thickness": 1.2, "width": 3}


def _translucent(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _figure_text(value, interval) -> str:
    if value is None:
        return "–"
    text = f"{value:.2f}"
    return f"{text} [{interval[0]:.1f}, {interval[1]:.1f}]" if interval else text


def emr_ifr_scatter(rows: list[dict]) -> go.Figure:
    """EMR against IFR, one point per board row that has both, with bootstrap intervals."""
    return metric_scatter(rows, x="IFR", y="EMR", metrics=METRICS)


def _unit(scale: float) -> str:
    return "%" if scale == 100 else f"0-{scale:g}"


def metric_scatter(rows: list[dict], *, x: str, y: str, metrics: tuple[str, ...],
                   scale: float = 100.0, labels: dict | None = None) -> go.Figure:
    """Metric y against metric x, one point per board row that has both, with intervals
    where there are any; the hover lists every metric of the row."""
    shown = [r for r in rows if r[x] is not None and r[y] is not None]
    hover = [f"<b>{escape(r['model'])}</b>"
             + (f" ({escape(r['organisation'])})" if r["organisation"] else "")
             + f"<br>rank {r['rank']}"
             + "".join(f"<br>{escape(m)} {_figure_text(r[m], r.get(f'{m}_interval'))}"
                       for m in metrics) for r in shown]
    trace = go.Scatter(
        x=[r[x] for r in shown], y=[r[y] for r in shown], mode="markers",
        hovertext=hover, hoverinfo="text", name="models",
        customdata=[r["model_id"] for r in shown],
        marker={"size": 10, "color": PALETTE[0], "opacity": .85,
                "line": {"width": 1, "color": "#fff"}},
        error_x={**error_bars([r[x] for r in shown],
                              [r.get(f"{x}_interval") for r in shown]), "color": "#9fb3e6"},
        error_y={**error_bars([r[y] for r in shown],
                              [r.get(f"{y}_interval") for r in shown]), "color": "#9fb3e6"},
    )
    return go.Figure(trace, layout=_layout(
        height=440, showlegend=False,
        xaxis=_axis(f"{(labels or {}).get(x, x)} ({_unit(scale)})"),
        # Figures never go below 0: an all-zero metric must not get a -1..1 axis.
        yaxis=_axis(f"{(labels or {}).get(y, y)} ({_unit(scale)})", rangemode="nonnegative"),
        hovermode="closest"))


def slice_bars(rows: list[dict], metrics: tuple[str, ...] = METRICS,
               scale: float = 100.0, labels: dict | None = None) -> go.Figure:
    """The metrics per bucket of one dimension (rows of selectors.slice_rows), grouped; each
    named by its label (`labels`: metric -> label, the key where none)."""
    buckets = [r["bucket"] for r in rows]
    labels = labels or {}
    traces = [go.Bar(
        name=labels.get(metric, metric), x=buckets, y=[r[metric] for r in rows],
        marker_color=_colour(metric, i),
        error_y={**error_bars([r[metric] for r in rows],
                              [r.get(f"{metric}_interval") for r in rows]), "color": "#5b6475"},
        hovertext=[f"<b>{escape(r['bucket'])}</b> (n={r['n']})<br>"
                   f"{escape(NAMES.get(metric, labels.get(metric, metric)))} "
                   f"{_figure_text(r[metric], r.get(f'{metric}_interval'))}" for r in rows],
        hoverinfo="text") for i, metric in enumerate(metrics)]
    return go.Figure(traces, layout=_layout(
        height=420, barmode="group", bargap=.25,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 60, "r": 20, "t": 40, "b": 40},
        xaxis=_axis("", tickangle=-30 if len(buckets) > 6 else 0),
        yaxis=_axis(_unit(scale), range=[0, scale * 1.04])))


def slice_radar(rows: list[dict], metrics: tuple[str, ...] = METRICS,
                scale: float = 100.0, labels: dict | None = None) -> go.Figure:
    """The same figures as slice_bars on a radar: one closed line per metric."""
    buckets = [r["bucket"] for r in rows]
    labels = labels or {}
    traces = []
    for i, metric in enumerate(metrics):
        values = [r[metric] for r in rows]
        colour = _colour(metric, i)
        traces.append(go.Scatterpolar(
            name=labels.get(metric, metric), theta=buckets + buckets[:1], r=values + values[:1],
            mode="lines+markers", line={"color": colour}, fill="toself",
            fillcolor=_translucent(colour, .12),
            hovertext=[f"<b>{escape(r['bucket'])}</b> (n={r['n']})<br>"
                       f"{escape(NAMES.get(metric, labels.get(metric, metric)))} "
                       f"{_figure_text(r[metric], r.get(f'{metric}_interval'))}"
                       for r in rows + rows[:1]],
            hoverinfo="text"))
    # The first bucket at the top, clockwise; the radial scale between the first two buckets,
    # where it hides no line.
    between = 90 - 180 / max(len(buckets), 1)
    return go.Figure(traces, layout=_layout(
        height=480, legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 70, "r": 70, "t": 50, "b": 40},
        polar={"radialaxis": {"range": [0, scale], "gridcolor": GRID,
                              "ticksuffix": "%" if scale == 100 else "",
                              "angle": between, "tickangle": between, "linecolor": GRID,
                              "tickfont": {"size": 10, "color": "#5b6475"}},
               "angularaxis": {"gridcolor": GRID, "linecolor": "#c4cbd7", "rotation": 90,
                               "direction": "clockwise"},
               "bgcolor": "#fff"}))


def pivot_heatmap(pivot: dict) -> go.Figure:
    """A pivot (selectors.pivot) as a heatmap: models down, buckets across, as in its table."""
    rows, buckets = pivot["rows"], pivot["buckets"]
    metric = escape(pivot.get("label", pivot["metric"]))  # its label, where the view gave it
    z = [r["cells"] for r in rows]
    labels = [escape(r["model"]) for r in rows]
    text = [["" if v is None else f"{v:.1f}" for v in r["cells"]] for r in rows]
    hover = [[f"<b>{escape(r['model'])}</b><br>{escape(b)} (n={n if n is not None else '–'})"
              f"<br>{metric} {'–' if v is None else f'{v:.2f}'}"
              for b, v, n in zip(buckets, r["cells"], r["n"], strict=True)] for r in rows]
    trace = go.Heatmap(
        z=z, x=[escape(b) for b in buckets], y=labels, text=text, texttemplate="%{text}",
        hovertext=hover, hoverinfo="text", colorscale="Blues", xgap=1, ygap=1,
        colorbar={"title": {"text": f"{metric} ({pivot.get('unit', '%')})"}, "thickness": 12})
    return go.Figure(trace, layout=_layout(
        height=max(260, 90 + 30 * len(rows) + (60 if len(buckets) > 6 else 0)),
        xaxis=_axis("", side="top", tickangle=-30 if len(buckets) > 6 else 0,
                    showgrid=False),
        yaxis=_axis("", autorange="reversed", showgrid=False),
        margin={"l": 20, "r": 20, "t": 90 if len(buckets) > 6 else 40, "b": 20}))
