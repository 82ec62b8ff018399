"""The replay's figures (plotly): the timeline of an episode (a Gantt chart by concurrent call slot),
two timelines on one time axis, and the per-file line overlay. Saved for papers with
:func:`fasbench.stats.figures.save`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fasbench.base.markup import html
from fasbench.records import Trace
from fasbench.replay.linerefs import short_path
from fasbench.replay.overlay import FileOverlay
from fasbench.replay.seen import call_kind
from fasbench.replay.static import MODEL_COLOR
from fasbench.replay.timeline import call_spans, fmt_s, turn_columns
from fasbench.stats.figures import kind_color

LAYER_COLORS = {"gold": "#E69F00", "cited": "#CC79A7", "viewed": "#56B4E9", "grep": "#0072B2"}


def tool_color(toolset: str, name: str) -> str:
    """The figure colour of a tool: its kind's (``fasbench.stats.figures.KIND_COLORS``, the colours of the
    trajectory figures too), grey for a tool of no known tool set."""
    return kind_color(call_kind(toolset, name))


# A horizontal legend under the plot: it never scrolls, whatever the plot's height.
_BOTTOM_LEGEND = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")
PAD = 0.03  # of a turn's column, either side, on the turn-scaled axis


def _bars(trace: Trace, scale: str) -> tuple[list, list, int, float]:
    """(model bars, call bars, rows, axis end) as (turn, call span or None, x0, width, row) on the
    chosen axis: ``turn`` (one equal-width column per turn, time scaled within it) or wall-clock ``s``."""
    if scale == "turn":
        cols, n_rows = turn_columns(trace)
        bars = [
            (b.turn, b.call, b.turn + PAD + b.left * (1 - 2 * PAD), b.width * (1 - 2 * PAD), b.row)
            for col in cols
            for b in col
        ]
        end = float(len(cols) or 1)
    elif scale == "s":
        turns, spans, _ = call_spans(trace)
        n_rows = 1 + max((s.lane + 1 for s in spans), default=0)
        end = max([s.end for s in spans] + [t.tools_end for t in turns] + [t.model_end for t in turns] + [1e-9])
        min_w = end * 0.004  # bars thinner than this would vanish; hover shows the real duration
        pos = {t.turn: k for k, t in enumerate(turns)}
        bars = [(k, None, t.model_start, max(t.model_end - t.model_start, min_w), 0) for k, t in enumerate(turns)]
        bars += [(pos[s.turn], s, s.start, max(s.duration, min_w), s.lane + 1) for s in spans]
    else:
        raise ValueError(f"unknown timeline scale {scale!r}; scales: turn, s")
    return [b for b in bars if b[1] is None], [b for b in bars if b[1] is not None], n_rows, end


def _add_timeline(
    fig: go.Figure,
    trace: Trace,
    row: int | None = None,
    highlight: int | None = None,
    legend: bool = True,
    seen: set | None = None,
    scale: str = "turn",
) -> None:
    turns, _, unit = call_spans(trace)
    models, calls, n_rows, end = _bars(trace, scale)
    kw = dict(row=row, col=1) if row is not None else {}
    lane_names = ["model"] + [f"slot {k}" for k in range(1, n_rows)]
    seen = seen if seen is not None else set()
    timed = unit == "s"
    fig.add_trace(
        go.Bar(
            orientation="h",
            y=["model"] * len(models),
            base=[b[2] for b in models],
            x=[b[3] for b in models],
            marker_color=MODEL_COLOR,
            name="model",
            legendgroup="model",
            showlegend=legend and "model" not in seen,
            hovertext=[
                f"turn {k + 1}: model {fmt_s(turns[k].model_end - turns[k].model_start)}"
                if timed
                else f"turn {k + 1}: model"
                for k, *_ in models
            ],
            hoverinfo="text",
            width=0.7,
        ),
        **kw,
    )
    seen.add("model")
    for tool in dict.fromkeys(b[1].tool for b in calls):
        bs = [b for b in calls if b[1].tool == tool]
        kind = call_kind(trace.toolset, tool)
        name = f"{tool} ({kind})" if kind else tool
        hover = [
            html(
                "turn {}, call {}: {}{}{}<br>{}",
                b[0] + 1,
                b[1].index + 1,
                tool,
                f" · {fmt_s(b[1].duration)}" if timed else "",
                " · ERROR" if b[1].is_error else "",
                b[1].arguments[:120],
            )
            for b in bs
        ]
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=[lane_names[b[4]] for b in bs],
                base=[b[2] for b in bs],
                x=[b[3] for b in bs],
                name=name,
                legendgroup=name,
                showlegend=legend and name not in seen,
                hovertext=hover,
                hoverinfo="text",
                width=0.7,
                marker=dict(
                    color=tool_color(trace.toolset, tool),
                    line=dict(color="#222", width=0.5),
                    pattern=dict(shape=["x" if b[1].is_error else "" for b in bs]),
                ),
                customdata=[[b[0], b[1].index] for b in bs],
            ),
            **kw,
        )
        seen.add(name)
    xref = "x" if row in (None, 1) else f"x{row}"
    yref = "y" if row in (None, 1) else f"y{row}"
    starts = list(range(len(turns))) if scale == "turn" else [t.model_start for t in turns]
    last_label = -math.inf
    for k, x0 in enumerate(starts):
        fig.add_shape(
            type="line",
            x0=x0,
            x1=x0,
            y0=0,
            y1=1,
            xref=xref,
            yref=f"{yref} domain",
            line=dict(color="#666", width=1, dash="dot"),
        )
        if scale == "s" and x0 - last_label < 0.04 * end:  # labels this close would print over each other
            continue
        last_label = x0
        fig.add_annotation(
            x=x0 + (0.5 if scale == "turn" else 0),
            y=1,
            xref=xref,
            yref=f"{yref} domain",
            text=f"T{k + 1}",
            showarrow=False,
            xanchor="center" if scale == "turn" else "left",
            yanchor="bottom",
            font=dict(size=10, color="#444"),
        )
    if highlight is not None and 0 <= highlight < len(turns):
        x0 = starts[highlight]
        x1 = (
            starts[highlight + 1]
            if highlight + 1 < len(turns)
            else (len(turns) if scale == "turn" else max(end, turns[highlight].tools_end))
        )
        fig.add_shape(
            type="rect",
            x0=x0,
            x1=x1,
            y0=0,
            y1=1,
            xref=xref,
            yref=f"{yref} domain",
            fillcolor="rgba(120,120,120,0.15)",
            line=dict(width=0),
            layer="below",
            name="current-turn",
        )
    fig.update_yaxes(categoryorder="array", categoryarray=lane_names, autorange="reversed", **kw)
    if scale == "turn":
        fig.update_xaxes(
            title_text="turn (one column each; time runs within a turn)",
            range=[0, end],
            showticklabels=False,
            ticks="",
            **kw,
        )
    else:
        fig.update_xaxes(title_text="seconds since episode start" if timed else "turn", **kw)


def timeline_figure(
    trace: Trace, highlight: int | None = None, title: str | None = None, scale: str = "turn"
) -> go.Figure:
    """A Gantt chart of one episode: a lane for the model and one per concurrent call slot, a bar
    per call coloured by its tool's kind (hatched when it failed), turn boundaries dotted and labelled
    T1, T2, …; ``highlight`` (0-based) shades one turn. ``scale="turn"`` (default) gives every turn a
    column of the same width, time scaled within the turn (:func:`~fasbench.replay.timeline.turn_columns`);
    ``scale="s"`` puts all on one wall-clock axis (late short turns become slivers)."""
    fig = go.Figure()
    _add_timeline(fig, trace, highlight=highlight, scale=scale)
    n_lanes = len({s.lane for s in call_spans(trace)[1]})
    fig.update_layout(
        barmode="overlay",
        height=170 + 34 * (n_lanes + 1),
        title=title
        if title is not None
        else f"{trace.policy} on {trace.task_id}: {trace.n_turns} turns, {trace.n_calls} calls",
        legend=_BOTTOM_LEGEND,
        margin=dict(t=60, b=100, r=20),
    )
    fig.update_layout(height=fig.layout.height + 50)
    return fig


def compare_figure(trace_a: Trace, trace_b: Trace, titles: Sequence[str] | None = None, scale: str = "s") -> go.Figure:
    """Two timelines stacked on a shared time axis: which episode searched faster and how (``scale``:
    wall-clock ``s`` by default, or ``turn`` as in :func:`timeline_figure`)."""
    la = len({s.lane for s in call_spans(trace_a)[1]}) + 1
    lb = len({s.lane for s in call_spans(trace_b)[1]}) + 1
    units = {call_spans(trace_a)[2], call_spans(trace_b)[2]}
    titles = titles or [
        f"{t.policy}: {t.n_turns} turns, {t.n_calls} calls, {fmt_s(t.wall_time)}" for t in (trace_a, trace_b)
    ]
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=len(units) == 1,
        row_heights=[la, lb],
        vertical_spacing=0.22,
        subplot_titles=list(titles),
    )
    seen: set = set()
    _add_timeline(fig, trace_a, row=1, seen=seen, scale=scale)
    _add_timeline(fig, trace_b, row=2, seen=seen, scale=scale)
    if len(units) == 1:
        fig.update_xaxes(title_text="", row=1, col=1)
    for a in fig.layout.annotations[:2]:  # subplot titles: left, above the turn labels
        a.update(x=0, xanchor="left", yshift=18, font=dict(size=13))
    fig.update_layout(
        barmode="overlay",
        height=290 + 34 * (la + lb),
        title=f"Task {trace_a.task_id}" if trace_a.task_id == trace_b.task_id else None,
        legend=_BOTTOM_LEGEND,
        margin=dict(t=100, b=110, r=20),
    )
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
                hover.append(html("{}: {} {}-{}", f.path, name, a, b))
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=ys,
                base=bases,
                x=xs,
                width=0.24,
                name=name,
                marker_color=LAYER_COLORS[name],
                hovertext=hover,
                hoverinfo="text",
            )
        )
    gy, gx, gh = [], [], []
    for i, f in enumerate(rows):
        for n in f.grep:
            gy.append(i + 0.28)
            gx.append(n)
            gh.append(html("{}: grep match at line {}", f.path, n))
    fig.add_trace(
        go.Scatter(
            x=gx,
            y=gy,
            mode="markers",
            name="grep match",
            hovertext=gh,
            hoverinfo="text",
            marker=dict(symbol="line-ns-open", size=11, color=LAYER_COLORS["grep"], line=dict(width=2)),
        )
    )
    labels = [short_path(f.path) + (" ★" if f.is_gold else "") for f in rows]
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=labels, autorange="reversed", range=None)
    fig.update_layout(
        barmode="overlay",
        height=190 + 46 * max(1, len(rows)),
        title=title,
        xaxis_title="line (★ gold file)",
        legend=_BOTTOM_LEGEND,
        margin=dict(l=20 + 7 * max([len(x) for x in labels] + [8]), t=50 if title else 20, b=100, r=20),
    )
    return fig
