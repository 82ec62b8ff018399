"""Figures and tables of the trajectory analysis (FastContext's Fig. 2 pair, the seeds' numbers, Relace's
two token measures)."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.base.markup import html
from fasbench.stats.figures import KIND_COLORS, OUTCOME_COLORS, PALETTE, SEED_MARKER
from fasbench.trajectories.analysis import SEEDS
from fasbench.trajectories.classify import CATEGORIES_PLOT_ORDER
from fasbench.trajectories.relace_measures import POPULATIONS_SHORT

FC = f"FastContext: {SEEDS['fastcontext']['source'].split(', ', 1)[1]}"
RELACE = SEEDS["relace"]


def _relace(measure: str, key: str = "value"):
    return lambda s: (s.get("relace", {}).get(measure) or {}).get(key)


# (label, seed with its population, seed's value, how to read ours from a summary)
def _gap(s: dict, key: str):
    """unresolved − resolved of a by-resolved measure (None without both groups)."""
    u, r = (s["by_resolved"].get(g, {}).get(key) for g in ("false", "true"))
    return None if u is None or r is None else u - r


SEED_ROWS = [
    (
        "read+search share of tool-use turns",
        FC,
        SEEDS["fastcontext"]["read_search_turn_share"],
        lambda s: s["overall"]["read_search_turn_share"],
    ),
    (
        "read+search share of tokens (whole trajectory)",
        FC,
        SEEDS["fastcontext"]["read_search_token_share"],
        lambda s: s["overall"]["read_search_token_share"],
    ),
    (
        "tokens before the first non-search call, mean per trajectory",
        RELACE["populations"]["search_phase_share"],
        RELACE["search_phase_share"],
        _relace("search_phase_share"),
    ),
    (
        "initial search: tokens before the first non-search call, pooled",
        RELACE["populations"]["initial_search_share"],
        RELACE["initial_search_share"],
        _relace("initial_search_share"),
    ),
    (
        "first edit turn, mean",
        FC,
        SEEDS["fastcontext"]["first_edit_turn_mean"],
        lambda s: s["overall"]["first_edit_turn_mean"],
    ),
    (
        "exploration turns before first edit, median",
        FC,
        SEEDS["fastcontext"]["explore_turns_before_median"],
        lambda s: s["overall"]["explore_turns_before_median"],
    ),
    (
        "exploration calls before first edit, median",
        FC,
        SEEDS["fastcontext"]["explore_calls_before_median"],
        lambda s: s["overall"]["explore_calls_before_median"],
    ),
    (
        "exploration turns before first edit, mean, unresolved",
        FC,
        SEEDS["fastcontext"]["explore_turns_before_mean_unresolved"],
        lambda s: s["by_resolved"].get("false", {}).get("explore_turns_before_mean"),
    ),
    (
        "exploration turns before first edit, mean, resolved",
        FC,
        SEEDS["fastcontext"]["explore_turns_before_mean_resolved"],
        lambda s: s["by_resolved"].get("true", {}).get("explore_turns_before_mean"),
    ),
    (
        "exploration turns before first edit, mean, unresolved − resolved",
        FC,
        SEEDS["fastcontext"]["explore_turns_before_mean_unresolved"]
        - SEEDS["fastcontext"]["explore_turns_before_mean_resolved"],
        lambda s: _gap(s, "explore_turns_before_mean"),
    ),
    (
        "handoff share: read+search tokens before the first edit of a submitted file",
        "ours (no seed measure)",
        None,
        lambda s: s["overall"]["handoff_share"],
    ),
]


def seeds_table(summaries: dict[str, dict]):
    """A polars frame: each seed number beside ours for every summary (name → summary)."""
    rows = []
    for label, seed, value, get in SEED_ROWS:
        row = {"metric": label, "seed (population)": seed, "seed value": None if value is None else round(value, 3)}
        for name, s in summaries.items():
            v = get(s)
            row[name] = None if v is None else round(float(v), 3)
        rows.append(row)
    return pl.DataFrame(rows)


def fig2(summary: dict, trajectories, title: str):
    """FastContext's Fig. 2 pair for one data set. Left: share of tool-use turns and of tokens by
    category. Right: exploration turns and calls before the first edit, resolved vs unresolved."""
    o = summary["overall"]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.12,
        subplot_titles=("Share by category", "Exploration before the first edit"),
    )
    cats = list(CATEGORIES_PLOT_ORDER) + (["none"] if o["token_share"].get("none") else [])  # turns without an action
    colors = {**KIND_COLORS, "none": "#CCCCCC"}
    for measure, name, pattern in (("turn_share", "tool-use turns", ""), ("token_share", "tokens", "/")):
        vals = [o[measure].get(c) for c in cats]
        fig.add_trace(
            go.Bar(
                x=[c if c != "none" else "no action" for c in cats],
                y=vals,
                name=name,
                marker_pattern_shape=pattern,
                marker_color=[colors[c] for c in cats],
                text=["" if v is None else f"{v:.0%}" for v in vals],
                textposition="outside",
                legendgroup="left",
            ),
            row=1,
            col=1,
        )
    t = trajectories.filter(pl.col("first_edit_turn").is_not_null())
    # "calls" is drawn only when it differs from "turns" (with one call per turn the boxes coincide)
    same = t.height > 0 and (t["explore_turns_before"] == t["explore_calls_before"]).all()
    measures = (
        [("turns (= tool calls: one per turn)", "explore_turns_before")]
        if same
        else [("turns", "explore_turns_before"), ("tool calls", "explore_calls_before")]
    )
    for resolved in (True, False, None):
        sub = t.filter(pl.col("resolved").is_null() if resolved is None else pl.col("resolved") == resolved)
        if not sub.height:
            continue
        label = {True: "resolved", False: "unresolved", None: "no label"}[resolved]
        xs = [m for m, _ in measures for _ in range(sub.height)]
        ys = [v for _, col in measures for v in sub[col].to_list()]
        fig.add_trace(
            go.Box(
                x=xs,
                y=ys,
                name=f"{label} (n={sub.height})",
                marker_color=OUTCOME_COLORS[resolved],
                boxmean=True,
                legendgroup="right",
            ),
            row=1,
            col=2,
        )
    seed = SEEDS["fastcontext"]
    sx = [m for m, _ in measures]
    sy = [seed["explore_turns_before_median"]] + ([] if same else [seed["explore_calls_before_median"]])
    fig.add_trace(
        go.Scatter(
            x=sx, y=sy, mode="markers", marker=SEED_MARKER, name="FastContext median (seed)", legendgroup="seed"
        ),
        row=1,
        col=2,
    )
    rs = f"{o['read_search_turn_share']:.1%}" if o.get("read_search_turn_share") is not None else "–"
    rt = f"{o['read_search_token_share']:.1%}" if o.get("read_search_token_share") is not None else "–"
    fig.add_annotation(
        text=html(
            "read+search: {} of tool-use turns, {} of tokens<br>FastContext (seed): {:.1%}, {:.1%}",
            rs,
            rt,
            seed["read_search_turn_share"],
            seed["read_search_token_share"],
        ),
        xref="x domain",
        yref="y domain",
        x=0.98,
        y=0.98,
        xanchor="right",
        yanchor="top",
        showarrow=False,
        align="right",
        font=dict(size=11),
        bgcolor="rgba(255,255,255,0.85)",
    )
    top = max((v or 0) for m in ("turn_share", "token_share") for v in o[m].values())
    fig.update_yaxes(range=[0, top * 1.45], row=1, col=1)  # room for the read+search note above the bars
    fig.update_layout(
        title=title,
        barmode="group",
        boxmode="group",
        width=1000,
        height=480,
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
        margin=dict(t=95, b=110),
    )
    fig.update_yaxes(tickformat=".0%", title_text="share", row=1, col=1)
    fig.update_yaxes(title_text="count before the first edit", row=1, col=2)
    return fig


def relace_figure(results: dict[str, dict]):
    """Relace's two token measures: ours per data set (bars, 95% bootstrap intervals) beside the seed's
    values (hatched bars), each measure in its own panel titled with the seed's population."""
    pops = POPULATIONS_SHORT
    panels = (
        ("search_phase_share", "tokens before the first non-search call<br>mean per trajectory"),
        ("initial_search_share", "initial search: tokens before the first non-search call<br>pooled"),
    )
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t for _, t in panels], horizontal_spacing=0.12)
    for col, (key, _) in enumerate(panels, start=1):
        seed = RELACE[key]
        fig.add_trace(
            go.Bar(
                x=[html("Relace (seed)<br>{}", pops[key])],
                y=[seed],
                marker_color="#BBBBBB",
                marker_pattern_shape="/",
                text=[f"{seed:.1%}"],
                textposition="outside",
                showlegend=False,
            ),
            row=1,
            col=col,
        )
        for i, (name, m) in enumerate(results.items()):
            v = m.get(key) or {}
            if v.get("value") is None:
                continue
            lo, hi = v["ci"]
            fig.add_trace(
                go.Bar(
                    x=[html("{}<br>n={}", name, m["n"])],
                    y=[v["value"]],
                    marker_color=PALETTE[i % len(PALETTE)],
                    error_y=dict(type="data", symmetric=False, array=[hi - v["value"]], arrayminus=[v["value"] - lo]),
                    text=[f"{v['value']:.1%}"],
                    textposition="outside",
                    showlegend=False,
                ),
                row=1,
                col=col,
            )
    fig.update_yaxes(tickformat=".0%", title_text="share of tokens the model consumed", row=1, col=1)
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
    fig.update_layout(
        title="Relace's token measures: the seed's populations vs ours (95% bootstrap intervals)",
        width=1000,
        height=460,
        margin=dict(t=110, b=120),
    )
    return fig
