"""Notebook 10's closing "What we found" (a :class:`fasbench.stats.findings.Findings`), written from the
study's frames: per data set the report's coverage of what the main agent read before its first
edit, the strictly replaced exploration and its net token saving per handoff rendering, the upper
bound, the split by outcome, the seeds' end-to-end numbers and (when run) the live comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from fasbench.e2e.counterfactual import SEEDS_E2E
from fasbench.stats.findings import Findings, ci, ci_of

SHARE = {"digits": 3, "pct": True}  # a share with its interval: 68.1% [60.0%, 70.0%]


def _pct(x) -> str:
    return f"{100 * x:.1f}%"


def findings(
    datasets: Sequence[str],
    short: Mapping[str, str],
    tot: pl.DataFrame,
    ub: pl.DataFrame,
    by_res: pl.DataFrame,
    search_used: str,
    live: Sequence[dict] | None = None,
    arms: pl.DataFrame | None = None,
    live_arms: pl.DataFrame | None = None,
    live_main: str = "",
    live_arm: str = "search",
    grounding: pl.DataFrame | None = None,
) -> Findings:
    """``tot``/``by_res``: ``study.totals`` by data set (and outcome), ``ub``: ``study.upper_bound`` by
    data set, ``live``: ``runner.compare_arms`` rows or None, ``arms``: ``pays.arms_table`` by data set,
    ``live_arms``: ``pays.live_arms_table`` of the live records (``live_main``: who the main model was;
    ``live_arm``: the arm ``live`` compares with none), ``grounding``: ``pays.arms_table`` of the hand-offs'
    ``GROUNDING`` by data set with ``base="citations"`` (the ids run against the free-form one)."""
    f = Findings("does search help the main agent?")
    for ds in datasets:
        t = tot.filter(pl.col("dataset") == ds) if tot.height else tot
        if t.height == 0:
            u = ub.filter(pl.col("dataset") == ds)
            if u.height:
                u = u.row(0, named=True)
                f.add(
                    f"**{short[ds]}**: no search run paired (no cached corpus); upper bound over {u['n']} runs with "
                    f"a first edit: gross {ci_of(u, 'gross_share', **SHARE)}, the pre-edit read/search calls' own tokens "
                    f"{ci_of(u, 'calls_share', **SHARE)}."
                )
            continue

        def g(rule: str, fmt: str, t=t) -> dict:
            return t.filter((pl.col("rule") == rule) & (pl.col("format") == fmt)).row(0, named=True)

        s, a, sc = g("strict", "code+search"), g("all", "code+search"), g("strict", "citations")
        u = ub.filter(pl.col("dataset") == ds).row(0, named=True)
        item = (
            f"**{short[ds]}** (n = {s['n']} trajectories with a first edit and a `{search_used}` search run; "
            f"{u['n']} with a first edit in all): the report cites {_pct(s['read_file_coverage'])} of the files the "
            f"agent read before its first edit and {ci_of(s, 'line_coverage', **SHARE)} of the lines. Strictly replaced "
            f"exploration (every look cited): {s['replaced_turns']:.1f} turns of {s['explore_turns_before']:.1f} per "
            f"run; net token saving {ci_of(s, 'net_share', **SHARE)} with the `code+search` handoff ({s['handoff_tokens']:.0f} "
            f"tokens), {ci_of(sc, 'net_share', **SHARE)} with `citations`. Upper bound (all pre-edit exploration replaced, "
            f"`code+search`): {ci_of(a, 'net_share', **SHARE)}; gross over all {u['n']} runs {ci_of(u, 'gross_share', **SHARE)}, of which "
            f"the pre-edit read/search calls' own tokens are {ci_of(u, 'calls_share', **SHARE)} (Relace's initial-search share: "
            "12%) and the rest is their output carried in later prompts."
        )
        rs = by_res.filter(
            (pl.col("dataset") == ds) & (pl.col("rule") == "strict") & (pl.col("format") == "code+search")
        )
        parts = [
            f"{'resolved' if r['resolved'] else 'unresolved'} {ci_of(r, 'net_share', **SHARE)} (n = {r['n']})"
            for r in rs.iter_rows(named=True)
            if r["resolved"] is not None
        ]
        if parts:
            item += "\n  - strict, `code+search`, by outcome: " + "; ".join(parts) + "."
        f.add(item)
        if arms is not None and arms.height:
            f.add(pays_sentence(arms.filter(pl.col("dataset") == ds), short[ds]))
        if grounding is not None and grounding.height:
            g_ds = grounding.filter(pl.col("dataset") == ds)
            if g_ds.height:
                f.add(grounding_sentence(g_ds, short[ds]))
    fc, rl = SEEDS_E2E["fastcontext"], SEEDS_E2E["relace"]
    f.text(
        f"Seeds, end to end and in other setups: FastContext {fc['resolve_rate_points']} resolve-rate points and "
        f"{fc['main_agent_tokens']} main-agent tokens ({fc['setup']}); Relace {rl['median_latency']} median latency, "
        f"{rl['total_tokens']} tokens, accuracy {rl['accuracy']} ({rl['setup']})."
    )
    if live:
        lr = {x["metric"]: x for x in live}
        f.text(
            "Live ("
            + ", ".join(f"{m}: {x['diff']:+.3g} [{x['lo']:+.3g}, {x['hi']:+.3g}]" for m, x in lr.items())
            + f"; {live_arm} − none over {live[0]['n']} paired tasks; wall time includes the subagent's; gold "
            "files/functions are a localisation proxy, not a resolve rate: resolving needs the tasks' tests)."
        )
    if live_arms is not None and live_arms.height:
        f.add(live_sentence(live_arms, live_main))
    return f.caveat(
        "An estimate, not a rerun: a main agent given the report may still re-read files, or explore "
        "differently; no resolve rate is measured. Replacement needs the report to cite what the agent "
        "looked at, so a weak searcher (the default is the CPU heuristic) gives a low strict saving while "
        "the `all` rule bounds what any searcher could replace. Tokens of the real runs are the providers' "
        "counts, the handoff's are SmolLM2's; the net saving models no prompt caching (the delegation "
        "arms' prefix-cache share assumes an append-only chat). Line numbers are compared "
        "across trees (the agent's checkout at the task commit vs the PyPI release the search ran on), "
        "moved by the gold relocation offset where known. Only tasks whose offline corpus locates the gold "
        "are paired."
    )


def _verdict(r: Mapping) -> str:
    lo, hi = r["diff_lo"], r["diff_hi"]
    if lo is None or hi is None or lo != lo or hi != hi:
        return "no interval"
    return "pays" if hi < 0 else "costs more" if lo > 0 else "no clear difference"


def pays_sentence(a: pl.DataFrame, name: str) -> str:
    """Does delegating pay on one data set: per hand-off arm, main-model input tokens against no subagent
    (paired, with the verdict), the re-read share of the handed-off lines, the prefix-cache share and the
    turns to the first edit (``pays.arms_table`` rows)."""

    def get(arm: str, m: str) -> dict | None:
        r = a.filter((pl.col("arm") == arm) & (pl.col("measure") == m))
        return r.row(0, named=True) if r.height else None

    base, base_c = get("none", "input"), get("none", "cache_share")
    if base is None:
        return f"**{name}**, delegation: no arm measured."
    parts = []
    for arm in ("citations", "ids", "code"):
        i, rr, c, te = get(arm, "input"), get(arm, "reread_share"), get(arm, "cache_share"), get(arm, "turns_to_edit")
        if i is None:
            continue
        parts.append(
            f"`{arm}` hand-off: input {ci(i['diff'], i['diff_lo'], i['diff_hi'], 0, signed=True)} tokens per run "
            f"vs none ({_verdict(i)}); it re-reads {ci(rr['mean'], rr['lo'], rr['hi'], 3, pct=True)} of the "
            f"handed-off lines; prefix-cacheable {ci(c['mean'], c['lo'], c['hi'], 3, pct=True)}; turns to the "
            f"first edit {ci(te['diff'], te['diff_lo'], te['diff_hi'], 2, signed=True)}"
        )
    return (
        f"**{name}**, does delegating pay (counterfactual, n = {base['n']}; no subagent: "
        f"{ci(base['mean'], base['lo'], base['hi'], 0)} main-model input tokens per run, "
        f"{ci(base_c['mean'], base_c['lo'], base_c['hi'], 3, pct=True)} prefix-cacheable): " + "; ".join(parts) + "."
    )


def grounding_sentence(a: pl.DataFrame, name: str) -> str:
    """The hand-offs' grounding on one data set (``pays.arms_table`` rows of ``GROUNDING``, base
        ``citations``): the share of cited lines the searcher was never shown, and the file-level F1, for the
        free-form and the ID-grounded search run on the same tasks, ids − free paired; the line-level F1 beside
    where the table has it."""

    def get(arm: str, m: str) -> dict | None:
        r = a.filter((pl.col("arm") == arm) & (pl.col("measure") == m))
        return r.row(0, named=True) if r.height and r.row(0, named=True)["n"] else None

    cu, iu, cf, idf = (
        get("citations", "unseen_share"),
        get("ids", "unseen_share"),
        get("citations", "file_f1"),
        get("ids", "file_f1"),
    )
    if idf is None or cf is None:
        return f"**{name}**, ID-grounded hand-off: no ids search run paired."
    unseen = (
        f"cited lines never shown to the searcher: free {ci(cu['mean'], cu['lo'], cu['hi'], 3, pct=True)} per task, "
        f"ids {ci(iu['mean'], iu['lo'], iu['hi'], 3, pct=True)}; "
        if cu is not None and iu is not None
        else ""
    )
    diff = (
        f", ids − free {ci(idf['diff'], idf['diff_lo'], idf['diff_hi'], 3, signed=True)} paired"
        if idf["diff"] is not None
        else ""
    )
    cl, il = get("citations", "line_f1"), get("ids", "line_f1")
    line = (
        f"; line-level F1 free {ci(cl['mean'], cl['lo'], cl['hi'], 3)}, ids {ci(il['mean'], il['lo'], il['hi'], 3)}"
        + (
            f", ids − free {ci(il['diff'], il['diff_lo'], il['diff_hi'], 3, signed=True)}"
            if il["diff"] is not None
            else ""
        )
        if cl is not None and il is not None
        else ""
    )
    return (
        f"**{name}**, ID-grounded vs free-form hand-off (the same searcher on the same tasks, n = {idf['n']}): "
        + unseen
        + f"file-level F1 free {ci(cf['mean'], cf['lo'], cf['hi'], 3)}, ids {ci(idf['mean'], idf['lo'], idf['hi'], 3)}"
        + diff
        + line
        + "."
    )


def live_sentence(a: pl.DataFrame, main: str = "") -> str:
    """Does delegating pay on the live path: per hand-off arm (``pays.live_arms_table`` rows), the main
    model's input tokens against no subagent (paired, with the verdict), the re-read share of the handed-off
    lines, the prefix-cache share and the turns against none."""

    def get(arm: str, m: str) -> dict | None:
        r = a.filter((pl.col("arm") == arm) & (pl.col("measure") == m))
        return r.row(0, named=True) if r.height else None

    base, rr0 = get("none", "input_tokens"), get("none", "reread_share")
    if base is None or not base["n"]:
        return "**live**, delegation: no arm measured."
    parts = []
    for arm in [x for x in dict.fromkeys(a["arm"].to_list()) if x != "none"]:
        i, rr, c, t = get(arm, "input_tokens"), get(arm, "reread_share"), get(arm, "cache_share"), get(arm, "turns")
        if i is None or not i["n"] or i["diff"] is None:
            continue
        parts.append(
            f"`{arm}`: input {ci(i['diff'], i['diff_lo'], i['diff_hi'], 0, signed=True)} tokens per task vs "
            f"none ({_verdict(i)}); re-reads {ci(rr['mean'], rr['lo'], rr['hi'], 3, pct=True)} of the "
            f"handed-off lines; prefix-cacheable {ci(c['mean'], c['lo'], c['hi'], 3, pct=True)}; turns "
            f"{ci(t['diff'], t['diff_lo'], t['diff_hi'], 2, signed=True)}"
        )
    own = (
        f"; alone it read {ci(rr0['mean'], rr0['lo'], rr0['hi'], 3, pct=True)} of the first hand-off's lines itself"
        if rr0 and rr0["n"]
        else ""
    )
    who = f" against {main}" if main else ""
    if "scripted" in main:
        who += " (its main agent is a script: these numbers check the measurement, not a model)"
    return (
        f"**live**{who}, does delegating pay (n = {base['n']} tasks; no subagent: "
        f"{ci(base['mean'], base['lo'], base['hi'], 0)} main-model input tokens per task{own}): "
        + ("; ".join(parts) or "no hand-off arm paired")
        + "."
    )
