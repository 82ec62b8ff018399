"""Figures of notebook 04: the reward-hacking audit heatmap and one report under three rewards.

- :func:`audit_heatmap` — cheat − honest (one sign convention: positive = the cheat gains) per cheat
  and reward, coloured by the verdict: red where the cheat games the reward, blue where the reward
  penalises it, grey where it is blind (no evidence either way: not red, which would read as gaming).
  The rewards have different ranges (FastContext's penalties reach −19 where the F-scores stay in
  [−1, 1]), so the shade is a log scale of ``|d|``, ``log10(1 + |d| / 0.01)``; each cell prints the
  difference in at most 4 characters (``-14``, ``-.36``) so that it fits a single-column cell, and the
  legend names the verdicts (colour bars took a third of a single column).
- :func:`reward_views_figure` — the same episodes under pairs of rewards. Episodes with the same pair
  of values are one marker whose area and label give their count (on few tasks most fall on a handful
  of points), and no panel plots a reward against itself; the dotted line is where both rewards agree.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.base.markup import html
from fasbench.evaluation.episodes import view_columns
from fasbench.stats.figures import HEIGHT_META, PALETTE, bottom_legend

_SCALE = 0.01  # |differences| below this are near-white on the audit's colour scale


def _symlog(d: float) -> float:
    return math.copysign(math.log10(1 + abs(d) / _SCALE), d)


#: The audit's colours by verdict: red where the cheat games the reward (the finding that matters), blue
#: where the reward penalises it, grey where the data show neither (blind: no evidence of gaming).
GAMED_SCALE = [[0.0, "#fddbc7"], [1.0, "#b2182b"]]
PENALISED_SCALE = [[0.0, "#d1e5f0"], [1.0, "#2166ac"]]
BLIND_COLOR = "#e6e6e6"


def _short(d: float) -> str:
    """A difference in at most 4 characters, so that a cell of a single-column figure holds it: ``-14``,
    ``+1.2``, ``-.36``, ``0``."""
    if abs(d) < 0.005:
        return "0"
    if abs(d) >= 9.95:
        return f"{d:+.0f}"
    if abs(d) >= 0.995:
        return f"{d:+.1f}"
    return f"{d:+.2f}".replace("0.", ".", 1)


def _wrap_name(name: str, width: int = 11) -> str:
    """A long hyphenated label broken after its first hyphen (``grounded-<br>fastcontext``)."""
    if len(name) <= width or "-" not in name:
        return name
    head, tail = name.split("-", 1)
    return html("{}-<br>{}", head, tail)


def audit_heatmap(tab: pl.DataFrame, title: str = "Cheat − honest, by reward") -> go.Figure:
    """Heatmap of :func:`fasbench.studies.audit.audit_table`: a cell per cheat and reward, coloured by
    its verdict (red: gamed, blue: penalised, grey: blind; the shade of red or blue is
    ``|cheat − honest|`` on the symmetric log scale), printing the difference in reward points."""
    cheats = list(dict.fromkeys(tab["cheat"].to_list()))
    rewards = list(dict.fromkeys(tab["reward"].to_list()))
    cell = {(r["cheat"], r["reward"]): r for r in tab.iter_rows(named=True)}
    layers = {v: ([], []) for v in ("blind", "penalised", "gamed")}  # z, text per verdict
    for c in cheats:
        for z, text in layers.values():
            z.append([])
            text.append([])
        for rw in rewards:
            r = cell.get((c, rw))
            v = None if r is None else (r["verdict"] if r["verdict"] in ("gamed", "penalised") else "blind")
            for k, (z, text) in layers.items():
                mine = v == k
                z[-1].append((0.0 if k == "blind" else abs(_symlog(r["diff"]))) if mine else None)
                text[-1].append(_short(r["diff"]) if mine else "")
    m = max([v for k in ("penalised", "gamed") for row in layers[k][0] for v in row if v is not None] + [_symlog(1.0)])
    x = [_wrap_name(r) for r in rewards]
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=layers["blind"][0],
            x=x,
            y=cheats,
            text=layers["blind"][1],
            texttemplate="%{text}",
            textfont=dict(color="#555"),
            colorscale=[[0, BLIND_COLOR], [1, BLIND_COLOR]],
            showscale=False,
            name="blind",
            hoverinfo="skip",
            xgap=1,
            ygap=1,
        )
    )
    for k, scale in (("penalised", PENALISED_SCALE), ("gamed", GAMED_SCALE)):
        fig.add_trace(
            go.Heatmap(
                z=layers[k][0],
                x=x,
                y=cheats,
                text=layers[k][1],
                texttemplate="%{text}",
                colorscale=scale,
                zmin=0,
                zmax=m,
                showscale=False,
                name=k,
                hoverinfo="skip",
                xgap=1,
                ygap=1,
            )
        )
    # The key: a legend entry per verdict (no colour bars: they took a third of a single column's width).
    for k, colour in (("gamed", GAMED_SCALE[1][1]), ("penalised", PENALISED_SCALE[1][1]), ("blind", BLIND_COLOR)):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=k,
                marker=dict(symbol="square", size=11, color=colour, line=dict(color="#999", width=0.5)),
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        title=title,
        xaxis=dict(title=None, automargin=True, showgrid=False, showline=False, ticks=""),
        yaxis=dict(title=None, automargin=True, autorange="reversed", showgrid=False, showline=False, ticks=""),
        plot_bgcolor="white",
        legend=bottom_legend(title=dict(text="cell: cheat − honest (reward points)", side="top"), itemwidth=30),
        width=900,
        height=160 + 52 * len(cheats),
        margin=dict(l=20, r=20, t=60, b=60),
        meta={HEIGHT_META: {"single": 1.6 + 0.2 * len(cheats), "double": 1.5 + 0.22 * len(cheats)}},
    )
    return fig


def reward_views_figure(
    views: pl.DataFrame, columns: list[str] | None = None, title: str = "One report, three rewards"
) -> go.Figure:
    """Each pair of reward columns of :func:`fasbench.studies.search_study.reward_views`, one panel per pair,
    episodes with equal values merged into a marker sized and labelled by their count."""
    cols = columns or list(view_columns())  # the registry's reward views, by label
    pairs = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1 :]]
    fig = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.08)
    policies = list(dict.fromkeys(views["policy"].to_list()))
    color = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(policies)}
    offsets = np.linspace(-0.015, 0.015, len(policies)) if len(policies) > 1 else [0.0]
    for k, (a, b) in enumerate(pairs, start=1):
        g = (
            views.with_columns(pl.col(a).round(3).alias("_x"), pl.col(b).round(3).alias("_y"))
            .group_by("policy", "_x", "_y")
            .agg(pl.len().alias("count"), pl.col("task_id"))
        )
        for i, (off, p) in enumerate(zip(offsets, policies)):
            s = g.filter(pl.col("policy") == p)
            if not s.height:
                continue
            cnt = s["count"].to_list()
            fig.add_trace(
                go.Scatter(
                    x=[x + off for x in s["_x"].to_list()],
                    y=[y + off for y in s["_y"].to_list()],
                    mode="markers+text",
                    marker=dict(
                        size=[8 + 5 * math.sqrt(c) for c in cnt],
                        color=color[p],
                        opacity=0.75,
                        line=dict(color="white", width=1),
                    ),
                    text=[str(c) if c > 1 else "" for c in cnt],
                    textposition=("top right", "bottom right", "top center", "bottom center")[i % 4],
                    textfont=dict(size=11, color=color[p]),
                    name=p,
                    legendgroup=p,
                    showlegend=k == 1,
                    hovertext=[
                        html("{}: {} episode(s)<br>{}{}", p, c, ", ".join(ids[:4]), " …" if len(ids) > 4 else "")
                        for c, ids in zip(cnt, s["task_id"].to_list())
                    ],
                    hoverinfo="text",
                ),
                row=1,
                col=k,
            )
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[0, 1],
                mode="lines",
                line=dict(color="#999", dash="dot", width=1),
                name="both rewards equal",
                showlegend=k == 1,
                hoverinfo="skip",
            ),
            row=1,
            col=k,
        )
        fig.update_xaxes(title_text=a, range=[-0.08, 1.1], row=1, col=k)
        fig.update_yaxes(title_text=b, range=[-0.08, 1.1], row=1, col=k)
    fig.update_layout(
        title=f"{title} ({views.height} episodes; marker label = episodes at that point)",
        width=1100,
        height=470,
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom"),
        margin=dict(t=90, b=110, l=60, r=20),
    )
    return fig
