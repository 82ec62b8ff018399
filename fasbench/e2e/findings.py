"""Notebook 10's closing "What we found" (a :class:`fasbench.stats.findings.Findings`), written from the
study's frames: per data set the report's coverage of what the main agent read before its first
edit, the strictly replaced exploration and its net token saving per handoff rendering, the upper
bound, the split by outcome, the seeds' end-to-end numbers and (when run) the live comparison."""

from __future__ import annotations

from typing import Mapping, Sequence

import polars as pl

from fasbench.e2e.counterfactual import SEEDS_E2E
from fasbench.stats.findings import Findings, ci


def _pct(x) -> str:
    return f"{100 * x:.1f}%"


def _ci(row: Mapping, c: str) -> str:
    return f"{_pct(row[c])} [{_pct(row[c + '_lo'])}, {_pct(row[c + '_hi'])}]"


def findings(datasets: Sequence[str], short: Mapping[str, str], tot: pl.DataFrame, ub: pl.DataFrame,
             by_res: pl.DataFrame, search_used: str, live: Sequence[dict] | None = None,
             arms: pl.DataFrame | None = None) -> Findings:
    """``tot``/``by_res``: ``study.totals`` by data set (and outcome), ``ub``: ``study.upper_bound`` by
    data set, ``live``: ``runner.compare_arms`` rows or None, ``arms``: ``pays.arms_table`` by data set."""
    f = Findings("does search help the main agent?")
    for ds in datasets:
        t = tot.filter(pl.col("dataset") == ds) if tot.height else tot
        if t.height == 0:
            u = ub.filter(pl.col("dataset") == ds)
            if u.height:
                u = u.row(0, named=True)
                f.add(f"**{short[ds]}**: no search run paired (no cached corpus); upper bound over {u['n']} runs with "
                      f"a first edit: gross {_ci(u, 'gross_share')}, the pre-edit read/search calls' own tokens "
                      f"{_ci(u, 'calls_share')}.")
            continue

        def g(rule: str, fmt: str, t=t) -> dict:
            return t.filter((pl.col("rule") == rule) & (pl.col("format") == fmt)).row(0, named=True)

        s, a, sc = g("strict", "code+search"), g("all", "code+search"), g("strict", "citations")
        u = ub.filter(pl.col("dataset") == ds).row(0, named=True)
        item = (f"**{short[ds]}** (n = {s['n']} trajectories with a first edit and a `{search_used}` search run; "
                f"{u['n']} with a first edit in all): the report cites {_pct(s['read_file_coverage'])} of the files the "
                f"agent read before its first edit and {_ci(s, 'line_coverage')} of the lines. Strictly replaced "
                f"exploration (every look cited): {s['replaced_turns']:.1f} turns of {s['explore_turns_before']:.1f} per "
                f"run; net token saving {_ci(s, 'net_share')} with the `code+search` handoff ({s['handoff_tokens']:.0f} "
                f"tokens), {_ci(sc, 'net_share')} with `citations`. Upper bound (all pre-edit exploration replaced, "
                f"`code+search`): {_ci(a, 'net_share')}; gross over all {u['n']} runs {_ci(u, 'gross_share')}, of which "
                f"the pre-edit read/search calls' own tokens are {_ci(u, 'calls_share')} (Relace's initial-search share: "
                "12%) and the rest is their output carried in later prompts.")
        rs = by_res.filter((pl.col("dataset") == ds) & (pl.col("rule") == "strict") & (pl.col("format") == "code+search"))
        parts = [f"{'resolved' if r['resolved'] else 'unresolved'} {_ci(r, 'net_share')} (n = {r['n']})"
                 for r in rs.iter_rows(named=True) if r["resolved"] is not None]
        if parts:
            item += "\n  - strict, `code+search`, by outcome: " + "; ".join(parts) + "."
        f.add(item)
        if arms is not None and arms.height:
            f.add(pays_sentence(arms.filter(pl.col("dataset") == ds), short[ds]))
    fc, rl = SEEDS_E2E["fastcontext"], SEEDS_E2E["relace"]
    f.text(f"Seeds, end to end and in other setups: FastContext {fc['resolve_rate_points']} resolve-rate points and "
           f"{fc['main_agent_tokens']} main-agent tokens ({fc['setup']}); Relace {rl['median_latency']} median latency, "
           f"{rl['total_tokens']} tokens, accuracy {rl['accuracy']} ({rl['setup']}).")
    if live:
        lr = {x["metric"]: x for x in live}
        f.text("Live (" + ", ".join(f"{m}: {x['diff']:+.3g} [{x['lo']:+.3g}, {x['hi']:+.3g}]" for m, x in lr.items())
               + f"; search − none over {live[0]['n']} paired tasks; wall time includes the subagent's; gold "
               "files/functions are a localisation proxy, not a resolve rate: resolving needs the tasks' tests).")
    return f.caveat("An estimate, not a rerun: a main agent given the report may still re-read files, or explore "
                    "differently; no resolve rate is measured. Replacement needs the report to cite what the agent "
                    "looked at, so a weak searcher (the default is the CPU heuristic) gives a low strict saving while "
                    "the `all` rule bounds what any searcher could replace. Tokens of the real runs are the providers' "
                    "counts, the handoff's are SmolLM2's; the net saving models no prompt caching (the delegation "
                    "arms' prefix-cache share assumes an append-only chat). Line numbers are compared "
                    "across trees (the agent's checkout at the task commit vs the PyPI release the search ran on), "
                    "moved by the gold relocation offset where known. Only tasks whose offline corpus locates the gold "
                    "are paired.")


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
    for arm in ("citations", "code"):
        i, rr, c, te = get(arm, "input"), get(arm, "reread_share"), get(arm, "cache_share"), get(arm, "turns_to_edit")
        if i is None:
            continue
        parts.append(f"`{arm}` hand-off: input {ci(i['diff'], i['diff_lo'], i['diff_hi'], 0, signed=True)} tokens per run "
                     f"vs none ({_verdict(i)}); it re-reads {ci(rr['mean'], rr['lo'], rr['hi'], 3, pct=True)} of the "
                     f"handed-off lines; prefix-cacheable {ci(c['mean'], c['lo'], c['hi'], 3, pct=True)}; turns to the "
                     f"first edit {ci(te['diff'], te['diff_lo'], te['diff_hi'], 2, signed=True)}")
    return (f"**{name}**, does delegating pay (counterfactual, n = {base['n']}; no subagent: "
            f"{ci(base['mean'], base['lo'], base['hi'], 0)} main-model input tokens per run, "
            f"{ci(base_c['mean'], base_c['lo'], base_c['hi'], 3, pct=True)} prefix-cacheable): " + "; ".join(parts) + ".")
