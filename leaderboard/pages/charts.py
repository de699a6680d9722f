"""Plotly figures of the leaderboard's pages.

Each builder takes the very row dicts its page's table shows (selectors build them), so a chart
cannot disagree with the numbers beside it. Pages load plotly.js once (views.plotly_js) and
static/js/charts.js, and embed each figure with `to_html`.
"""

from __future__ import annotations

import json
import textwrap
from html import escape as html_escape

import plotly.graph_objects as go
import plotly.io as pio
from django.utils.html import format_html, json_script
from django.utils.safestring import SafeString

PALETTE = ("#2f5fd0", "#2e9e5b", "#d9822b", "#8e44ad", "#c0392b")
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


def _unit(scale: float) -> str:
    return "%" if scale == 100 else f"0-{scale:g}"


def separates(rows: list[dict], metric: str) -> bool:
    """Whether the rows' figures of `metric` differ (not a column of one value)."""
    return len({round(r[metric], 9) for r in rows if r.get(metric) is not None}) > 1


def separating_metric(kind, rows: list[dict]) -> str:
    """The first ranking metric on which the rows differ (the ranking's first where none
    does): the one a chart or pivot opens on, so it never plots every point on one line."""
    return next((m for m in kind.ranking if separates(rows, m)), kind.ranking[0])


def other_axis(kind, rows: list[dict], y: str) -> str:
    """The scatter's x beside `y`: the kind's own x axis if the rows differ on it, else the
    first other figure on which they differ (a column of zeros says nothing), else the
    kind's own."""
    candidates = [m for m in (kind.chart_axes[0], *kind.metric_keys)
                  if m != y and not kind.metric(m).count]
    return next((m for m in candidates if separates(rows, m)),
                candidates[0] if candidates else y)


# Plotly reads its text as a little HTML: <b> and <br>, and of the entities only &amp;, &lt;,
# &gt; and a few others. A name must show as written: its <, > and & escaped, its quotes not
# (plotly would show `&quot;` literally).
def _label(text: str) -> str:
    return html_escape(text, quote=False)


# The board's scatter names every point beside it up to this many points (beyond, the best
# ranked this many): more names than that cover one another.
LABELLED_POINTS = 30
# A name beside a point or on an axis is cut to this many characters (a model's name may have
# 200, which would squeeze a heatmap's cells to nothing); the hover holds it whole.
SHORT_NAME_CHARS = 24
HOVER_LINE_CHARS = 48  # a long name wraps in a hover, which plotly never wraps itself


def _short(name: str) -> str:
    return name if len(name) <= SHORT_NAME_CHARS else name[:SHORT_NAME_CHARS - 1] + "…"


def _whole(name: str) -> str:
    """A name for a hover: whole, escaped, in lines short enough for a phone's screen."""
    return "<br>".join(_label(line) for line in textwrap.wrap(name, HOVER_LINE_CHARS)) \
        or _label(name)


def value_range(values: list, scale: float) -> list[float] | None:
    """An axis or colour range for figures that are all equal (a plotting library would give
    them an empty or a negative one); None when they differ."""
    known = [v for v in values if v is not None]
    if not known or max(known) - min(known) > 1e-9:
        return None
    pad = scale / 20
    return [max(0.0, known[0] - pad), min(scale, known[0] + pad) if known[0] < scale
            else known[0] + pad]


def metric_scatter(rows: list[dict], *, x: str, y: str, kind) -> go.Figure:
    """Metric y against metric x, one point per board row that has both, with intervals
    where there are any; rows whose figures read alike share one point, named for all of them
    (never drawn on top of one another). The hover lists every metric of each row, as the
    table shows it; every point is named beside it (up to LABELLED_POINTS), never cut off by
    the plot's edge."""
    shown = [r for r in rows if r[x] is not None and r[y] is not None]
    mx, my = kind.metric(x), kind.metric(y)
    points: dict[tuple[str, str], list[dict]] = {}
    for row in shown:  # as the table reads them: figures it shows alike are one point
        points.setdefault((mx.format(row[x]), my.format(row[y])), []).append(row)
    groups = list(points.values())

    def describe(r: dict) -> str:
        return (f"<b>{_whole(r['model'])}</b>"
                + (f" ({_label(r['organisation'])})" if r["organisation"] else "")
                + f"<br>rank {r['rank']}"
                + "".join(f"<br>{_label(m.label)} "
                          f"{_text(m, r[m.key], r.get(f'{m.key}_interval'))}"
                          for m in kind.metrics))

    def best(group: list[dict]) -> float:
        return min(r["rank"] if r.get("rank") is not None else float("inf") for r in group)

    named = {id(g) for g in sorted(groups, key=best)[:LABELLED_POINTS]}

    def name(group: list[dict]) -> str:
        if id(group) not in named:
            return ""
        first = _label(_short(group[0]["model"]))
        return first if len(group) == 1 else f"{first} +{len(group) - 1} tied"

    heads = [g[0] for g in groups]
    trace = go.Scatter(
        x=[r[x] for r in heads], y=[r[y] for r in heads], mode="markers+text",
        text=[name(g) for g in groups], textposition="top center",
        textfont={"size": 11, "color": "#334"}, cliponaxis=False,
        hovertext=["<br><br>".join(describe(r) for r in g) for g in groups],
        hoverinfo="text", name="models",
        customdata=[g[0]["model_id"] for g in groups],
        marker={"size": [10 + 3 * min(len(g) - 1, 4) for g in groups], "color": PALETTE[0],
                "opacity": .85, "line": {"width": 1, "color": "#fff"}},
        error_x={**error_bars([r[x] for r in heads],
                              [r.get(f"{x}_interval") for r in heads]), "color": "#9fb3e6"},
        error_y={**error_bars([r[y] for r in heads],
                              [r.get(f"{y}_interval") for r in heads]), "color": "#9fb3e6"},
    )
    axes = {}
    for axis, metric in (("xaxis", x), ("yaxis", y)):
        fixed = value_range([r[metric] for r in shown], kind.scale)
        # Figures never go below 0: an all-zero metric must not get a -1..1 axis.
        axes[axis] = _axis(f"{kind.label(metric)} ({_unit(kind.scale)})",
                           **({"range": fixed} if fixed else {"rangemode": "nonnegative"}))
    # Room above the plot and at its sides for the names of its outermost points.
    return go.Figure(trace, layout=_layout(height=440, showlegend=False, hovermode="closest",
                                           margin={"l": 70, "r": 70, "t": 50, "b": 50},
                                           **axes))


