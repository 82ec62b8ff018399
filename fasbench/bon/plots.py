"""Frontier and reliability figures for a ``BonResult`` (plotly; save with fasbench.stats.figures.save)."""

from __future__ import annotations

import plotly.graph_objects as go

from fasbench.base.markup import html
from fasbench.bon.experiment import SEED, BonResult
from fasbench.bon.features import select_state
from fasbench.stats.figures import PALETTE

COLORS = {"cascade": PALETTE[0], "parallel": PALETTE[1], "fixed": "#777777", "seed": PALETTE[3]}


def pareto(rows: list[dict], x: str, y: str = "quality") -> list[dict]:
    """The rows no other row beats on both lower ``x`` and higher ``y``, sorted by ``x``."""
    rs = sorted(rows, key=lambda r: (r[x], -r[y]))
    out, best = [], float("-inf")
    for r in rs:
        if r[y] > best + 1e-12:
            out.append(r)
            best = r[y]
    return out


def frontier(res: BonResult, axis: str = "cost", split: str = "test") -> go.Figure:
    """Quality (points) against cost or latency relative to always-max-N, over the threshold
    grids; the train-optimal configurations are starred, the seed paper's reported savings drawn
    at the baseline's quality."""
    if axis not in ("cost", "latency"):
        raise ValueError(f"axis must be cost or latency, got {axis!r}")
    x = f"{axis}_rel"
    fig = go.Figure()
    names = ["cascade", "parallel"]
    for name in names:
        s = res.strategies[name]
        rows = [r for r in s.grid if r["split"] == split]
        fig.add_trace(
            go.Scatter(
                x=[100 * r[x] for r in rows],
                y=[r["quality"] for r in rows],
                mode="markers",
                marker=dict(color=COLORS[name], size=5, opacity=0.35),
                name=f"{name} (grid)",
                text=[f"p={r['p_target']}, g={r['g']}" for r in rows],
                showlegend=False,
            )
        )
        fr = pareto(rows, x)
        fig.add_trace(
            go.Scatter(
                x=[100 * r[x] for r in fr],
                y=[r["quality"] for r in fr],
                mode="lines",
                line=dict(color=COLORS[name], width=2, shape="hv"),
                name=f"{name} frontier",
            )
        )
        c = next(r for r in rows if r["p_target"] == s.chosen["p_target"] and r["g"] == s.chosen["g"])
        fig.add_trace(
            go.Scatter(
                x=[100 * c[x]],
                y=[c["quality"]],
                mode="markers",
                marker=dict(symbol="star", size=15, color=COLORS[name], line=dict(color="black", width=1)),
                name=f"{name}: train-optimal",
            )
        )
    fixed = [r for r in res.fixed if r["split"] == split]
    fig.add_trace(
        go.Scatter(
            x=[100 * r[x] for r in fixed],
            y=[r["quality"] for r in fixed],
            mode="markers+text+lines",
            text=[f"N={r['n']}" for r in fixed],
            textposition="top center",
            marker=dict(color=COLORS["fixed"], size=7),
            line=dict(color=COLORS["fixed"], dash="dot"),
            name="always-N",
        )
    )
    qb = next(r["quality"] for r in fixed if r["n"] == max(f["n"] for f in fixed))
    if axis == "cost":
        fig.add_trace(
            go.Scatter(
                x=[100 * (1 - SEED["cascade_cost_saving"])],
                y=[qb],
                mode="markers",
                marker=dict(symbol="diamond-open", size=13, color=COLORS["seed"], line=dict(width=2)),
                name="seed paper: cascade −44% cost",
            )
        )
    else:
        lo, hi = SEED["cascade_latency_increase"]
        fig.add_trace(
            go.Scatter(
                x=[100 * (1 + lo), 100 * (1 + hi)],
                y=[qb, qb],
                mode="lines+markers",
                marker=dict(symbol="diamond-open", size=11, color=COLORS["seed"]),
                line=dict(color=COLORS["seed"], width=3),
                name="seed paper: cascade +20–41% latency",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[100 * (1 - SEED["parallel_latency_saving"])],
                y=[qb],
                mode="markers",
                marker=dict(symbol="diamond", size=13, color=COLORS["seed"]),
                name="seed paper: parallel −25% latency",
            )
        )
    fig.add_hline(
        y=qb - res.config.max_loss,
        line=dict(color="#999", dash="dash", width=1),
        annotation_text=f"max-N − {res.config.max_loss:g} pt",
        annotation_position="bottom right",
    )
    fig.update_layout(
        title=f"Best-of-N: quality vs {axis} ({split} split, {res.n_test if split == 'test' else res.n_train} tasks)",
        xaxis_title=f"{axis} relative to always-max-N (%)",
        yaxis_title="quality of the selected answer (points)",
        legend=dict(x=1.02, y=1, xanchor="left"),
        width=900,
        height=460,
    )
    return fig


