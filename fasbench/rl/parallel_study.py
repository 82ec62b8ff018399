"""Notebook 06's study of the parallel-search miniature (issue 35): the start's sampled two-call share,
per-step curves (reward and parts, turns, calls per turn, zero-variance share, sampled two-call
share), before vs after on held-out tasks sampled and greedy (means with 95% intervals, paired tests,
the acceptance checks of :mod:`fasbench.rl.mini`), and the findings beside Relace's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.rl.mini import acceptance, before_after_table, table_block
from fasbench.rl.turn_curves import RELACE_FINDING
from fasbench.rl.vgrpo import per_task, read_steps, share_ci
from fasbench.stats.figures import HEIGHT_META, PALETTE
from fasbench.stats.findings import Findings

#: The measures of the before/after tables (per-task means of the rollouts).
MEASURES = {
    "turns": "mean turns",
    "calls_per_turn": "calls per turn",
    "first_parallel": "P(>= 2 calls in turn 1)",
    "file_f2": "file-level accuracy (F2)",
    "reward": "reward (relace-mini-k3)",
}
CURVES = (
    ("reward", "reward"),
    ("turns", "turns"),
    ("calls_per_turn", "calls per turn"),
    ("first_parallel", "two-call share<br>(turn 1)"),
    ("zero_var_share", "zero-variance<br>groups"),
)
#: Measures bounded to [0, 1] (shares, and the relace-mini-k3 reward): their panels show the whole range.
UNIT_RANGE = ("reward", "first_parallel", "zero_var_share")


def start_share(rows: list[dict]) -> dict:
    """The share of sampled first turns with >= 2 calls, with its Wilson 95% interval and n."""
    xs = [r["first_parallel"] for r in rows if r["mode"] == "sampled"]
    p, lo, hi = share_ci(xs)
    return {"share": p, "lo": lo, "hi": hi, "n": len(xs)}


def tables(before: list[dict], after: list[dict], seed: int = 0) -> dict[str, pl.DataFrame]:
    """Before/after tables (``sampled``, ``greedy``) over per-task means, paired by task."""
    return {
        mode: before_after_table(
            pl.DataFrame(per_task(before, mode)), pl.DataFrame(per_task(after, mode)), measures=MEASURES, seed=seed
        )
        for mode in ("sampled", "greedy")
    }


def step_curves(runs: dict[str, list[dict]], title: str = "variance-aware GRPO, per step") -> go.Figure:
    """One panel per logged measure, one line per run (seed): two rows of three panels (five titles in one
    row of a 6.9-inch figure ran into each other), short titles, the legend in the sixth place, bounded
    measures on [0, 1] and counts from 0, so that a panel's slope is not magnified by its own y range."""
    cols = 3
    rows = -(-len(CURVES) // cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[c[1] for c in CURVES],
        horizontal_spacing=0.1,
        vertical_spacing=0.2,
    )
    for i, (name, steps) in enumerate(runs.items()):
        x = [s["step"] for s in steps]
        for c, (k, _) in enumerate(CURVES):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[s.get(k) for s in steps],
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    line=dict(color=PALETTE[i % len(PALETTE)], width=1.5),
                    marker=dict(size=5),
                    showlegend=c == 0,
                ),
                row=c // cols + 1,
                col=c % cols + 1,
            )
    for c, (k, _) in enumerate(CURVES):
        r, col = c // cols + 1, c % cols + 1
        below = c + cols >= len(CURVES)  # no panel under it: its x axis is titled
        fig.update_xaxes(title_text="step" if below else None, rangemode="tozero", row=r, col=col)
        if k in UNIT_RANGE:
            fig.update_yaxes(range=[-0.03, 1.03], row=r, col=col)
        else:
            fig.update_yaxes(rangemode="tozero", row=r, col=col)
    fig.update_layout(
        title=title,
        width=1000,
        height=620,
        margin=dict(t=90),
        legend=dict(x=1, xanchor="right", y=0, yanchor="bottom", xref="paper", yref="paper"),
        meta={HEIGHT_META: {"single": 4.4, "double": 4.2}},
    )
    return fig


