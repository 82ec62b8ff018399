"""Figures and tables of the end-to-end study (notebook 10)."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from fasbench.e2e.counterfactual import RULES, SEEDS_E2E
from fasbench.stats.figures import PALETTE
from fasbench.studies.handoff import FORMATS

SEED_LINES = (  # (saving as a share of main-agent tokens, label): different setups, drawn for scale only
    (0.136, "Relace e2e: −13.6% total tokens (other setup)"),
    (0.60, "FastContext e2e: up to −60% main-agent tokens (other setup)"),
)
RULE_LABELS = {"strict": "strict (all looks cited)", "any": "any look cited", "all": "all exploration (bound)"}


def _err(df: pl.DataFrame, col: str) -> dict:
    return dict(
        type="data",
        symmetric=False,
        array=(df[f"{col}_hi"] - df[col]).to_list(),
        arrayminus=(df[col] - df[f"{col}_lo"]).to_list(),
        thickness=1.2,
        width=3,
    )


def savings_figure(tot: pl.DataFrame, short: dict[str, str] | None = None) -> go.Figure:
    """Pooled net saving (Σnet / Σtokens, 95% bootstrap CI) by replacement rule and handoff rendering,
    one panel per data set; the seeds' end-to-end savings as dashed reference lines."""
    short = short or {}
    sets = tot["dataset"].unique(maintain_order=True).to_list()
    fig = make_subplots(
        rows=1,
        cols=len(sets),
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=[f"{short.get(s, s)} (n={tot.filter(pl.col('dataset') == s)['n'][0]})" for s in sets],
    )
    for j, ds in enumerate(sets, 1):
        for k, fmt in enumerate(FORMATS):
            d = tot.filter((pl.col("dataset") == ds) & (pl.col("format") == fmt))
            d = d.sort(pl.col("rule").replace_strict({r: i for i, r in enumerate(RULES)}))
            fig.add_trace(
                go.Bar(
                    x=[RULE_LABELS[r] for r in d["rule"]],
                    y=d["net_share"],
                    name=f"handoff: {fmt}",
                    marker_color=PALETTE[k],
                    error_y=_err(d, "net_share"),
                    showlegend=j == 1,
                    legendgroup=fmt,
                ),
                row=1,
                col=j,
            )
        for v, label in SEED_LINES:
            note = (
                dict(annotation_text=label, annotation_position="top left", annotation_font_size=10) if j == 1 else {}
            )
            fig.add_hline(y=v, line_dash="dash", line_color="#777", line_width=1, row=1, col=j, **note)
    fig.update_layout(
        barmode="group",
        title="Counterfactual net token saving of a search handoff",
        legend=dict(orientation="h", y=-0.16),
        height=500,
        width=900,
        margin=dict(t=95),
    )
    fig.update_yaxes(title_text="net saving / main-agent tokens", tickformat=".0%", row=1, col=1)
    fig.add_hline(y=0, line_color="#444", line_width=1)
    return fig


def resolved_figure(
    tot: pl.DataFrame, rule: str = "strict", fmt: str = "code+search", short: dict[str, str] | None = None
) -> go.Figure:
    """Net saving (one rule, one rendering) and the report's line coverage, resolved vs unresolved."""
    short = short or {}
    d = tot.filter((pl.col("rule") == rule) & (pl.col("format") == fmt)).with_columns(
        pl.col("resolved").cast(pl.Utf8).fill_null("unknown")
    )
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=(f"net saving: {rule} rule, {fmt}", "pre-edit lines the report cites"),
    )
    ns = {(ds, r): n for ds, r, n in d.select("dataset", "resolved", "n").iter_rows()}
    label = {
        ds: f"{short.get(ds, ds)} (n {ns.get((ds, 'true'), 0)}/{ns.get((ds, 'false'), 0)})"
        for ds in d["dataset"].unique(maintain_order=True)
    }
    for k, res in enumerate(["true", "false"]):
        g = d.filter(pl.col("resolved") == res)
        x = [label[s] for s in g["dataset"]]
        lab = "resolved" if res == "true" else "unresolved"
        fig.add_trace(
            go.Bar(
                x=x, y=g["net_share"], name=lab, marker_color=PALETTE[k], legendgroup=lab, error_y=_err(g, "net_share")
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Bar(
                x=x,
                y=g["line_coverage"],
                name=lab,
                marker_color=PALETTE[k],
                legendgroup=lab,
                showlegend=False,
                error_y=_err(g, "line_coverage"),
            ),
            row=1,
            col=2,
        )
    fig.update_layout(
        barmode="group",
        title="By outcome of the real run (n resolved/unresolved)",
        height=450,
        width=900,
        legend=dict(orientation="h", y=-0.15),
        margin=dict(t=95),
    )
    fig.update_yaxes(tickformat=".0%")
    return fig


def live_figure(rows: list[dict]) -> go.Figure:
    """Paired differences (search − none) with 95% bootstrap CIs, one panel per metric."""
    rows = [r for r in rows if r.get("n")]
    fig = make_subplots(
        rows=1, cols=max(1, len(rows)), subplot_titles=[r["metric"] for r in rows], horizontal_spacing=0.09
    )
    for j, r in enumerate(rows, 1):
        fig.add_trace(
            go.Bar(
                x=["search − none"],
                y=[r["diff"]],
                marker_color=PALETTE[0],
                showlegend=False,
                error_y=dict(
                    type="data", symmetric=False, array=[r["hi"] - r["diff"]], arrayminus=[r["diff"] - r["lo"]]
                ),
            ),
            row=1,
            col=j,
        )
    fig.update_layout(
        title=f"Live main agent: with vs without the subagent (n={rows[0]['n'] if rows else 0} paired tasks)",
        height=400,
        width=max(500, 210 * len(rows)),
        margin=dict(t=95),
    )
    fig.update_annotations(font_size=11)
    return fig


def seeds_table() -> pl.DataFrame:
    """The seeds' end-to-end numbers, one row each (different setups from the counterfactual)."""
    return pl.DataFrame(
        [{"system": k, **{c: str(v) for c, v in d.items()}} for k, d in SEEDS_E2E.items()], infer_schema_length=None
    )