def _text(metric, value, interval) -> str:
    text = metric.format(value)
    if interval is None or value is None:
        return text
    return f"{text} [{metric.format(interval[0])}, {metric.format(interval[1])}]"


def slice_bars(rows: list[dict], metrics: tuple[str, ...], kind) -> go.Figure:
    """The metrics per bucket of one dimension (rows of selectors.slice_rows), grouped."""
    buckets = [r["bucket"] for r in rows]
    traces = [go.Bar(
        name=kind.label(metric), x=buckets, y=[r[metric] for r in rows],
        marker_color=PALETTE[i % len(PALETTE)],
        error_y={**error_bars([r[metric] for r in rows],
                              [r.get(f"{metric}_interval") for r in rows]), "color": "#5b6475"},
        hovertext=[f"<b>{_label(r['bucket'])}</b> (n={r['n']})<br>{_label(kind.label(metric))} "
                   f"{_text(kind.metric(metric), r[metric], r.get(f'{metric}_interval'))}"
                   for r in rows],
        hoverinfo="text") for i, metric in enumerate(metrics)]
    return go.Figure(traces, layout=_layout(
        height=420, barmode="group", bargap=.25,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"l": 60, "r": 20, "t": 40, "b": 40},
        xaxis=_axis("", tickangle=-30 if len(buckets) > 6 else 0),
        yaxis=_axis(_unit(kind.scale), range=[0, kind.scale * 1.04])))


def slice_radar(rows: list[dict], metrics: tuple[str, ...], kind) -> go.Figure:
    """The same figures as slice_bars on a radar: one closed line per metric."""
    buckets = [r["bucket"] for r in rows]
    traces = []
    for i, metric in enumerate(metrics):
        values = [r[metric] for r in rows]
        colour = PALETTE[i % len(PALETTE)]
        traces.append(go.Scatterpolar(
            name=kind.label(metric), theta=buckets + buckets[:1], r=values + values[:1],
            mode="lines+markers", line={"color": colour}, fill="toself",
            fillcolor=_translucent(colour, .12),
            hovertext=[f"<b>{_label(r['bucket'])}</b> (n={r['n']})<br>"
                       f"{_label(kind.label(metric))} "
                       f"{_text(kind.metric(metric), r[metric], r.get(f'{metric}_interval'))}"
                       for r in rows + rows[:1]],
            hoverinfo="text"))
    # The first bucket at the top, clockwise; the radial scale between the first two buckets,
    # where it hides no line.
    between = 90 - 180 / max(len(buckets), 1)
    scale = kind.scale
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


def pivot_heatmap(pivot: dict, kind) -> go.Figure:
    """A pivot (selectors.pivot) as a heatmap: models down, buckets across, as in its table,
    figures formatted as the table formats them. Rows sit at 0, 1, 2... with each model's
    name, cut short, as its tick label: two names cut to the same text stay two rows."""
    rows, buckets = pivot["rows"], pivot["buckets"]
    metric = kind.metric(pivot["metric"])
    z = [r["cells"] for r in rows]
    positions = list(range(len(rows)))
    text = [["" if v is None else metric.format(v) for v in r["cells"]] for r in rows]
    hover = [[f"<b>{_whole(r['model'])}</b><br>{_label(b)} (n={n if n is not None else '–'})"
              f"<br>{_label(metric.label)} {metric.format(v)}"
              for b, v, n in zip(buckets, r["cells"], r["n"], strict=True)] for r in rows]
    fixed = value_range([v for r in rows for v in r["cells"]],
                        kind.scale if not metric.count else max(1, *(
                            v for r in rows for v in r["cells"] if v is not None)))
    trace = go.Heatmap(
        z=z, x=[_label(b) for b in buckets], y=positions, text=text, texttemplate="%{text}",
        hovertext=hover, hoverinfo="text", colorscale="Blues", xgap=1, ygap=1,
        **({"zmin": fixed[0], "zmax": fixed[1]} if fixed else {}),
        colorbar={"title": {"text": f"{metric.label} ({pivot.get('unit', '%')})"},
                  "thickness": 12})
    return go.Figure(trace, layout=_layout(
        height=max(260, 90 + 30 * len(rows) + (60 if len(buckets) > 6 else 0)),
        xaxis=_axis("", side="top", tickangle=-30 if len(buckets) > 6 else 0,
                    showgrid=False),
        yaxis=_axis("", autorange="reversed", showgrid=False, zeroline=False, tickmode="array",
                    tickvals=positions, ticktext=[_label(_short(r["model"])) for r in rows]),
        margin={"l": 20, "r": 20, "t": 90 if len(buckets) > 6 else 40, "b": 20}))
