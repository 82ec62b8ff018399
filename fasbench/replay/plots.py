"""The replay's figures (plotly): the timeline of an episode (a Gantt chart by concurrent call slot),
two timelines on one time axis, and the per-file line overlay. Saved for papers with
:func:`fasbench.figures.save`."""

from __future__ import annotations

import html
import math
from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fasbench.figures import PALETTE, TOOL_COLORS
from fasbench.linerefs import short_path
from fasbench.records import Trace
from fasbench.replay.overlay import FileOverlay
from fasbench.replay.timeline import call_spans, fmt_s

MODEL_COLOR = "#BBBBBB"
LAYER_COLORS = {"gold": "#E69F00", "cited": "#CC79A7", "viewed": "#56B4E9", "grep": "#0072B2"}


def tool_color(name: str) -> str:
    """The figure colour of a tool; tools without a fixed colour get a stable palette colour."""
    if name in TOOL_COLORS:
        return TOOL_COLORS[name]
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


# A horizontal legend under the plot: it never scrolls, whatever the plot's height.
_BOTTOM_LEGEND = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")


def _add_timeline(fig: go.Figure, trace: Trace, row: int | None = None, highlight: int | None = None,
                  legend: bool = True, seen: set | None = None) -> None:
    turns, spans, unit = call_spans(trace)
    kw = dict(row=row, col=1) if row is not None else {}
    n_lanes = max((s.lane for s in spans), default=-1) + 1
    lane_names = ["model"] + [f"slot {k + 1}" for k in range(n_lanes)]
    end = max([s.end for s in spans] + [t.tools_end for t in turns] + [t.model_end for t in turns] + [1e-9])
    min_w = end * 0.004  # bars thinner than this would vanish; hover shows the real duration
    seen = seen if seen is not None else set()
    # model phases
    fig.add_trace(go.Bar(
        orientation="h", y=["model"] * len(turns), base=[t.model_start for t in turns],
        x=[max(t.model_end - t.model_start, min_w) for t in turns], marker_color=MODEL_COLOR,
        name="model", legendgroup="model", showlegend=legend and "model" not in seen,
        hovertext=[f"turn {t.turn + 1}: model {fmt_s(t.model_end - t.model_start)}" if unit == "s"
                   else f"turn {t.turn + 1}: model" for t in turns], hoverinfo="text", width=0.7), **kw)
    seen.add("model")
    for tool in dict.fromkeys(s.tool for s in spans):
        ss = [s for s in spans if s.tool == tool]
        hover = [f"turn {s.turn + 1}, call {s.index + 1}: {html.escape(s.tool)}"
                 + (f" · {fmt_s(s.duration)}" if unit == "s" else "")
                 + (" · ERROR" if s.is_error else "") + "<br>" + html.escape(s.arguments[:120]) for s in ss]
        fig.add_trace(go.Bar(
            orientation="h", y=[f"slot {s.lane + 1}" for s in ss], base=[s.start for s in ss],
            x=[max(s.duration, min_w) for s in ss], name=tool, legendgroup=tool,
            showlegend=legend and tool not in seen, hovertext=hover, hoverinfo="text", width=0.7,
            marker=dict(color=tool_color(tool), line=dict(color="#222", width=0.5),
                        pattern=dict(shape=["x" if s.is_error else "" for s in ss])),
            customdata=[[s.turn, s.index] for s in ss]), **kw)
        seen.add(tool)
    xref = "x" if row in (None, 1) else f"x{row}"
    yref = "y" if row in (None, 1) else f"y{row}"
    last_label = -math.inf
    for t in turns:
        fig.add_shape(type="line", x0=t.model_start, x1=t.model_start, y0=0, y1=1, xref=xref,
                      yref=f"{yref} domain", line=dict(color="#666", width=1, dash="dot"))
        if t.model_start - last_label < 0.04 * end:  # labels this close would print over each other
            continue
        last_label = t.model_start
        fig.add_annotation(x=t.model_start, y=1, xref=xref, yref=f"{yref} domain", text=f"T{t.turn + 1}",
                           showarrow=False, xanchor="left", yanchor="bottom", font=dict(size=10, color="#444"))
    if highlight is not None and 0 <= highlight < len(turns):
        t = turns[highlight]
        x1 = turns[highlight + 1].model_start if highlight + 1 < len(turns) else max(end, t.tools_end)
        fig.add_shape(type="rect", x0=t.model_start, x1=x1, y0=0, y1=1, xref=xref, yref=f"{yref} domain",
                      fillcolor="rgba(230,159,0,0.15)", line=dict(width=0), layer="below", name="current-turn")
    fig.update_yaxes(categoryorder="array", categoryarray=lane_names, autorange="reversed", **kw)
    fig.update_xaxes(title_text="seconds since episode start" if unit == "s" else "turn", **kw)


