"""Figures of GRPO runs (fasbench/rl/): training curves, turns and accuracy over training, before vs
after, incentive landscape."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.evaluation.episodes import column_name, part_columns
from fasbench.rl.turn_curves import ACCURACY_PARTS, accuracy_part
from fasbench.stats.figures import PALETTE


def _band(fig, x, mean, std, name, color, row, col, showlegend=True):
    up = [m + s for m, s in zip(mean, std)]
    lo = [m - s for m, s in zip(mean, std)]
    fig.add_trace(
        go.Scatter(
            x=list(x) + list(x)[::-1],
            y=up + lo[::-1],
            mode="lines",
            fill="toself",
            fillcolor=color,
            opacity=0.15,
            line=dict(width=0),
            hoverinfo="skip",
            showlegend=False,
        ),
        row=row,
        col=col,
    )
    fig.add_trace(
        go.Scatter(
            x=list(x),
            y=list(mean),
            mode="lines+markers",
            name=name,
            legendgroup=name,
            line=dict(color=color),
            showlegend=showlegend,
        ),
        row=row,
        col=col,
    )


def curves(frame, title: str = "GRPO over the harness") -> go.Figure:
    """Per step: reward (mean ± std over rollouts) with turns (Relace's reward-and-turns figure),
    each reward part, and calls per turn."""
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=("reward and turns", "reward parts", "calls per turn"),
        specs=[[{"secondary_y": True}, {}, {}]],
        horizontal_spacing=0.13,
    )
    x = frame["step"].to_list()

    def ms(k):
        return frame[f"{k}/mean"].to_list(), frame[f"{k}/std"].to_list()

    _band(fig, x, *ms("episode/reward"), "reward", PALETTE[0], 1, 1)
    m, _ = ms("episode/turns")
    fig.add_trace(
        go.Scatter(x=x, y=m, mode="lines+markers", name="turns", line=dict(color=PALETTE[1], dash="dot")),
        row=1,
        col=1,
        secondary_y=True,
    )
    parts = sorted(
        c[len("reward_parts/") : -len("/mean")]
        for c in frame.columns
        if c.startswith("reward_parts/") and c.endswith("/mean")
    )
    for i, p in enumerate(parts):
        _band(fig, x, *ms(f"reward_parts/{p}"), p, PALETTE[(i + 2) % len(PALETTE)], 1, 2)
    _band(fig, x, *ms("episode/calls_per_turn"), "calls/turn", PALETTE[7], 1, 3)
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="reward", row=1, col=1)
    fig.update_yaxes(title_text="turns", row=1, col=1, secondary_y=True)
    fig.update_layout(title=title, width=1100, height=380, legend=dict(orientation="h", y=-0.25))
    return fig


def _parts(frame, reward: str | None) -> list[str]:
    """The reward-part columns (``reward_NAME__PART``) of an episode table: those of ``reward``, or,
    when None, of every reward the frame holds."""
    if reward is not None:
        return part_columns(frame.columns, reward)
    return [c for c in frame.columns if c.startswith("reward_") and "__" in c]


def _part_label(col: str) -> str:
    """``reward_relace__accuracy`` → ``accuracy``."""
    return col.split("__", 1)[1] if "__" in col else col


def _headline_parts(frame, reward: str | None) -> list[str]:
    """The accuracy part (:data:`fasbench.rl.turn_curves.ACCURACY_PARTS`) and the turn penalty of the
    reward, as columns, where the frame has them."""
    by_label = {_part_label(c): c for c in _parts(frame, reward)}
    acc = next((by_label[column_name(p)] for p in ACCURACY_PARTS if column_name(p) in by_label), None)
    return [c for c in (acc, by_label.get("turn_penalty")) if c]


def before_after(
    frame, reward: str = "relace", metrics=("reward", "turns", "calls_per_turn", "reported", "report_wellformed")
) -> go.Figure:
    """Mean of each metric per policy (before / after) on the evaluation tasks: an episode table
    (:func:`fasbench.evaluation.checkpoints.evaluate_checkpoint`, one row per policy and task). After ``reward``
    come its accuracy part and turn penalty: the ``reward_NAME__PART`` columns of ``reward``, the
    run's reward (the table scores every reward; ``reward`` names the headline one)."""
    metrics = [m for m in metrics if m in frame.columns]
    metrics = metrics[:1] + [p for p in _headline_parts(frame, reward) if p not in metrics] + metrics[1:]
    agg = frame.group_by("policy", maintain_order=True).agg([pl.col(m).cast(pl.Float64).mean() for m in metrics])
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[_part_label(m) for m in metrics])
    for j, m in enumerate(metrics):
        fig.add_trace(
            go.Bar(
                x=agg["policy"].to_list(),
                y=agg[m].to_list(),
                marker_color=PALETTE[: agg.height],
                showlegend=False,
                text=[f"{v:.2f}" for v in agg[m].to_list()],
                textposition="outside",
            ),
            row=1,
            col=j + 1,
        )
    fig.update_yaxes(rangemode="tozero")  # every metric here is >= 0; an all-zero one shows 0..1, not -1..1
    fig.update_layout(
        title=f"before vs after GRPO ({frame['task_id'].n_unique()} tasks)",
        width=max(700, 160 * len(metrics)),
        height=380,
        margin=dict(t=100),
    )
    return fig


