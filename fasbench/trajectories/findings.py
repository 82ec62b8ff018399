"""Notebook 01's closing "What we found" (a :class:`fasbench.stats.findings.Findings`), generated from the
computed analysis: per data set FastContext's measures with n and 95% bootstrap intervals over
trajectories beside the seed's values, then Relace's two token measures
(``relace_measures.relace_findings``), then the caveats."""

from __future__ import annotations

import numpy as np
import polars as pl

from fasbench.stats.findings import Findings
from fasbench.trajectories.analysis import EXPLORE, SEEDS, Analysis
from fasbench.trajectories.relace_measures import bootstrap_interval, relace_findings

FC = SEEDS["fastcontext"]


def _ratio_ci(steps: pl.DataFrame, value: str, filt: pl.Expr, n_boot: int, seed: int) -> tuple[float, float, float]:
    """sum(value where filt) / sum(value), pooled over trajectories, with its bootstrap interval."""
    t = (
        steps.group_by(["dataset", "trajectory_id"], maintain_order=True)
        .agg(  # order fixed: the bootstrap resamples by position
            pl.col(value).filter(filt).sum().alias("num"), pl.col(value).sum().alias("den")
        )
        .filter(pl.col("den") > 0)
    )
    num, den = t["num"].to_numpy().astype(float), t["den"].to_numpy().astype(float)
    if not num.size:
        return float("nan"), float("nan"), float("nan")
    lo, hi = bootstrap_interval(num, den, n_boot, 0.05, seed)
    return float(num.sum() / den.sum()), lo, hi


def _mean_ci(x: pl.Series, n_boot: int, seed: int) -> tuple[float, float, float, int]:
    v = x.drop_nulls().to_numpy().astype(float)
    if not v.size:
        return float("nan"), float("nan"), float("nan"), 0
    lo, hi = bootstrap_interval(v, None, n_boot, 0.05, seed)
    return float(v.mean()), lo, hi, int(v.size)


def _fmt(v: float, pct: bool) -> str:
    if v != v:  # NaN
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.2f}"


def _cell(est: tuple, pct: bool = False) -> str:
    return f"{_fmt(est[0], pct)} [{_fmt(est[1], pct)}, {_fmt(est[2], pct)}]"


def findings(runs: dict[str, Analysis], summaries: dict[str, dict], n_boot: int = 2000, seed: int = 0) -> Findings:
    """Notebook 01's findings: the data, one table row per data set for FastContext's measures,
    Relace's section (``relace_measures.relace_findings``), caveats."""
    f = Findings("trajectory analysis")
    f.text("Data:")
    for name, a in runs.items():
        who = a.trajectories.group_by("agent", "model").len().sort("len", descending=True)
        f.add(
            f"{name}: "
            + "; ".join(
                f"{r['len']} of {r['agent'] or 'an unnamed agent'}" + (f" with {r['model']}" if r["model"] else "")
                for r in who.iter_rows(named=True)
            )
        )
    rows = [
        [
            "FastContext (seed)",
            300,
            _fmt(FC["read_search_turn_share"], True),
            _fmt(FC["read_search_token_share"], True),
            f"{FC['first_edit_turn_mean']:.2f}",
            f"{FC['explore_turns_before_mean_unresolved']:.2f} / {FC['explore_turns_before_mean_resolved']:.2f}",
        ]
    ]
    explore = pl.col("category").is_in(EXPLORE)
    notes, fc_gap = [], FC["explore_turns_before_mean_unresolved"] - FC["explore_turns_before_mean_resolved"]
    for name, a in runs.items():
        s, t = a.steps, a.trajectories
        turns = _ratio_ci(s.filter(pl.col("is_call")), "weight", explore, n_boot, seed)
        tokens = _ratio_ci(s, "call_tokens", explore, n_boot, seed)
        fe = _mean_ci(t["first_edit_turn"], n_boot, seed)
        by = {
            r: _mean_ci(t.filter(pl.col("resolved") == r)["explore_turns_before"], n_boot, seed) for r in (False, True)
        }
        rows.append(
            [
                name,
                t.height,
                _cell(turns, True),
                _cell(tokens, True),
                f"{_cell(fe)} ({fe[3]})",
                f"{_cell(by[False])} (n={by[False][3]}) / {_cell(by[True])} (n={by[True][3]})",
            ]
        )
        gap = by[False][0] - by[True][0]
        if not np.isnan(gap):
            notes.append(
                f"{name}: unresolved runs explore {gap:+.2f} turns more before their first edit than "
                f"resolved ones (FastContext: {fc_gap:+.2f})."
            )
    f.table(
        [
            "data set",
            "n",
            "read+search share of tool-use turns",
            "of tokens",
            "first edit turn, mean (n)",
            "explore turns before it, mean: unresolved / resolved",
        ],
        rows,
        intro=f"FastContext's measures (its population: {FC['source'].split(', ', 1)[1]}) on ours; "
        "value [95% percentile bootstrap interval over trajectories]:",
    )
    for name, s in summaries.items():
        h = (s.get("overall") or {}).get("handoff_share")
        if h is not None:
            notes.append(
                f"{name}: with the boundary at the first edit of a file the submission changes, and reads and "
                f"searches only (our handoff share; no seed measure), {100 * h:.1f}% of consumed tokens."
            )
    for note in notes:
        f.add(note)
    relace_findings(f, {n: s["relace"] for n, s in summaries.items() if s.get("relace")})
    return f.caveat(
        "(all) the agents, models and benchmarks differ from the seeds' (FastContext: GPT-5.4 "
        "mini-swe-agent runs; Relace: its own agent); our categories come from a rubric over shell commands "
        "and tool names; token counts are the agents' own usage where recorded (otherwise estimated with "
        "SmolLM2's tokenizer); intervals cover the sampling of trajectories, not the choice of rubric or agent."
    )