def timeline_figure(trace: Trace, highlight: int | None = None, title: str | None = None) -> go.Figure:
    """A Gantt chart of one episode: a lane for the model and one per concurrent call slot, a bar
    per call coloured by tool (hatched when it failed), turn boundaries dotted and labelled
    T1, T2, …; ``highlight`` (0-based) shades one turn."""
    fig = go.Figure()
    _add_timeline(fig, trace, highlight=highlight)
    n_lanes = len({s.lane for s in call_spans(trace)[1]})
    fig.update_layout(
        barmode="overlay", height=170 + 34 * (n_lanes + 1),
        title=title if title is not None else
        f"{trace.policy} on {trace.task_id}: {trace.n_turns} turns, {trace.n_calls} calls",
        legend=_BOTTOM_LEGEND, margin=dict(t=60, b=100, r=20))
    fig.update_layout(height=fig.layout.height + 50)
    return fig


def compare_figure(trace_a: Trace, trace_b: Trace, titles: Sequence[str] | None = None) -> go.Figure:
    """Two timelines stacked on a shared time axis: which episode searched faster and how."""
    la = len({s.lane for s in call_spans(trace_a)[1]}) + 1
    lb = len({s.lane for s in call_spans(trace_b)[1]}) + 1
    units = {call_spans(trace_a)[2], call_spans(trace_b)[2]}
    titles = titles or [f"{t.policy}: {t.n_turns} turns, {t.n_calls} calls, {fmt_s(t.wall_time)}"
                        for t in (trace_a, trace_b)]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=len(units) == 1, row_heights=[la, lb],
                        vertical_spacing=0.22, subplot_titles=list(titles))
    seen: set = set()
    _add_timeline(fig, trace_a, row=1, seen=seen)
    _add_timeline(fig, trace_b, row=2, seen=seen)
    if len(units) == 1:
        fig.update_xaxes(title_text="", row=1, col=1)
    for a in fig.layout.annotations[:2]:  # subplot titles: left, above the turn labels
        a.update(x=0, xanchor="left", yshift=18, font=dict(size=13))
    fig.update_layout(barmode="overlay", height=290 + 34 * (la + lb),
                      title=f"Task {trace_a.task_id}" if trace_a.task_id == trace_b.task_id else None,
                      legend=_BOTTOM_LEGEND, margin=dict(t=100, b=110, r=20))
    return fig


def file_figure(rows: Sequence[FileOverlay], title: str | None = None, max_files: int = 12) -> go.Figure:
    """Per file a band of three rows: gold lines, cited lines, viewed lines (grep matches as
    ticks on the viewed row). x = line number."""
    rows = list(rows)[:max_files]
    fig = go.Figure()
    layers = [("gold", -0.28), ("cited", 0.0), ("viewed", 0.28)]
    for name, off in layers:
        ys, bases, xs, hover = [], [], [], []
        for i, f in enumerate(rows):
            for a, b in getattr(f, name):
                ys.append(i + off)
                bases.append(a - 0.5)
                xs.append(b - a + 1)
                hover.append(f"{html.escape(f.path)}: {name} {a}-{b}")
        fig.add_trace(go.Bar(orientation="h", y=ys, base=bases, x=xs, width=0.24, name=name,
                             marker_color=LAYER_COLORS[name], hovertext=hover, hoverinfo="text"))
    gy, gx, gh = [], [], []
    for i, f in enumerate(rows):
        for n in f.grep:
            gy.append(i + 0.28)
            gx.append(n)
            gh.append(f"{html.escape(f.path)}: grep match at line {n}")
    fig.add_trace(go.Scatter(x=gx, y=gy, mode="markers", name="grep match", hovertext=gh, hoverinfo="text",
                             marker=dict(symbol="line-ns-open", size=11, color=LAYER_COLORS["grep"],
                                         line=dict(width=2))))
    labels = [short_path(f.path) + (" ★" if f.is_gold else "") for f in rows]
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=labels, autorange="reversed", range=None)
    fig.update_layout(barmode="overlay", height=190 + 46 * max(1, len(rows)), title=title,
                      xaxis_title="line (★ gold file)", legend=_BOTTOM_LEGEND,
                      margin=dict(l=20 + 7 * max([len(x) for x in labels] + [8]), t=50 if title else 20, b=100, r=20))
    return fig
