"""The field side by side (notebooks/09_field.ipynb): the published results shipped in
``data/field/published.csv`` (see its SOURCE.md), fasbench runs placed beside them only where the
metric definitions match, and how the ranking of policies changes with the gold definition (a change
is claimed only where paired sign-flip tests between the tops support it, :func:`top_sentence`).

Gold definitions compared (each a summary.parquet column, fasbench/scoring/localization.py):
``line_f1`` against the gold patch's hunks (FastContext), ``function_f1`` against the patch's
functions (FuseSearch / CodeScout / LocAgent entity gold), ``explore_line_f1`` against the lines a
successful repair run read (SWE-Explore's definition; gold from data/read_regions.py or an imported
SWE-Explore file).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.data.locations import find_data
from fasbench.evaluation.evaluate import aggregate
from fasbench.scoring.localization import EXPLORE_TOP_K
from fasbench.stats.figures import PALETTE
from fasbench.stats.findings import Findings
from fasbench.stats.metrics import fmt_p, paired_differs, paired_test

GOLDS = {  # label -> (summary column, what the gold is)
    "gold-patch hunks": ("line_f1", "line F1 vs the gold patch's hunk lines (FastContext)"),
    "functions": ("function_f1", "function F1 vs the patch's edited functions (FuseSearch/CodeScout)"),
    "read regions": ("explore_line_f1", "SWE-Explore line F1 (top-5 regions) vs lines a resolved run read"),
}


def published() -> pl.DataFrame:
    """The shipped table of published results (data/field/published.csv)."""
    return pl.read_csv(find_data("field/published.csv"), infer_schema_length=None)


SUBSETS = {"verified": "SWE-bench Verified", "lite": "SWE-bench Lite"}


def task_benchmarks(tasks) -> set[str]:
    """Benchmarks the tasks belong to, named as in published.csv."""
    return {SUBSETS[s] for t in tasks for s in t.meta.get("sets", []) if s in SUBSETS}


def gold_kind(task, column: str) -> str:
    """The kind of gold ``column`` is measured against on ``task``, in published.csv's words:
    read-region columns name where the regions came from (an imported SWE-Explore file, or
    fasbench's one-run stand-in, data/read_regions.py); the others are the gold patch's."""
    if column.startswith("explore_"):
        return (task.meta.get("gold_import") or {}).get("gold_kind") or "read-core regions"
    return "gold-patch hunks" if column.startswith(("line_", "fc_")) else "gold-patch entities"


def corpus_kind(tasks) -> str:
    """ "offline: Django==4.0 (n), …" or "online: exact commit" — what the runs searched."""
    c: dict[str, int] = {}
    for t in tasks:
        m = t.meta.get("corpus") or {}
        key = f"{m.get('package')}=={m.get('release')}" if m.get("mode") == "offline" else "exact commit"
        c[key] = c.get(key, 0) + 1
    kinds = ", ".join(f"{k} ({n})" for k, n in sorted(c.items()))
    off = any(k != "exact commit" for k in c)
    return ("offline sdist, an older release than each task's commit (gold relocated): " if off else "online: ") + kinds


def _budget(col: str, df: pl.DataFrame) -> str:
    """fasbench's budget for ``col``: the regions or items scored, and the turns the runs used."""
    k = (
        f"top {EXPLORE_TOP_K} regions"
        if col.startswith("explore_")
        else (
            f"top {col.rsplit('_', 1)[1]}"
            if "_acc_at_" in col
            else "top 1"
            if col.endswith("_top1")
            else "every cited item"
        )
    )
    turns = (
        f", {df['turns'].mean():.1f} turns (mean, max {df['turns'].max()})"
        if "turns" in df.columns and df.height
        else ""
    )
    return k + turns


def beside(df: pl.DataFrame, tasks, n_boot: int = 2000) -> pl.DataFrame:
    """Each valid or secondary published row whose metric fasbench computes with the same definition,
    beside every fasbench policy's macro mean ×100 (95% CI) over the tasks of the same subset (a
    Lite row only on the Lite tasks), with both n and both budgets. ``comparable`` is False, and
    ``why`` says why in a sentence, when the gold kinds differ (or the row is secondary)."""
    by_id = {t.id: t for t in tasks}
    pub = published().filter(
        pl.col("fasbench_column").is_in(df.columns)
        & pl.col("status").is_in(["valid", "secondary"])
        & pl.col("value").is_not_null()
    )
    rows = []
    for p in pub.iter_rows(named=True):
        col = p["fasbench_column"]
        ids = [i for i, t in by_id.items() if p["benchmark"] in task_benchmarks([t])]
        sub = df.filter(pl.col(col).is_not_null() & pl.col("task_id").is_in(ids))
        if sub.height == 0:
            continue
        kinds = sorted({gold_kind(by_id[i], col) for i in sub["task_id"].unique().to_list()})
        why = []
        if kinds != [p["gold"]]:
            why.append(f"the published gold is {p['gold']}, fasbench's here is {' / '.join(kinds)}")
        if p["status"] != "valid":
            why.append(f"the published number is {p['status']} ({p['source_table']})")
        agg = aggregate(sub, [col], n_boot=n_boot)
        for a in agg.iter_rows(named=True):
            mine = sub.filter(pl.col("policy") == a["policy"])
            rows.append(
                {
                    "metric": col,
                    "benchmark": p["benchmark"],
                    "published_system": p["model"],
                    "published": p["value"],
                    "published_n": p["n_tasks"],
                    "published_budget": p["budget"],
                    "status": p["status"],
                    "fasbench_policy": a["policy"],
                    "fasbench": round(100 * a[col], 1),
                    "ci_lo": round(100 * a[f"{col}_lo"], 1),
                    "ci_hi": round(100 * a[f"{col}_hi"], 1),
                    "fasbench_n": a["n"],
                    "fasbench_budget": _budget(col, mine),
                    "gold": p["gold"],
                    "fasbench_gold": " / ".join(kinds),
                    "comparable": not why,
                    "why": ("not comparable: " + "; ".join(why) + ".") if why else "",
                }
            )
    return pl.DataFrame(rows)


def beside_display(side: pl.DataFrame) -> pl.DataFrame:
    """:func:`beside` as display strings for a paper table (``fasbench.stats.tables.write_latex``): the
    published number with its n and budget, fasbench's mean [95% CI] with its n and budget, and whether
    they are comparable (the reason when not)."""
    rows = [
        {
            "metric": r["metric"],
            "benchmark": r["benchmark"],
            "published system": r["published_system"],
            "published": f"{r['published']:.1f}",
            "n (pub.)": str(r["published_n"]) if r["published_n"] is not None else None,
            "fasbench policy": r["fasbench_policy"],
            "fasbench": f"{r['fasbench']:.1f} [{r['ci_lo']:.1f}, {r['ci_hi']:.1f}]",
            "n": str(r["fasbench_n"]),
            "comparable": "yes" if r["comparable"] else r["why"].removeprefix("not comparable: ").rstrip("."),
        }
        for r in side.iter_rows(named=True)
    ]
    cols = ["metric", "benchmark", "published system", "published", "n (pub.)", "fasbench policy", "fasbench", "n"]
    return pl.DataFrame(rows, schema=dict.fromkeys([*cols, "comparable"], pl.String))


def caveats(tasks, df: pl.DataFrame) -> list[str]:
    """What differs between the fasbench numbers and the published ones, computed from the run and
    the gold its tasks carry."""
    n_read = (
        df.filter(pl.col("explore_line_f1").is_not_null())["task_id"].n_unique()
        if "explore_line_f1" in df.columns
        else 0
    )
    n_fn = df.filter(pl.col("function_f1").is_not_null())["task_id"].n_unique() if "function_f1" in df.columns else 0
    subsets = {b: sum(b in task_benchmarks([t]) for t in tasks) for b in sorted(task_benchmarks(tasks))}
    read = [t for t in tasks if t.gold.explore is not None]
    kinds: dict[str, int] = {}
    for t in read:
        k = gold_kind(t, "explore_line_f1")
        kinds[k] = kinds.get(k, 0) + 1
    whole = sum(bool((t.gold.explore or {}).get("whole_files")) for t in read)
    lost = sum(bool((t.meta.get("explore_relocation") or {}).get("core_dropped")) for t in read)
    where = "; ".join(f"{k} ({n})" for k, n in sorted(kinds.items())) or "none"
    return [
        f"tasks: {len(tasks)} SWE-bench instances the offline corpus serves (not the full benchmark: "
        + ", ".join(f"{n} in {b}" for b, n in subsets.items())
        + "; a published row is compared on its subset only); "
        f"{n_fn} have a function-level gold (module-level-only edits are left out, as LocAgent does)",
        f"corpus: {corpus_kind(tasks)}",
        "entities: Python ast on the corpus (LocAgent/CodeScout use their own parsers); a whole-file citation names no entity",
        f"read regions: {n_read} tasks scored; their gold: {where}; {whole} with whole-file reads kept whole on the corpus, "
        f"{lost} with core regions dropped by relocation (meta explore_relocation); scored at SWE-Explore's top-{EXPLORE_TOP_K} budget",
        "policies: fasbench's LLM-free heuristic and BM25 baselines; the published systems are trained or frontier LLM agents",
    ]


def gold_ranks(df: pl.DataFrame, golds: dict = GOLDS, n_boot: int = 2000) -> pl.DataFrame:
    """One row per (gold definition, policy): macro mean, CI, n on the tasks that have that gold,
    the policy's rank under it (1 = best; ties share the better rank), and the paired test of the
    gold's top policy against it on the tasks both have (``top``, ``vs_top_diff`` = top − policy,
    ``vs_top_lo``/``vs_top_hi``, ``vs_top_p``, ``vs_top_n``, ``vs_top_p_min``;
    :func:`fasbench.stats.metrics.paired_test`; null on the top's own row)."""
    rows = []
    for label, (col, _) in golds.items():
        if col not in df.columns:
            continue
        sub = df.filter(pl.col(col).is_not_null())
        if sub.height == 0:
            continue
        agg = aggregate(sub, [col], n_boot=n_boot)
        for a in agg.iter_rows(named=True):
            rows.append(
                {
                    "gold": label,
                    "metric": col,
                    "policy": a["policy"],
                    "value": a[col],
                    "lo": a[f"{col}_lo"],
                    "hi": a[f"{col}_hi"],
                    "n": a["n"],
                }
            )
    out = pl.DataFrame(rows)
    out = out.with_columns(pl.col("value").rank("min", descending=True).over("gold").cast(pl.Int64).alias("rank"))
    return _vs_top(out, df, n_boot)


_VS = ("diff", "lo", "hi", "p", "n", "p_min")


def _vs_top(ranks: pl.DataFrame, df: pl.DataFrame, n_boot: int) -> pl.DataFrame:
    """The paired test (top − policy) of each gold's top policy (first of rank 1) against the others."""
    extra = []
    for g in ranks["gold"].unique(maintain_order=True).to_list():
        r = ranks.filter(pl.col("gold") == g).sort("rank")
        col, top = r["metric"][0], r["policy"][0]
        mine = df.filter((pl.col("policy") == top) & pl.col(col).is_not_null()).select(
            "task_id", pl.col(col).alias("t")
        )
        for p in r["policy"].to_list():
            e = {"gold": g, "policy": p, "top": top, **{f"vs_top_{k}": None for k in _VS}}
            if p != top:
                j = mine.join(
                    df.filter((pl.col("policy") == p) & pl.col(col).is_not_null()).select(
                        "task_id", pl.col(col).alias("o")
                    ),
                    on="task_id",
                )
                res = paired_test(j["t"].cast(pl.Float64).to_list(), j["o"].cast(pl.Float64).to_list(), n_boot=n_boot)
                e.update({f"vs_top_{k}": res[k] for k in _VS})
            extra.append(e)
    schema = {
        "gold": pl.Utf8,
        "policy": pl.Utf8,
        "top": pl.Utf8,
        **{f"vs_top_{k}": (pl.Int64 if k == "n" else pl.Float64) for k in _VS},
    }
    return ranks.join(pl.DataFrame(extra, schema=schema), on=["gold", "policy"], how="left")


def _vs(row: dict) -> dict:
    """A gold_ranks row's paired test against the top, as :func:`fasbench.stats.metrics.paired_test` keys."""
    return {k: row[f"vs_top_{k}"] for k in _VS}


def rank_figure(ranks: pl.DataFrame, policies: Sequence[str] | None = None) -> go.Figure:
    """Left: each policy's score under each gold definition (95% CI); right: its rank (bump chart)."""
    golds = ranks["gold"].unique(maintain_order=True).to_list()
    policies = list(policies or ranks["policy"].unique(maintain_order=True).to_list())
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("score under each gold (macro mean, 95% CI)", "rank of the policy (1 = best)"),
        horizontal_spacing=0.12,
    )
    for i, p in enumerate(policies):
        s = ranks.filter(pl.col("policy") == p)
        s = s.join(pl.DataFrame({"gold": golds, "_o": list(range(len(golds)))}), on="gold").sort("_o")
        c = PALETTE[i % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=s["gold"],
                y=s["value"],
                mode="markers+lines",
                name=p,
                legendgroup=p,
                marker=dict(color=c, size=9),
                line=dict(color=c, width=1, dash="dot"),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=(s["hi"] - s["value"]).to_list(),
                    arrayminus=(s["value"] - s["lo"]).to_list(),
                    color=c,
                ),
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=s["gold"],
                y=s["rank"],
                mode="markers+lines",
                name=p,
                legendgroup=p,
                showlegend=False,
                marker=dict(color=c, size=11),
                line=dict(color=c, width=2),
            ),
            row=1,
            col=2,
        )
    fig.update_yaxes(title_text="F1", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="rank", autorange="reversed", dtick=1, row=1, col=2)
    fig.update_layout(
        title="Policy ranking across gold definitions",
        width=1000,
        height=460,
        margin=dict(t=95),
        legend=dict(orientation="h", y=-0.18),
    )
    return fig


