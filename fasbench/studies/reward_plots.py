"""Figures of notebook 04: the reward-hacking audit heatmap and one report under three rewards.

- :func:`audit_heatmap` — cheat − honest (one sign convention: positive = the cheat gains) per cheat
  and reward. The rewards have different ranges (FastContext's penalties reach −19 where the F-scores
  stay in [−1, 1]), so the colour is a symmetric log scale, ``sign(d)·log10(1 + |d| / 0.01)``, over
  the whole range of the values (nothing clipped), its colour bar labelled in reward points; each
  cell prints the difference and its verdict.
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
from fasbench.stats.figures import PALETTE

_SCALE = 0.01  # |differences| below this are near-white on the audit's colour scale


def _symlog(d: float) -> float:
    return math.copysign(math.log10(1 + abs(d) / _SCALE), d)


def audit_heatmap(tab: pl.DataFrame, title: str = "Cheat − honest, by reward") -> go.Figure:
    """Heatmap of ``diff`` (cheat − honest) from :func:`fasbench.studies.audit.audit_table`."""
    cheats = list(dict.fromkeys(tab["cheat"].to_list()))
    rewards = list(dict.fromkeys(tab["reward"].to_list()))
    cell = {(r["cheat"], r["reward"]): r for r in tab.iter_rows(named=True)}
    z, text = [], []
    for c in cheats:
        zr, tr = [], []
        for rw in rewards:
            r = cell.get((c, rw))
            zr.append(None if r is None else _symlog(r["diff"]))
            tr.append(
                "" if r is None else html("{:+.2f}<br><span style='font-size:9px'>{}</span>", r["diff"], r["verdict"])
            )
        z.append(zr)
        text.append(tr)
    m = max([abs(v) for row in z for v in row if v is not None] + [_symlog(1.0)])
    ticks = [v for v in (-100, -10, -1, -0.1, 0, 0.1, 1, 10, 100) if abs(_symlog(v)) <= m + 1e-9]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=rewards,
            y=cheats,
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=11),
            colorscale="RdBu",
            zmid=0,
            zmin=-m,
            zmax=m,
            hoverinfo="skip",
            colorbar=dict(
                title=dict(text="cheat − honest<br>(reward points,<br>log scale)", side="top"),
                tickvals=[_symlog(v) for v in ticks],
                ticktext=[f"{v:+g}" if v else "0" for v in ticks],
            ),
        )
    )
    fig.update_layout(
        title=f"{title} (red: the cheat loses, blue: it gains)",
        xaxis=dict(title="reward", side="bottom", automargin=True, tickangle=0),
        yaxis=dict(title=None, automargin=True, autorange="reversed", ticksuffix=" "),
        width=900,
        height=140 + 52 * len(cheats),
        margin=dict(l=20, r=20, t=60, b=60),
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
