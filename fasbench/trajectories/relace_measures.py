"""Relace's two token measures of how much of a coding agent's work is search (seed 000, Relace FAS blog).

What the blog says (translated from the seed):

- **56.6%** — "we used a coding agent to solve a set of ~1,200 programming tasks and looked for the first
  tool call *not* related to search in each trace, e.g. a file-edit tool or some bash script for
  testing. We found that *on average* search makes up 56.6% of all tokens the model consumes over the
  whole trace." Population: ~1,200 real "vibe-coding" traces (users' vague instructions, production
  prompts), Relace's coding agent — *not* SWE-bench.
- **~12%** — "for SWE-bench traces the *initial search* is only ~12% of the total number of tokens in
  the whole agent trajectory" (problem statements are detailed and often name the files). Population:
  SWE-bench Verified traces of Relace's main ("Oracle") agent (500 tasks), in the FAS + Oracle study.

Both are the same boundary — the search phase is everything the agent does before its first
non-search tool call — measured on different populations; they differ in how the traces are
combined, which the blog words differently and we therefore implement as two measures:

- ``search_phase_share`` (Relace's 56.6%): per trajectory, tokens before the first non-search call ÷
  all tokens of that trajectory, then the *mean over trajectories* ("on average").
- ``initial_search_share`` (Relace's ~12%): tokens before the first non-search call summed over all
  trajectories ÷ all tokens of all trajectories (*pooled*: the study reports its token totals summed
  over the run, 890M vs 1.03B).

The other aggregation of each is reported too (``*_pooled`` / ``*_mean``), so a reader sees how much
the choice moves the number. Choices of ours where the blog is silent:

- *Tokens* are what the model consumes: prompt + completion tokens of each model call (the steps
  frame's ``call_tokens``; a turn with k calls gives each call 1/k).
- *Search calls* are the rubric's ``read`` and ``search`` categories (view, cat, grep, find, ls …);
  every other category (``edit``, ``test``, ``other``: running scripts, installs, submitting) is a
  non-search call. Turns without a tool call (format errors) do not end the search phase; their tokens
  count where they fall.
- The boundary is the first non-search *call*: calls of its own turn listed before it count as search
  (their 1/k shares), the call itself and everything after it do not.
- A trajectory without any non-search call is search throughout (share 1); their number is reported
  (``without_non_search``).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from fasbench.stats.findings import Findings

SEARCH = ("read", "search")  # the rubric's categories that count as search
# with the subagent's work counted as search: its rows stay in the trajectory (after the call that
# delegated to it) and the delegation call itself is search; left out, a delegation is a non-search call
SEARCH_WITH_SUBAGENTS = ("read", "search", "delegate")
POPULATIONS = {
    "search_phase_share": "Relace: ~1,200 real 'vibe-coding' agent traces (production prompts; not SWE-bench)",
    "initial_search_share": "Relace: SWE-bench Verified traces of its main ('Oracle') agent, 500 tasks",
}
POPULATIONS_SHORT = {
    "search_phase_share": "~1,200 real agent traces<br>(not SWE-bench)",
    "initial_search_share": "SWE-bench Verified<br>(Relace's Oracle agent)",
}
# The seed's numbers with their populations (quoted from seed 000, not computed here).
RELACE_SEEDS = {
    "search_phase_share": 0.566,
    "initial_search_share": 0.12,
    "source": "Relace FAS blog (seed 000)",
    "populations": POPULATIONS,
}
OURS = "fasbench: main-agent trajectories given to the analysis (shipped: SWE-bench mini-swe-agent runs)"
_KEY = ("dataset", "trajectory_id")
BASES = ("consumed", "content")


def _content_tokens() -> pl.Expr:
    """Each token the agent's work adds to the trajectory, counted once: every completion and every
    observation (× the call's 1/k weight); the task prompt is neither search nor later work."""
    own = pl.col("completion_tokens").fill_null(0) + pl.col("obs_tokens").fill_null(0)
    return own.cast(pl.Float64) * pl.col("weight")


def per_trajectory(
    steps: pl.DataFrame | pl.LazyFrame,
    basis: str = "consumed",
    extra: tuple[str, ...] = (),
    chunk_rows: int = 200_000,
    subagents: bool = False,
) -> pl.DataFrame:
    """One row per trajectory (see :func:`_per_trajectory`), computed over slices of about
    ``chunk_rows`` steps that never split a trajectory (slices are views; the scratch columns of one
    slice at a time is what keeps the 50k-trajectory peak small). ``subagents``: the delegated
    subagents' rows kept and counted as search (``SEARCH_WITH_SUBAGENTS``); else left out (the main
    agent's rows only, a delegation call a non-search call)."""
    if basis not in BASES:
        raise ValueError(f"token basis {basis!r} unknown; choose one of {', '.join(BASES)}")
    frame = steps.collect() if isinstance(steps, pl.LazyFrame) else steps
    if not subagents and "depth" in frame.columns and (frame.get_column("depth").max() or 0) > 0:
        frame = frame.filter(pl.col("depth") == 0)  # copies only when there are subagent rows to leave out
    search = SEARCH_WITH_SUBAGENTS if subagents else SEARCH
    n = frame.height
    if n <= chunk_rows:
        return _per_trajectory(frame, basis, extra, search)
    ds, tr = frame.get_column(_KEY[0]), frame.get_column(_KEY[1])
    parts, start = [], 0
    while start < n:
        end = min(start + chunk_rows, n)
        while end < n and ds[end] == ds[end - 1] and tr[end] == tr[end - 1]:  # not inside a trajectory
            end += 1
        parts.append(_per_trajectory(frame.slice(start, end - start), basis, extra, search))
        start = end
    return pl.concat(parts)


def _per_trajectory(
    steps: pl.DataFrame, basis: str = "consumed", extra: tuple[str, ...] = (), search: tuple[str, ...] = SEARCH
) -> pl.DataFrame:
    """One row per trajectory: ``tokens``, ``search_tokens`` (before the first non-search call),
    ``share``, the first non-search call's ``turn``/``category``/``action``, and ``has_non_search``
    (plus the first value of each column in ``extra``, e.g. a grouping key). ``steps`` is the
    analysis's steps frame (rows in trajectory order: turn, then call). ``basis``: ``consumed``
    (prompt + completion of every model call, Relace's "tokens the model consumes") or ``content``
    (each completion and observation token once, the task prompt left out).

    Memory (50k trajectories, 2.3M rows): linear scans over a slim projection; a window over the
    string keys or a group-by over the action text would copy columns of the whole frame."""
    tok = pl.col("call_tokens") if basis == "consumed" else _content_tokens()
    non_search = (pl.col("is_call") & ~pl.col("category").is_in(search)).cast(pl.Int32)
    # trajectory number from runs of equal keys (rows are grouped by trajectory): no hashing or
    # shifted copies of the string columns
    runs = [
        pl.col(k).rle_id() for k in _KEY
    ]  # per key: a new id where the value changes (a struct would be row-encoded)
    tid = pl.any_horizontal([r.ne_missing(r.shift(1)) for r in runs]).cast(pl.UInt32).cum_sum().alias("_tid")
    start = pl.col("_tid").ne_missing(pl.col("_tid").shift(1))
    keep = list(dict.fromkeys([*_KEY, "resolved", "first_edit_turn", "turn", "category", *extra]))
    lf = (
        steps.lazy()
        .with_row_index("_row")
        .select("_row", *keep, tid, non_search.alias("_ns"), tok.alias("_tok"))
        .with_columns(start.alias("_start"), pl.col("_ns").cum_sum().alias("_cs"))
    )
    # non-search calls of this trajectory up to and including the row: the running count minus its
    # value just before the trajectory's first row
    lf = lf.with_columns(
        (
            pl.col("_cs") - pl.when(pl.col("_start")).then(pl.col("_cs") - pl.col("_ns")).otherwise(None).forward_fill()
        ).alias("_seen")
    )
    lf = lf.with_columns(
        (pl.col("_seen") == 0).alias("_before"), ((pl.col("_ns") == 1) & (pl.col("_seen") == 1)).alias("_first")
    )
    agg = lf.group_by("_tid", maintain_order=True).agg(
        *[pl.first(k) for k in keep if k not in ("turn", "category")],
        pl.col("_tok").sum().alias("tokens"),
        pl.col("_tok").filter(pl.col("_before")).sum().alias("search_tokens"),
        pl.col("_first").any().alias("has_non_search"),
    )
    firsts = lf.filter(pl.col("_first")).select(
        "_tid",
        "_row",
        pl.col("turn").alias("first_non_search_turn"),
        pl.col("category").alias("first_non_search_category"),
    )
    t = agg.join(firsts, on="_tid", how="left", maintain_order="left").collect()
    # the first non-search call's text, gathered by row from the steps frame (null where there is none)
    t = t.with_columns(first_non_search_action=steps.get_column("action").gather(t["_row"]))
    return t.drop("_tid", "_row").with_columns(
        pl.when(pl.col("tokens") > 0).then(pl.col("search_tokens") / pl.col("tokens")).otherwise(None).alias("share")
    )


def bootstrap_interval(
    num: np.ndarray, den: np.ndarray | None, n: int, alpha: float, seed: int, chunk: int | None = None
) -> tuple[float, float]:
    """Percentile interval of mean(num) (den None) or sum(num)/sum(den), resampling trajectories;
    resamples are drawn ``chunk`` at a time (default: up to 100, fewer so that a chunk holds at most
    ~2M draws, 16 MB) so memory stays bounded at any number of trajectories."""
    chunk = chunk or max(1, min(100, 2_000_000 // max(num.size, 1)))
    rng = np.random.default_rng(seed)
    stats = []
    for start in range(0, n, chunk):
        idx = rng.integers(0, num.size, size=(min(chunk, n - start), num.size))
        stats.append(num[idx].mean(axis=1) if den is None else num[idx].sum(axis=1) / den[idx].sum(axis=1))
    s = np.concatenate(stats)
    return float(np.quantile(s, alpha / 2)), float(np.quantile(s, 1 - alpha / 2))


def _r(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, 6)


def measures(steps: pl.DataFrame, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Both measures (see the module doc) with percentile bootstrap intervals over trajectories, the
    other aggregation of each, n, and where the search phase ended: the main agent's own work (a
    delegation ends the search phase), and under ``subagents_counted`` the same with each delegated
    subagent's work counted as search (``delegating`` trajectories hold a delegation call)."""
    t, c = per_trajectory(steps), per_trajectory(steps, "content")
    out = _measures(t, c, n_boot, alpha, seed)
    same = not _delegates(steps)  # without any delegation both views are the same tables
    return _with_subagents(
        out, lambda b: per_trajectory(steps, b, subagents=True), None, same, n_boot=n_boot, alpha=alpha, seed=seed
    )


def _delegates(steps) -> bool:
    frame = steps.lazy()
    return "depth" in frame.collect_schema().names() and bool(
        frame.select(((pl.col("depth") > 0) | (pl.col("category") == "delegate")).any()).collect().item()
    )


def _with_subagents(out: dict, table, pick, same: bool = False, **kw) -> dict:
    """``out`` with the subagents-counted measures (``table(basis)`` gives the per-trajectory table;
    ``pick`` filters it; ``same``: no delegation anywhere, so they are ``out``'s own numbers); the seed
    and population are ``out``'s."""
    if same:
        w = out
    else:
        t, c = table("consumed"), table("content")
        if pick is not None:
            t, c = t.filter(pick), c.filter(pick)
        w = _measures(t, c, **kw)
    keep = (
        "n",
        "search_phase_share",
        "initial_search_share",
        "content_basis",
        "without_non_search",
        "first_non_search_category",
        "ends_before_first_edit",
    )
    out["search_categories_left_out"] = list(SEARCH)
    out["subagents_counted"] = {"search_categories": list(SEARCH_WITH_SUBAGENTS), **{k: w.get(k) for k in keep}}
    return out


def _measures(t: pl.DataFrame, content: pl.DataFrame, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """:func:`measures` from the per-trajectory tables of both token bases."""
    t = t.filter(pl.col("share").is_not_null())
    n = t.height
    out: dict = {
        "n": n,
        "tokens": "prompt + completion tokens of each model call (1/k per call)",
        "search_categories": list(SEARCH),
        "population": OURS,
        "seed": RELACE_SEEDS,
    }
    if not n:
        return {**out, "search_phase_share": None, "initial_search_share": None}
    share = t["share"].to_numpy().astype(float)
    num, den = t["search_tokens"].to_numpy().astype(float), t["tokens"].to_numpy().astype(float)
    mean, pooled = float(share.mean()), float(num.sum() / den.sum())
    m_lo, m_hi = bootstrap_interval(share, None, n_boot, alpha, seed)
    p_lo, p_hi = bootstrap_interval(num, den, n_boot, alpha, seed)
    with_ns = t.filter(pl.col("has_non_search"))
    cats = with_ns["first_non_search_category"].value_counts(sort=True)
    out.update(
        {
            "search_phase_share": {
                "value": _r(mean),
                "ci": [_r(m_lo), _r(m_hi)],
                "aggregation": "mean over trajectories",
                "pooled": _r(pooled),
                "median": _r(float(np.median(share))),
                "seed": RELACE_SEEDS["search_phase_share"],
                "seed_population": POPULATIONS["search_phase_share"],
            },
            "initial_search_share": {
                "value": _r(pooled),
                "ci": [_r(p_lo), _r(p_hi)],
                "aggregation": "pooled: sum over trajectories / sum of all tokens",
                "mean": _r(mean),
                "seed": RELACE_SEEDS["initial_search_share"],
                "seed_population": POPULATIONS["initial_search_share"],
            },
            "content_basis": _content(content),
            "alpha": alpha,
            "without_non_search": n - with_ns.height,
            "first_non_search_turn_median": _r(with_ns["first_non_search_turn"].median()) if with_ns.height else None,
            "ends_before_first_edit": int(
                with_ns.filter(
                    pl.col("first_edit_turn").is_not_null()
                    & (pl.col("first_non_search_turn") < pl.col("first_edit_turn"))
                ).height
            ),
            "first_non_search_category": dict(
                zip(cats["first_non_search_category"].to_list(), cats["count"].to_list())
            ),
        }
    )
    return out


def _content(t: pl.DataFrame) -> dict:
    """Both measures with each completion and observation token counted once (a sensitivity check:
    consumed tokens weight late turns, whose prompts hold the whole history, far more), from the
    ``content`` per-trajectory table."""
    t = t.filter(pl.col("share").is_not_null())
    if not t.height:
        return {"search_phase_share": None, "initial_search_share": None}
    return {
        "search_phase_share": _r(t["share"].mean()),
        "initial_search_share": _r(t["search_tokens"].sum() / t["tokens"].sum()),
    }


def measures_by(steps: pl.DataFrame, key: str, **kw) -> dict:
    """``measures`` for each value of ``key`` (e.g. ``dataset`` or ``resolved``), split on the small
    per-trajectory tables (splitting the steps frame would copy it)."""
    extra = () if key in _KEY else (key,)
    t, c = per_trajectory(steps, extra=extra), per_trajectory(steps, "content", extra=extra)
    same = not _delegates(steps)
    ts, cs = (per_trajectory(steps, b, extra, subagents=True) for b in BASES) if not same else (t, c)
    out = {}
    for k in t.get_column(key).unique(maintain_order=True).to_list():
        pick = pl.col(key).is_null() if k is None else pl.col(key) == k
        name = "unknown" if k is None else str(k).lower() if isinstance(k, bool) else str(k)
        out[name] = _with_subagents(
            _measures(t.filter(pick), c.filter(pick), **kw), lambda b: ts if b == "consumed" else cs, pick, same, **kw
        )
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def relace_findings(f: Findings, results: dict[str, dict]) -> Findings:
    """The Relace part of notebook 01's findings, added to ``f`` from ``{name: measures(...)}``: our two
    measures with their intervals and n beside the seed values and populations, then the caveats."""
    f.text("### Relace's two token measures")
    rows = []
    for name, m in results.items():
        sp, ini = m.get("search_phase_share"), m.get("initial_search_share")
        if not sp:
            rows.append([name, m["n"], "n/a", "n/a", "n/a", "n/a", "n/a"])
            continue
        top = ", ".join(f"{c} {v}" for c, v in list(m["first_non_search_category"].items())[:3])
        rows.append(
            [
                name,
                m["n"],
                f"{_pct(sp['value'])} [{_pct(sp['ci'][0])}, {_pct(sp['ci'][1])}]",
                _pct(sp["pooled"]),
                f"{_pct(ini['value'])} [{_pct(ini['ci'][0])}, {_pct(ini['ci'][1])}]",
                m["without_non_search"],
                f"{m['first_non_search_turn_median']}; {top}",
            ]
        )
    f.table(
        [
            "data set",
            "n",
            "search-phase share (mean) [CI]",
            "pooled",
            "initial-search share (pooled) [CI]",
            "no non-search call",
            "first non-search call: turn (median), category",
        ],
        rows,
        intro="Relace's two token measures, computed on our trajectories (intervals: 95% percentile bootstrap "
        "over trajectories), beside the seed's values and populations:",
    )
    f.add(
        f"Relace, **{_pct(RELACE_SEEDS['search_phase_share'])}** of tokens before the first non-search "
        f"call, on average per trace — {POPULATIONS['search_phase_share']}."
    )
    f.add(
        f"Relace, **~{_pct(RELACE_SEEDS['initial_search_share'])}** of tokens in the initial search — "
        f"{POPULATIONS['initial_search_share']}."
    )
    seed = RELACE_SEEDS["initial_search_share"]
    for name, m in results.items():
        ini = m.get("initial_search_share")
        if not ini:
            continue
        lo, hi = ini["ci"]
        where = "below" if hi < seed else "above" if lo > seed else "consistent with"
        c = m.get("content_basis") or {}
        if m.get("ends_before_first_edit") is not None:
            f.add(
                f"{name}: in {m['ends_before_first_edit']} of {m['n']} trajectories the search phase ends "
                "before the first edit of a file the submission changes (the agent first writes or runs "
                "something else, e.g. a reproduction script)."
            )
        f.add(
            f"{name}: the initial search takes {_pct(ini['value'])} of the tokens the model consumed, "
            f"{where} Relace's ~12% on SWE-bench (the population nearest ours); counting each completion "
            f"and observation token once instead, {_pct(c.get('initial_search_share'))} (pooled) and "
            f"{_pct(c.get('search_phase_share'))} (mean per trajectory)."
        )
    f.add("The 56.6% comes from vague real-user prompts, not SWE-bench, and is no target for these runs.")
    return f.caveat(
        "(Relace) the agents and token counts here are not Relace's; consumed tokens weight late "
        "turns (whose prompts hold the whole history) far more than the early search turns; the rubric "
        "decides what counts as search (reading and searching commands), and Relace does not say how it "
        "classified calls, how it averaged, or whether reasoning tokens count; a trajectory that writes a "
        'reproduction script early ends its search phase there, as Relace\'s "bash script for testing" would.'
    )