def top_sentence(ranks: pl.DataFrame, alpha: float = 0.05) -> str:
    """Whether the top policy changes across golds, claimed only where the paired tests support it:
    for two golds with different tops A and B, A beats B under the first AND B beats A under the
    second (each :func:`fasbench.stats.metrics.paired_differs`: p < ``alpha`` and the interval excludes 0, on
    the tasks both have that gold). Otherwise the point-estimate tops are given with the tests that
    fail to separate them, each with its n."""
    golds = ranks["gold"].unique(maintain_order=True).to_list()
    tops = {g: ranks.filter(pl.col("gold") == g)["top"][0] for g in golds}
    listed = ", ".join(f"{g}: {p}" for g, p in tops.items())
    if len(set(tops.values())) == 1:
        return f"The top policy by point estimate is the same across the {len(golds)} gold definitions ({listed})."

    def vs(g, p):  # the top of gold g against policy p under g
        return _vs(ranks.filter((pl.col("gold") == g) & (pl.col("policy") == p)).row(0, named=True))

    def said(g, p):
        r = vs(g, p)
        return f"under {g}, {tops[g]} − {p} = {r['diff']:+.3f}, {fmt_p(r['p'])}, n = {r['n']}" + (
            f" (smallest attainable p = {r['p_min']:.3g})" if r["p_min"] is not None and r["p_min"] >= alpha else ""
        )

    pairs = [(g1, g2) for i, g1 in enumerate(golds) for g2 in golds[i + 1 :] if tops[g1] != tops[g2]]
    for g1, g2 in pairs:
        a, b = vs(g1, tops[g2]), vs(g2, tops[g1])
        if paired_differs(a, alpha) and paired_differs(b, alpha) and a["diff"] > 0 and b["diff"] > 0:
            return (
                f"The top policy changes across the gold definitions ({listed}); paired tests support it: "
                f"{said(g1, tops[g2])}; {said(g2, tops[g1])} (each p < {alpha:g} with its interval above 0)."
            )
    why = "; ".join(dict.fromkeys(x for g1, g2 in pairs for x in (said(g1, tops[g2]), said(g2, tops[g1]))))
    return (
        f"The point-estimate top policy differs across the {len(golds)} gold definitions ({listed}), but the paired "
        f"tests do not show that the ranking changes (a change needs each top ahead of the other under its own gold "
        f"at p < {alpha:g} with the interval excluding 0): {why}."
    )


