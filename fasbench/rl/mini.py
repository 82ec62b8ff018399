"""The RL miniature of Relace's turn reduction (notebook 06, profiles ``sft_mini`` / ``rl_mini``):
before vs after on held-out tasks with intervals and paired tests, the acceptance checks, the cost
of a run, and the findings beside Relace's numbers.

Before and after are episode tables of the one checkpoint evaluator
(:func:`fasbench.evaluation.checkpoints.evaluate_checkpoint`) on the same held-out tasks. Per measure:
each side's mean with its 95% interval over tasks (:func:`fasbench.stats.metrics.mean_ci`: percentile
bootstrap, Student t below 10 tasks, none for one) and the paired after − before difference with its interval and
two-sided sign-flip p-value (:func:`fasbench.evaluation.runs.paired_diff`, i.e. :func:`fasbench.stats.metrics.paired_test`:
an exact interval up to 20 tasks, a bootstrap over tasks above).
"""

from __future__ import annotations

import os
import resource
import time
from contextlib import contextmanager

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.evaluation.episodes import column_bounds
from fasbench.evaluation.runs import paired_diff
from fasbench.rl.turn_curves import RELACE_FINDING
from fasbench.stats.figures import HEIGHT_META, PALETTE, bottom_legend
from fasbench.stats.findings import Findings, ci_of
from fasbench.stats.metrics import mean_ci

#: The measures compared (episode-table columns), with their labels. ``file_f2`` is Relace's A2
#: (F2 over files), the accuracy part of its reward.
MEASURES = {
    "turns": "mean turns",
    "calls_per_turn": "calls per turn",
    "file_f2": "file-level accuracy (F2)",
    "file_recall": "file recall",
    "reward": "reward",
}


def before_after_table(before: pl.DataFrame, after: pl.DataFrame, measures=MEASURES, seed: int = 0) -> pl.DataFrame:
    """One row per measure: before and after means with 95% bootstrap intervals over tasks, the
    paired after − before difference with its 95% interval and p-value, and the relative change.
    Tasks are paired by ``task_id`` (only tasks in both)."""
    a = before.select("task_id", *measures).rename({m: f"{m}__a" for m in measures})
    b = after.select("task_id", *measures).rename({m: f"{m}__b" for m in measures})
    j = a.join(b, on="task_id", how="inner")
    rows = []
    for m, label in measures.items():
        x, y = j[f"{m}__a"].cast(pl.Float64).to_list(), j[f"{m}__b"].cast(pl.Float64).to_list()
        bnd = column_bounds(m)
        (ma, la, ha), (mb, lb, hb) = mean_ci(x, seed=seed, bounds=bnd), mean_ci(y, seed=seed, bounds=bnd)
        d = paired_diff(x, y, seed=seed)
        rows.append(
            {
                "measure": m,
                "label": label,
                "n": j.height,
                "before": ma,
                "before_lo": la,
                "before_hi": ha,
                "after": mb,
                "after_lo": lb,
                "after_hi": hb,
                "diff": d["diff"],
                "diff_lo": d["lo"],
                "diff_hi": d["hi"],
                "p": d["p"],
                "test": d["test"],
                "ci": d["ci"],
                "change": (mb - ma) / ma if ma else float("nan"),
            }
        )
    return pl.DataFrame(rows)


def acceptance(table: pl.DataFrame) -> dict[str, bool]:
    """The issue's acceptance checks on a before/after table: turns fall by at least 40%, calls per
    turn rise (paired interval above 0), file-level accuracy not lower by more than 2 points (paired
    interval's lower end ≥ −0.02) and the reward rises (paired interval above 0)."""
    r = {row["measure"]: row for row in table.iter_rows(named=True)}
    return {
        "turns fall >= 40%": r["turns"]["change"] <= -0.4,
        "calls per turn rise": r["calls_per_turn"]["diff_lo"] > 0,
        "accuracy within 2 points": r["file_f2"]["diff_lo"] >= -0.02,
        "reward rises": r["reward"]["diff_lo"] > 0,
    }


@contextmanager
def cost(into: dict, what: str):
    """Measure a block: wall seconds, CPU seconds of this process and its children
    (``resource.getrusage``), and the 1-minute load average before and after; stored in ``into[what]``."""
    r0 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    l0, t0 = os.getloadavg()[0], time.time()
    try:
        yield
    finally:
        r1 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        cpu = sum((b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime) for a, b in zip(r0, r1))
        into[what] = {
            "wall_s": time.time() - t0,
            "cpu_s": cpu,
            "idle_2core_s": cpu / 2,
            "load_before": l0,
            "load_after": os.getloadavg()[0],
        }


def table_block(out: Findings, t: pl.DataFrame, title: str, measures=MEASURES) -> dict:
    """Add a before/after table (:func:`before_after_table`'s rows) to ``out`` under ``title``: each measure's
    before, after and paired difference with intervals and the sign-flip p. Returns the rows by measure."""
    r = {row["measure"]: row for row in t.iter_rows(named=True)}
    out.table(
        ["measure", "before", "after", "after − before", "p"],
        [
            [
                r[m]["label"],
                ci_of(r[m], "before"),
                ci_of(r[m], "after"),
                ci_of(r[m], "diff", 3, signed=True),
                f"{r[m]['p']:.3g}",
            ]
            for m in measures
        ],
        intro=f"**{title}** (n = {r['turns']['n']} held-out tasks; mean [95% interval]; "
        "paired after − before [95% interval], sign-flip p):",
    )
    return r


