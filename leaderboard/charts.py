"""Plotly figures of the leaderboard's pages.

Each builder takes the very row dicts its page's table shows (selectors build them), so a chart
cannot disagree with the numbers beside it. Pages load plotly.js once (views.plotly_js) and
embed each figure with `to_html`.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go
import plotly.io as pio
from django.utils.safestring import SafeString, mark_safe

METRICS = ("IFR", "CR", "EMR")
COLOURS = {"IFR": "#2f5fd0", "CR": "#2e9e5b", "EMR": "#d9822b"}
NAMES = {"IFR": "IFR (instruction following)", "CR": "CR (consistency)",
         "EMR": "EMR (exact match)"}
CONFIG = {"displaylogo": False, "responsive": True, "showSendToCloud": False,
          "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13,
        "color": "#1d2433"}
GRID = "#e6e9f0"


def to_html(figure: go.Figure, *, div_id: str) -> SafeString:
    """The figure as a <div> and the script that draws it (plotly.js is loaded by the page)."""
    # Safe to mark: plotly escapes "<", ">" and "/" inside the embedded JSON.
    return mark_safe(pio.to_html(figure, full_html=False, include_plotlyjs=False,
                                 config=CONFIG, div_id=div_id))


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
    shown = [r for r in rows if r["IFR"] is not None and r["EMR"] is not None]
    hover = [f"<b>{escape(r['model'])}</b>"
             + (f" ({escape(r['organisation'])})" if r["organisation"] else "")
             + f"<br>rank {r['rank']}"
             + f"<br>IFR {_figure_text(r['IFR'], r['IFR_interval'])}"
             + f"<br>CR {_figure_text(r['CR'], r['CR_interval'])}"
             + f"<br>EMR {_figure_text(r['EMR'], r['EMR_interval'])}" for r in shown]
    trace = go.Scatter(
        x=[r["IFR"] for r in shown], y=[r["EMR"] for r in shown], mode="markers",
        hovertext=hover, hoverinfo="text", name="models",
        customdata=[r["model_id"] for r in shown],
        marker={"size": 10, "color": COLOURS["IFR"], "opacity": .85,
                "line": {"width": 1, "color": "#fff"}},
        error_x={**error_bars([r["IFR"] for r in shown], [r["IFR_interval"] for r in shown]),
                 "color": "#9fb3e6"},
        error_y={**error_bars([r["EMR"] for r in shown], [r["EMR_interval"] for r in shown]),
                 "color": "#9fb3e6"},
    )
    return go.Figure(trace, layout=_layout(
        height=440, showlegend=False, xaxis=_axis("IFR (%)"),
        # Percentages never go below 0: an all-zero EMR must not get a -1..1 axis.
        yaxis=_axis("EMR (%)", rangemode="nonnegative"),
        hovermode="closest"))


def slice_bars(rows: list[dict]) -> go.Figure:
    """IFR, CR and EMR per bucket of one dimension (rows of selectors.slice_rows), grouped."""
    buckets = [r["bucket"] for r in rows]
    traces = [go.Bar(
        name=metric, x=buckets, y=[r[metric] for r in rows], marker_color=COLOURS[metric],
        error_y={**error_bars([r[metric] for r in rows], [r[f"{metric}_interval"] for r in rows]),
                 "color": "#5b6475"},
        hovertext=[f"<b>{escape(r['bucket'])}</b> (n={r['n']})<br>{NAMES[metric]} "
                   f"{_figure_text(r[metric], r[f'{metric}_interval'])}" for r in rows],
        hoverinfo="text") for metric in METRICS]
    return go.Figure(traces, layout=_layout(
        height=420, barmode="group", bargap=.25,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 60, "r": 20, "t": 40, "b": 40},
        xaxis=_axis("", tickangle=-30 if len(buckets) > 6 else 0),
        yaxis=_axis("%", range=[0, 104])))


def slice_radar(rows: list[dict]) -> go.Figure:
    """The same figures as slice_bars on a radar: one closed line per metric."""
    buckets = [r["bucket"] for r in rows]
    traces = []
    for metric in METRICS:
        values = [r[metric] for r in rows]
        traces.append(go.Scatterpolar(
            name=metric, theta=buckets + buckets[:1], r=values + values[:1],
            mode="lines+markers", line={"color": COLOURS[metric]}, fill="toself",
            fillcolor=_translucent(COLOURS[metric], .12),
            hovertext=[f"<b>{escape(r['bucket'])}</b> (n={r['n']})<br>{NAMES[metric]} "
                       f"{_figure_text(r[metric], r[f'{metric}_interval'])}"
                       for r in rows + rows[:1]],
            hoverinfo="text"))
    # The first bucket at the top, clockwise; the radial scale between the first two buckets,
    # where it hides no line.
    between = 90 - 180 / max(len(buckets), 1)
    return go.Figure(traces, layout=_layout(
        height=480, legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 70, "r": 70, "t": 50, "b": 40},
        polar={"radialaxis": {"range": [0, 100], "gridcolor": GRID, "ticksuffix": "%",
                              "angle": between, "tickangle": between, "linecolor": GRID,
                              "tickfont": {"size": 10, "color": "#5b6475"}},
               "angularaxis": {"gridcolor": GRID, "linecolor": "#c4cbd7", "rotation": 90,
                               "direction": "clockwise"},
               "bgcolor": "#fff"}))


def pivot_heatmap(pivot: dict) -> go.Figure:
    """A pivot (selectors.pivot) as a heatmap: models down, buckets across, as in its table."""
    rows, buckets, metric = pivot["rows"], pivot["buckets"], pivot["metric"]
    z = [r["cells"] for r in rows]
    labels = [escape(r["model"]) for r in rows]
    text = [["" if v is None else f"{v:.1f}" for v in r["cells"]] for r in rows]
    hover = [[f"<b>{escape(r['model'])}</b><br>{escape(b)} (n={n if n is not None else '–'})"
              f"<br>{metric} {'–' if v is None else f'{v:.2f}'}"
              for b, v, n in zip(buckets, r["cells"], r["n"], strict=True)] for r in rows]
    trace = go.Heatmap(
        z=z, x=[escape(b) for b in buckets], y=labels, text=text, texttemplate="%{text}",
        hovertext=hover, hoverinfo="text", colorscale="Blues", xgap=1, ygap=1,
        colorbar={"title": {"text": f"{metric} (%)"}, "thickness": 12})
    return go.Figure(trace, layout=_layout(
        height=max(260, 90 + 30 * len(rows) + (60 if len(buckets) > 6 else 0)),
        xaxis=_axis("", side="top", tickangle=-30 if len(buckets) > 6 else 0,
                    showgrid=False),
        yaxis=_axis("", autorange="reversed", showgrid=False),
        margin={"l": 20, "r": 20, "t": 90 if len(buckets) > 6 else 40, "b": 20}))
