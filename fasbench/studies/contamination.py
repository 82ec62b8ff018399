"""The contamination study behind notebook 11: the same tasks on their original and their perturbed
corpora (``fasbench.data.perturb``), one run each per policy, and the paired difference per task.

A policy that cannot memorise (the LLM-free heuristic, BM25) should score the same on both: that is
the control that the perturbation itself is fair (it hides no information the search needs). A
model policy's drop beyond that control is what it knew about the original layout without
searching: memorised paths, names, line numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go
import polars as pl

from fasbench.base import contain
from fasbench.base.markup import html
from fasbench.data.perturb import PerturbError
from fasbench.data.perturb_gold import gold_line_mismatches, perturb_task, verify_corpus
from fasbench.data.tasksets import corpus_kind_of
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.rundir import load_summary
from fasbench.harness import Limits
from fasbench.records import Task
from fasbench.stats.figures import PALETTE
from fasbench.stats.metrics import paired_test

VARIANTS = ("original", "perturbed")

#: Which perturbation keeps which kind of gold exact here, and what it leaves behind.
SAFETY = [
    {
        "perturbation": "reorder (functions)",
        "files": "safe",
        "lines": "safe: line map per block",
        "entities": "safe: names unchanged",
        "read regions": "safe: a region may split in two",
        "task text": "unchanged",
        "not safe for": "gold that is a patch to apply (hunk order/offsets change); "
        "decorated functions and classes are never moved (registration order)",
    },
    {
        "perturbation": "private names (rope)",
        "files": "safe",
        "lines": "safe: same numbers, text read back",
        "entities": "safe: renamed with the record",
        "read regions": "safe",
        "task text": "names rewritten",
        "not safe for": "gold that is a patch to apply (it names the old identifier); names used only by "
        "getattr with a computed string are not found (rope's docs pass renames literal strings)",
    },
    {
        "perturbation": "modules (rope)",
        "files": "safe: paths mapped",
        "lines": "safe: same numbers",
        "entities": "safe: paths mapped",
        "read regions": "safe: paths mapped",
        "task text": "paths, dotted names, file names rewritten",
        "not safe for": "text naming a module as a plain word ('the query module'); .rst/.txt docs keep old paths; "
        "a module named in setup.cfg/pyproject or a code string is never renamed",
    },
    {
        "perturbation": "packages (rope)",
        "files": "safe: every file below moved",
        "lines": "safe",
        "entities": "safe: paths mapped",
        "read regions": "safe: paths mapped",
        "task text": "paths rewritten",
        "not safe for": "the top-level package (never renamed: imports from outside the corpus); packages "
        "named in strings or build files are skipped",
    },
]


def perturb_pairs(tasks: Sequence[Task], spec: str) -> tuple[list[Task], list[Task], list[dict]]:
    """(originals, perturbed, excluded) for materialised tasks, in input order and paired by id."""
    orig, pert, bad = [], [], []
    for t in tasks:
        try:
            pert.append(perturb_task(t, spec))
            orig.append(t)
        except (PerturbError, OSError) as e:
            bad.append({"id": t.id, "reason": "not-perturbed", "detail": str(e)[:300]})
    return orig, pert, bad


def gold_check(orig: Sequence[Task], pert: Sequence[Task], verify: bool = True) -> pl.DataFrame:
    """Per task: gold lines checked and those that point at other code after relocation (must be 0),
    gold files moved, renames, reordered files; with ``verify`` the import and test-collection check
    of the touched modules (``fasbench.data.perturb_gold.verify_corpus``)."""
    rows = []
    for a, b in zip(orig, pert):
        wrong = gold_line_mismatches(a, b)
        lines = sum(e - s + 1 for r in a.gold.edited.values() for s, e in r)
        m = b.meta["perturb"]
        row = {
            "task_id": a.id,
            "gold_lines": lines,
            "gold_lines_wrong": len(wrong),
            "gold_files_moved": m["gold_files_moved"],
            "gold_files": len(a.gold.edited),
            "renames": m["renames"],
            "reordered_files": m["reordered_files"],
            "text_changed": a.query != b.query,
        }
        if verify:
            try:
                v = verify_corpus(a.root, b.root, contain.read_json(m["record"], want=dict))
            except (
                PerturbError,
                ValueError,
            ) as e:  # the sandbox cannot run this corpus's code, or its record is unreadable: not checked, not ok
                v = {
                    "modules": None,
                    "import_original": None,
                    "import_perturbed": None,
                    "tests_original": None,
                    "tests_perturbed": None,
                    "ok": False,
                }
                row["check_error"] = str(e)[:300]
            row.update(
                modules=v["modules"],
                import_original=v["import_original"],
                import_perturbed=v["import_perturbed"],
                tests_original=v["tests_original"],
                tests_perturbed=v["tests_perturbed"],
                corpus_ok=v["ok"],
            )
        rows.append(row)
    return pl.DataFrame(rows)


def run_dir(out_root: str | Path, variant: str, spec: str) -> Path:
    return Path(out_root) / variant / spec.replace(":", "_").replace(",", "_").replace("=", "-")


def run_pairs(
    orig: Sequence[Task],
    pert: Sequence[Task],
    specs: Sequence[str],
    out_root: str | Path,
    toolset: str = "relace",
    max_turns: int = 6,
    workers: int | None = None,
    task_limits: dict[str, int] | None = None,
) -> pl.DataFrame:
    """Every policy on both variants (resuming); the summaries stacked with a ``variant`` column.
    ``task_limits`` caps slow policies (``{"hf": 2}``) to the same first tasks on both."""
    frames = []
    for spec in specs:
        k = (task_limits or {}).get(spec.split(":", 1)[0], len(orig))
        for variant, ts in zip(VARIANTS, (list(orig)[:k], list(pert)[:k])):
            df = run_eval(
                ts,
                spec,
                toolset,
                run_dir(out_root, variant, spec),
                Limits(max_turns=max_turns),
                workers=workers,
                task_source=f"contamination study, {variant} corpora ({len(ts)} tasks)",
                corpus=corpus_kind_of(list(orig)[:k]),
            )
            frames.append(df.with_columns(pl.lit(variant).alias("variant")))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def load_pairs(out_root: str | Path, specs: Sequence[str]) -> pl.DataFrame:
    frames = [
        load_summary(run_dir(out_root, v, s)).with_columns(pl.lit(v).alias("variant"))
        for s in specs
        for v in VARIANTS
        if (run_dir(out_root, v, s) / "summary.parquet").exists()
    ]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def paired_table(
    df: pl.DataFrame, metrics: Sequence[str] = ("file_f2", "line_f1", "all_gold_at_5"), level: float = 0.95
) -> pl.DataFrame:
    """Per policy and metric, on the tasks both variants ran: both means, perturbed − original with
    its paired interval and p (``fasbench.stats.metrics.paired_test``), the interval's width, and
    ``within``: |difference| < width, or every paired difference exactly 0 (the acceptance test); None
    when some task changed and n is too small for an interval (nothing to compare the difference with)."""
    rows = []
    for policy in df["policy"].unique(maintain_order=True).to_list():
        sub = df.filter(pl.col("policy") == policy)
        a = sub.filter(pl.col("variant") == "original").select("task_id", *metrics)
        b = sub.filter(pl.col("variant") == "perturbed").select("task_id", *metrics)
        j = a.join(b, on="task_id", suffix="_p").sort("task_id")
        for m in metrics:
            x, y = j[f"{m}_p"].cast(pl.Float64).to_list(), j[m].cast(pl.Float64).to_list()
            res = paired_test(x, y, level=level)
            width = res["hi"] - res["lo"]
            zero = all(u == v for u, v in zip(x, y))
            rows.append(
                {
                    "policy": policy,
                    "metric": m,
                    "n": len(x),
                    "original": sum(y) / len(y) if y else None,
                    "perturbed": sum(x) / len(x) if x else None,
                    "diff": res["diff"],
                    "lo": res["lo"],
                    "hi": res["hi"],
                    "width": width,
                    "p": res["p"],
                    "ci": res["ci"],
                    "tasks_changed": sum(u != v for u, v in zip(x, y)),
                    "within": True if zero else (None if width != width else bool(abs(res["diff"]) < width)),
                    "paired": res,
                }
            )
    return pl.DataFrame(rows)


def changed_tasks(df: pl.DataFrame, chk: pl.DataFrame, policy: str, metric: str = "file_f2") -> pl.DataFrame:
    """The tasks on which ``policy`` scored differently on the two variants, with the gold check's
    ``text_changed`` (a rewritten task text is the usual reason for a lexical policy)."""
    sub = df.filter(pl.col("policy") == policy).select("task_id", "variant", metric)
    if not sub.height:
        return pl.DataFrame({"task_id": [], "original": [], "perturbed": [], "text_changed": []})
    wide = sub.pivot(on="variant", index="task_id", values=metric)
    if not set(VARIANTS) <= set(wide.columns):
        return wide.clear()
    return wide.filter(pl.col("original") != pl.col("perturbed")).join(
        chk.select("task_id", "text_changed"), on="task_id", how="left"
    )


def paired_figure(
    table: pl.DataFrame,
    metrics: Sequence[str] = ("file_f2", "line_f1", "all_gold_at_5"),
    title: str = "",
    tasks: str = "",
) -> go.Figure:
    """Perturbed − original per policy and metric with its paired 95% interval (no bar where n is too
    small for one); 0 = the perturbation changed nothing."""
    fig = go.Figure()
    for i, m in enumerate(metrics):
        t = table.filter(pl.col("metric") == m)
        if not t.height:
            continue
        d, lo, hi = t["diff"].to_list(), t["lo"].to_list(), t["hi"].to_list()
        fig.add_trace(
            go.Scatter(
                x=d,
                y=t["policy"].to_list(),
                mode="markers",
                name=m,
                orientation="h",  # group along y, not along the value axis
                marker=dict(size=11, color=PALETTE[i % len(PALETTE)]),
                error_x=dict(
                    type="data",
                    array=[h - x if h == h else 0 for x, h in zip(d, hi)],
                    arrayminus=[x - v if v == v else 0 for x, v in zip(d, lo)],
                    thickness=1.5,
                    width=6,
                ),
                hovertemplate=m + " %{y}: %{x:+.3f}<extra></extra>",
            )
        )
    fig.add_vline(x=0, line=dict(color="#888888", dash="dot"))
    sub = html("<br><sup>{}</sup>", tasks) if tasks else ""
    fig.update_layout(
        title=(title or "Perturbed − original, paired by task (95% interval)") + sub,
        xaxis_title="perturbed − original",
        yaxis_title="policy",
        scattermode="group",
        yaxis=dict(type="category", automargin=True),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def scores_figure(table: pl.DataFrame, metric: str = "file_f2", tasks: str = "") -> go.Figure:
    """Each policy's mean on the original and on the perturbed corpora, side by side."""
    t = table.filter(pl.col("metric") == metric)
    fig = go.Figure()
    for i, v in enumerate(VARIANTS):
        fig.add_bar(name=f"{v} corpora", x=t["policy"].to_list(), y=t[v].to_list(), marker_color=PALETTE[i])
    sub = html("<br><sup>{}</sup>", tasks) if tasks else ""
    fig.update_layout(
        barmode="group",
        title=f"{metric} on original vs perturbed corpora" + sub,
        yaxis_title=metric,
        xaxis_title="policy",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