def relace_beside(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Relace's turns before → after RL beside the miniature's (one row per run)."""
    rows = [
        {
            "run": f"Relace, {k}",
            "turns before": float(a),
            "turns after": float(b),
            "change": (b - a) / a,
            "accuracy": "similar (as reported)",
        }
        for k, (a, b) in RELACE_FINDING.items()
    ]
    for name, t in tables.items():
        r = {row["measure"]: row for row in t.iter_rows(named=True)}
        rows.append(
            {
                "run": name,
                "turns before": r["turns"]["before"],
                "turns after": r["turns"]["after"],
                "change": r["turns"]["change"],
                "accuracy": f"{r['file_f2']['diff']:+.3f} F2 [{r['file_f2']['diff_lo']:+.3f}, {r['file_f2']['diff_hi']:+.3f}]",
            }
        )
    return pl.DataFrame(rows)


def findings(tables: dict[str, pl.DataFrame], costs: dict, setup: dict, short: bool = False) -> Findings:
    """Notebook 06's "What we found" (a :class:`fasbench.stats.findings.Findings`): per seed the before/after
    measures with intervals and paired tests, the acceptance checks, the cost, Relace's numbers beside,
    and what this does not show."""
    out = Findings("RL miniature")
    if short:
        out.text(
            "**Shortened parameter set** (`short=True`, as `make test` runs it): too few SFT and GRPO "
            "steps for the model to learn; the numbers below check that the pipeline runs, not the effect."
        )
    out.text(f"Setup: {setup.get('what', '')}")
    for name, t in tables.items():
        acc = acceptance(t)
        r = table_block(out, t, name)
        out.text(
            "Acceptance: "
            + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in acc.items())
            + f" (turns {100 * r['turns']['change']:+.0f}%)."
        )
    if costs:
        cpu = sum(c["cpu_s"] for k, c in costs.items() if k.startswith(("sft", "rl")))
        out.text(
            "Cost (CPU seconds of the process and its children; the ≤ 15 min target is for an idle "
            "2-core machine, estimated as CPU seconds / 2): "
            + "; ".join(
                f"{k}: {c['cpu_s']:.0f} CPU-s ({c['wall_s']:.0f} s wall at load {c['load_before']:.1f}–"
                f"{c['load_after']:.1f})"
                for k, c in costs.items()
            )
            + f". SFT + RL: {cpu:.0f} CPU-s ≈ {cpu / 120:.1f} min on an idle 2-core machine."
        )
    out.text(
        "Relace (seed 000): RL cut turns "
        + ", ".join(f"{a} → {b} ({100 * (b - a) / a:+.0f}%) on its {k}" for k, (a, b) in RELACE_FINDING.items())
        + " at similar accuracy, from the turn penalty and parallel calls, with a strong base model, "
        "an 8×H200 node and 3 epochs over 3,200 prompts."
    )
    out.caveat("What the miniature shows and does not: " + setup.get("limits", ""))
    return out


def before_after_figure(tables: dict[str, pl.DataFrame], title: str = "before vs after GRPO, held-out tasks"):
    """One panel per measure (two rows of two): before and after means with their 95% bootstrap
    intervals, per run."""
    shown = ("turns", "calls_per_turn", "file_f2", "reward")
    # Two rows of two panels with short titles: four in a row ran "file-level accuracy (F2)" into its
    # neighbours at 6.9 in, and a title broken onto two lines runs into the figure's title.
    titles = {"file_f2": "accuracy (file F2)"}
    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[titles.get(m, MEASURES[m]) for m in shown],
        horizontal_spacing=0.14,
        vertical_spacing=0.2,
    )
    for i, (name, t) in enumerate(tables.items()):
        r = {row["measure"]: row for row in t.iter_rows(named=True)}
        for c, m in enumerate(shown, start=1):
            row = r[m]
            ys = [row["before"], row["after"]]
            err = dict(
                type="data",
                symmetric=False,
                array=[row["before_hi"] - ys[0], row["after_hi"] - ys[1]],
                arrayminus=[ys[0] - row["before_lo"], ys[1] - row["after_lo"]],
            )
            fig.add_trace(
                go.Bar(
                    x=["before", "after"],
                    y=ys,
                    error_y=err,
                    name=name,
                    legendgroup=name,
                    marker_color=PALETTE[i % len(PALETTE)],
                    showlegend=c == 1,
                ),
                row=(c - 1) // 2 + 1,
                col=(c - 1) % 2 + 1,
            )
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(
        title=title,
        barmode="group",
        width=1000,
        height=600,
        margin=dict(t=90),
        legend=bottom_legend(),
        meta={HEIGHT_META: {"single": 3.6, "double": 3.6}},
    )
    return fig