def landscape(frame, reward: str | None = None, value: str = "reward") -> go.Figure:
    """Heat map of the mean ``value`` of the heuristic policy over planned turns × calls per search
    turn (``plan_turns`` × ``plan_calls``), beside the mean ``value`` and each part of ``reward``
    (``reward_NAME__PART``; None: of every reward in the frame) by the turns the episodes used
    (``turns``); the frame is ``fasbench.rl.run_analysis.incentive_landscape``'s."""
    parts = [c for c in _parts(frame, reward) if c != value]
    agg = frame.group_by(["plan_turns", "plan_calls"]).agg(pl.col(value).mean())
    turns = sorted(agg["plan_turns"].unique().to_list())
    calls = sorted(agg["plan_calls"].unique().to_list())
    z = [
        [agg.filter((pl.col("plan_turns") == t) & (pl.col("plan_calls") == c))[value].item() for c in calls]
        for t in turns
    ]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(f"mean {value}", f"mean {value} and its parts by turns used"),
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.2,
    )
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=[str(c) for c in calls],
            y=[str(t) for t in turns],
            colorscale="Viridis",
            text=[[f"{v:.2f}" for v in r] for r in z],
            texttemplate="%{text}",
            colorbar=dict(x=0.42, len=0.9, thickness=14),
        ),
        row=1,
        col=1,
    )
    by_t = frame.group_by("turns").agg([pl.col(k).mean() for k in [*parts, value]]).sort("turns")
    for i, k in enumerate([*parts, value]):
        fig.add_trace(
            go.Scatter(
                x=by_t["turns"].to_list(),
                y=by_t[k].to_list(),
                mode="lines+markers",
                name=_part_label(k),
                line=dict(color=PALETTE[i % len(PALETTE)], width=3 if k == value else 2),
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title_text="parallel calls per search turn", type="category", row=1, col=1)
    fig.update_yaxes(title_text="planned turns", type="category", row=1, col=1)
    fig.update_xaxes(title_text="turns used", dtick=1, row=1, col=2)
    fig.update_layout(
        title="incentive landscape: heuristic policy scored under the reward", width=1000, height=420, margin=dict(t=90)
    )
    return fig


def turns_accuracy(
    frame, title: str = "turns and accuracy over training", max_turns: int | None = None, free_turns: int = 4
) -> go.Figure:
    """Relace's question of a GRPO run, per step from the step log (``rl.log_frame``): turns used
    (mean ± std over the step's rollouts, left axis, up to the turn limit ``max_turns`` when given,
    with Relace's penalty-free zone n <= ``free_turns`` shaded) against accuracy — the reward's
    accuracy part (``fasbench.rl.turn_curves.accuracy_part``) — and Relace's turn penalty where the reward has one
    (right axis)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = frame["step"].to_list()

    def ms(k):
        return frame[f"{k}/mean"].to_list(), frame[f"{k}/std"].to_list()

    fig.add_shape(
        type="rect",
        xref="x domain",
        yref="y",
        x0=0,
        x1=1,
        y0=0,
        y1=free_turns,
        fillcolor="#999999",
        opacity=0.18,
        line_width=0,
        layer="below",
    )
    fig.add_annotation(
        xref="x domain",
        yref="y",
        x=0.01,
        y=free_turns,
        text=f"no turn penalty (n ≤ {free_turns})",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        font=dict(size=11, color="#555555"),
    )
    _band(fig, x, *ms("episode/turns"), "turns", PALETTE[1], 1, 1)
    parts = [
        c[len("reward_parts/") : -len("/mean")]
        for c in frame.columns
        if c.startswith("reward_parts/") and c.endswith("/mean")
    ]
    acc = accuracy_part(parts)
    label = "accuracy" if acc == "accuracy" else f"accuracy ({acc})"
    for k, name, color, dash in (
        (acc, label, PALETTE[0], None),
        ("turn_penalty" if "turn_penalty" in parts else None, "turn penalty", PALETTE[2], "dot"),
    ):
        if k is None:
            continue
        m, s = ms(f"reward_parts/{k}")
        fig.add_trace(
            go.Scatter(
                x=x,
                y=m,
                mode="lines+markers",
                name=name,
                line=dict(color=color, dash=dash),
                error_y=dict(type="data", array=s, visible=True, thickness=1),
            ),
            secondary_y=True,
        )
    top = max([m + s for m, s in zip(*ms("episode/turns"))] + [max_turns or 0, free_turns + 1])
    fig.update_xaxes(title_text="step", dtick=1)
    fig.update_yaxes(title_text="turns per episode", range=[0, top * 1.05], secondary_y=False)
    fig.update_yaxes(
        title_text="accuracy / turn penalty",
        range=[0, 1.05],
        tickmode="linear",
        tick0=0,
        dtick=0.2,
        showgrid=False,
        secondary_y=True,
    )
    if max_turns:
        fig.add_hline(
            y=max_turns,
            line_dash="dash",
            line_color="#777777",
            annotation_text=f"turn limit {max_turns}",
            annotation_position="bottom right",
        )
    fig.update_layout(title=title, width=800, height=420, legend=dict(orientation="h", y=-0.2))
    return fig