def reliability_figure(res: BonResult) -> go.Figure:
    """Reliability of the Resolve-Now classifier on the test states, per strategy."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"), name="perfect"))
    for name, s in res.strategies.items():
        t = s.reliability
        fig.add_trace(
            go.Scatter(
                x=[r["p_mean"] for r in t],
                y=[r["observed"] for r in t],
                mode="lines+markers",
                marker=dict(size=[6 + min(14, r["count"] ** 0.5) for r in t], color=COLORS[name]),
                line=dict(color=COLORS[name]),
                name=f"RN, {name} (Brier {s.calibration['rn_brier']:.3f}, ECE {s.calibration['rn_ece']:.3f})",
            )
        )
    fig.update_layout(
        title="Resolve-Now calibration on the test split",
        xaxis_title="predicted P(success now)",
        yaxis_title="observed success rate",
        xaxis_range=[0, 1],
        yaxis_range=[0, 1.02],
    )
    return fig


def difficulty_figure(pools, success_at: float = 0.5) -> go.Figure:
    """Histogram of the per-task share of rollouts that succeed on their own: the heavy tail the
    budget-aware strategies exploit (many tasks solved by every rollout, some by none)."""
    rates = [sum(r.quality >= success_at for r in p.rollouts) / p.n for p in pools]
    fig = go.Figure(go.Histogram(x=rates, xbins=dict(start=-0.05, end=1.05, size=0.1), marker_color=COLORS["cascade"]))
    fig.update_layout(
        title=f"Task difficulty: rollouts that succeed on their own ({len(pools)} tasks)",
        xaxis_title=f"share of a task's rollouts with quality ≥ {success_at:g}",
        yaxis_title="tasks",
        bargap=0.05,
    )
    return fig


def scaling_figure(pools, selectors: dict, sizes=None) -> go.Figure:
    """Quality of each selector on the first n rollouts, and the oracle (best single rollout), over
    every task of ``pools`` (all splits: no threshold is tuned here, unlike the frontiers, which score the
    test split only); the title states the population."""
    n_max = min(p.n for p in pools)
    sizes = list(sizes or range(1, n_max + 1))
    fig = go.Figure()
    oracle = [100 * sum(max(r.quality for r in p.rollouts[:n]) for p in pools) / len(pools) for n in sizes]
    fig.add_trace(
        go.Scatter(
            x=sizes, y=oracle, mode="lines+markers", name="oracle (best rollout)", line=dict(color="#777", dash="dot")
        )
    )
    for i, (name, sel) in enumerate(selectors.items()):
        q = [100 * sum(select_state(p, sel, n, "launch")[1] for p in pools) / len(pools) for n in sizes]
        fig.add_trace(go.Scatter(x=sizes, y=q, mode="lines+markers", name=name, line=dict(color=PALETTE[i % 8])))
    splits = sorted({p.split for p in pools if p.split})
    pop = f"{len(pools)} tasks, {'+'.join(splits)} splits" if splits else f"{len(pools)} tasks"
    fig.update_layout(
        title=html(
            "Selected-answer quality against pool size<br><sup>{}; the frontiers use the test split only</sup>", pop
        ),
        xaxis_title="rollouts in the pool (N)",
        yaxis_title="quality (points)",
        margin=dict(t=80),
    )
    return fig


def resolve_later_figure(res: BonResult, split: str = "test") -> go.Figure:
    """Does Resolve-Later help? Per strategy, the Pareto frontier of the threshold grid with RN
    only (g = −1: RL never stops) and with RN + RL (any g > −1), on the objective axis. Where the
    two frontiers coincide, RL adds nothing the RN threshold alone does not reach."""
    fig = go.Figure()
    for name, s in res.strategies.items():
        x = f"{s.objective}_rel"
        rows = [r for r in s.grid if r["split"] == split]
        for label, sub, dash in (("RN only", [r for r in rows if r["g"] <= -1], "dot"), ("RN + RL", rows, "solid")):
            fr = pareto(sub, x)
            fig.add_trace(
                go.Scatter(
                    x=[100 * r[x] for r in fr],
                    y=[r["quality"] for r in fr],
                    mode="lines+markers",
                    line=dict(color=COLORS[name], dash=dash, shape="hv"),
                    marker=dict(size=5),
                    name=f"{name} ({s.objective}): {label}",
                    text=[f"p={r['p_target']}, g={r['g']}" for r in fr],
                )
            )
    g = res.strategies["cascade"].chosen["g"]
    fig.update_layout(
        title=f"Resolve-Later's contribution ({split} split; shared train-optimal g = {g:g}"
        f"{', RL off' if g <= -1 else ''})",
        xaxis_title="cascade: cost, parallel: latency, relative to always-max-N (%)",
        yaxis_title="quality of the selected answer (points)",
        width=900,
        height=440,
        legend=dict(x=1.02, y=1, xanchor="left"),
    )
    return fig


def bounds_figure(res: BonResult) -> go.Figure:
    """Per strategy, on its objective: the saving reached on the test split (with its 95% interval),
    the oracle bound (a stop rule that knows the gold: the most any classifier could save without
    losing quality) and the seed paper's reported saving."""
    names, reached, lo, hi, oracle, seed = [], [], [], [], [], []
    for name, s in res.strategies.items():
        k = f"{s.objective}_saved"
        t = s.test
        names.append(f"{name} ({s.objective})")
        reached.append(100 * t[k])
        lo.append(100 * (t[k] - t[k + "_lo"]))
        hi.append(100 * (t[k + "_hi"] - t[k]))
        oracle.append(100 * s.calibration["oracle"][k])
        seed.append(100 * (SEED["cascade_cost_saving"] if name == "cascade" else SEED["parallel_latency_saving"]))
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=names,
            y=reached,
            name="reached (test, shared thresholds)",
            marker_color=COLORS["cascade"],
            error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo),
        )
    )
    fig.add_trace(go.Bar(x=names, y=oracle, name="oracle bound (knows the gold)", marker_color="#bbbbbb"))
    fig.add_trace(go.Bar(x=names, y=seed, name="seed paper (SWE agents)", marker_color=COLORS["seed"]))
    fig.update_layout(
        barmode="group",
        title="Savings against always-max-N: reached, possible, reported",
        yaxis_title="saved (%), > 0 = cheaper / faster",
        width=800,
        height=420,
    )
    return fig


def latency_spread_figure(pools) -> go.Figure:
    """Why parallel early stopping can or cannot save latency: per task, 1 − (first finished
    rollout's latency / slowest rollout's), the most a stop at the first finish saves on it."""
    gaps = [
        100 * (1 - min(r.latency for r in p.rollouts) / max(r.latency for r in p.rollouts))
        for p in pools
        if max(r.latency for r in p.rollouts) > 0
    ]
    fig = go.Figure(go.Histogram(x=gaps, nbinsx=30, marker_color=COLORS["parallel"]))
    fig.update_layout(
        title=f"Latency spread within a pool ({len(gaps)} tasks): the most a parallel stop can save",
        xaxis_title="1 − first finished / slowest rollout (%)",
        yaxis_title="tasks",
        bargap=0.05,
    )
    return fig