def findings(ranks: pl.DataFrame, side: pl.DataFrame, n_tasks: int) -> Findings:
    """The notebook's closing "What we found" (a :class:`fasbench.stats.findings.Findings`), written from the
    computed frames."""
    f = Findings("the field's golds")
    order = {
        g: ranks.filter(pl.col("gold") == g).sort("rank")["policy"].to_list()
        for g in ranks["gold"].unique(maintain_order=True)
    }
    for g, pols in order.items():
        r = ranks.filter(pl.col("gold") == g).sort("rank")
        best = r.row(0, named=True)
        f.add(
            f"**{g}** (`{best['metric']}`, n = {best['n']}): best {best['policy']} "
            f"{best['value']:.3f} [{best['lo']:.3f}, {best['hi']:.3f}]; order: {' > '.join(pols)}."
        )
    f.add(top_sentence(ranks))
    if side.height:
        for col in side["metric"].unique(maintain_order=True):
            s = side.filter(pl.col("metric") == col)
            for r in s.unique(["published_system", "benchmark"], maintain_order=True).iter_rows(named=True):
                best = (
                    s.filter(pl.col("benchmark") == r["benchmark"]).sort("fasbench", descending=True).row(0, named=True)
                )
                n_pub = f"n = {r['published_n']}" if r["published_n"] is not None else "n not given"
                f.add(
                    f"`{col}` on {r['benchmark']}: fasbench's best {best['fasbench_policy']} {best['fasbench']} "
                    f"[{best['ci_lo']}, {best['ci_hi']}] (n = {best['fasbench_n']}, {best['fasbench_budget']}) vs "
                    f"{r['published_system']} {r['published']} ({n_pub}, {r['published_budget']})"
                    + (f"; {r['why']}" if r["why"] else ".")
                )
    return f.add(
        f"These are {n_tasks} offline-usable tasks with LLM-free baselines: read the caveats above before "
        "putting a fasbench number beside a published one."
    )