def findings(
    start: dict,
    results: dict[str, dict[str, pl.DataFrame]],
    steps: dict[str, list[dict]],
    costs: dict,
    setup: dict,
    short: bool = False,
) -> Findings:
    """Notebook 06's "What we found": the start's sampled two-call share, per seed and mode the
    before/after measures with intervals and paired tests, the acceptance checks, the zero-variance
    share, the cost, Relace's numbers beside, and what this does not show."""
    out = Findings("RL miniature: learning to search in parallel")
    if short:
        out.text(
            "**Shortened parameter set** (`short=True`, as `make test` runs it): a few SFT and GRPO steps; "
            "the numbers check that the pipeline runs, not the effect."
        )
    out.text(f"Setup: {setup.get('what', '')}")
    out.text(
        f"The start (before GRPO), sampled at temperature 1.0 on held-out tasks: {100 * start['share']:.0f}% "
        f"[{100 * start['lo']:.0f}, {100 * start['hi']:.0f}] of first turns make >= 2 calls "
        f"(n = {start['n']} rollouts; target 20-50%)."
    )
    verdicts = {}
    for name, by_mode in results.items():
        for mode, t in by_mode.items():
            r = table_block(out, t, f"{name}, {mode}, per-task means", MEASURES)
            acc = acceptance(t)
            verdicts[(name, mode)] = acc
            out.text(
                f"Acceptance ({name}, {mode}): "
                + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in acc.items())
                + f" (turns {100 * r['turns']['change']:+.0f}%)."
            )
    for name, st in steps.items():
        if st:
            z = [s["zero_var_share"] for s in st]
            zf = [s["zero_var_share_first"] for s in st]
            out.text(
                f"{name}: {len(st)} GRPO steps, {sum(s['rollouts_drawn'] for s in st)} rollouts drawn; zero-variance "
                f"share of groups {sum(zf) / len(zf):.2f} at first draw, {sum(z) / len(z):.2f} after resampling "
                f"(mean over steps); sampled two-call share {st[0]['first_parallel']:.2f} at step 1, "
                f"{st[-1]['first_parallel']:.2f} at step {st[-1]['step']}."
            )
    reached = bool(verdicts) and all(all(v.values()) for v in verdicts.values())
    out.text(
        "**Issue 35's acceptance " + ("is met" if reached else "is NOT met") + "** on these runs "
        "(every check, every seed, sampled and greedy)."
    )
    if costs:
        out.text(
            "Cost (CPU seconds of this process and its children; idle 2-core minutes = CPU-s / 120): "
            + "; ".join(
                f"{k}: {c['cpu_s']:.0f} CPU-s ({c['wall_s']:.0f} s wall at load {c['load_before']:.1f}–{c['load_after']:.1f})"
                for k, c in costs.items()
            )
            + "."
        )
    out.text(
        "Relace (seed 000): RL cut turns "
        + ", ".join(f"{a} → {b} ({100 * (b - a) / a:+.0f}%) on its {k}" for k, (a, b) in RELACE_FINDING.items())
        + " at similar accuracy, with a strong base model, an 8×H200 node and 3 epochs over 3,200 prompts."
    )
    out.caveat("What the miniature shows and does not: " + setup.get("limits", ""))
    return out


def configurations(runs_dir, prompt_tokens: int | None = None) -> pl.DataFrame:
    """Every GRPO run of the miniature found under ``runs_dir`` (``rl-par*``): its configuration (start,
    groups a step, rollouts a group, turn cap), what it did (steps logged, rollouts drawn) and its
    zero-variance share and reward at the first and last logged step; a run that logged no step says so."""
    rows = []
    for d in sorted(Path(runs_dir).glob("rl-par*-seed*")):
        if not (d / "config.json").exists():
            continue
        c = json.loads((d / "config.json").read_text())
        st = read_steps(d)
        rows.append(
            {
                "run": d.name,
                "start": Path(c["start"]).parent.name,
                "prompt": c["prompt"],
                "first_turn_tokens": prompt_tokens,
                "groups": c["groups"],
                "k": c["k"],
                "steps_planned": c["steps"],
                "steps_logged": len(st),
                "rollouts": sum(s["rollouts_drawn"] for s in st),
                "zero_var_first": st[0]["zero_var_share"] if st else None,
                "zero_var_last": st[-1]["zero_var_share"] if st else None,
                "reward_first": st[0]["reward"] if st else None,
                "reward_last": st[-1]["reward"] if st else None,
                "rollout_s_per_step": sum(s["rollout_s"] for s in st) / len(st) if st else None,
            }
        )
    return pl.DataFrame(rows)
