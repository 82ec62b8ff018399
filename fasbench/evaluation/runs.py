"""All evaluation runs in one table, and paired comparisons of several runs on several metrics.

A run is a directory written by :func:`fasbench.evaluation.evaluate.run_eval`: ``summary.parquet`` (one row per
task), ``traces.jsonl``, ``tasks.jsonl`` (the tasks with their gold) and ``run.json`` (policy, tool set,
limits, task source, code version, creation time). Runs are named by their directory (with its parent
when two share a name) and can be given by path or by that name (searched under :func:`run_roots`).

- :func:`runs_table` — one row per run: policy, tool set, task source, n, the main metrics with
  bootstrap intervals, date, code version (``fasbench runs``);
- :func:`compare_runs` — each run against the first on the tasks they share: both means, the paired
  difference (run − reference) with its interval, the two-sided sign-flip p-value and n
  (:func:`fasbench.stats.metrics.paired_test`: exact at small n, valid at every n), for several metrics at
  once (``fasbench compare A B [C …]``);
- :func:`noise_table` — run-to-run noise of repeated runs of one policy (same spec but its ``seed``,
  same tool set, task source and limits: :func:`policy_key`): per group pass^k for every k up to the
  number of runs (τ-bench, Yao et al. 2024, arXiv 2406.12045 §3: pass^k = mean over tasks of
  C(c, k) / C(n, k), c of n runs succeeding) and the flip rate (fasbench's own: mean over tasks of the
  share of pairs of runs that disagree on success, c(n − c) / C(n, 2)); a success is ``metric ≥ threshold``
  (default ``all_gold_at_5 ≥ 1``: every gold file in the top 5);
- :func:`noise_floors` — per metric, the largest |mean paired difference| between two runs of one policy
  on their shared tasks: ``compare_runs`` puts it beside each difference (``noise_floor``), a difference
  within it is what re-running the same policy already shows;
- :func:`format_table` — either frame as aligned plain text for a terminal.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from fasbench.base.errors import printable
from fasbench.base.paths import repo_root
from fasbench.data.tasksets import canonical_name, task_set_label
from fasbench.evaluation.episodes import column_bounds, reward_column
from fasbench.evaluation.evaluate import split_failed
from fasbench.evaluation.rundir import RunMeta, load_summary, read_run
from fasbench.scoring.reward import summary_rewards
from fasbench.stats.findings import ci, ci_of
from fasbench.stats.metrics import EXACT_MAX_N, N_FLIPS, interval_method, mean_ci, p_text, paired_test
from fasbench.stats.tables import text_table

#: The default metrics of the runs table and of ``fasbench compare``; the rewards among them are those the
#: registry marks ``summary`` (``Reward.summary``).
RUN_METRICS = (
    "file_f2",
    "line_f1",
    *(reward_column(n) for n in summary_rewards()),
    "all_gold_at_5",
    "turns",
    "wall_s",
    "prepare_s",  # a retrieval policy's index build/load, outside wall_s: beside it, so a speed claim sees both
    "unseen_cited_share",
    "calls_nothing_new_share",
)
COMPARE_METRICS = (
    "file_f2",
    "line_f1",
    *(reward_column(n) for n in summary_rewards()),
    "turns",
    "unseen_cited_share",
    "calls_nothing_new_share",
)


class RunError(ValueError):
    """A run or metric that does not exist (the message is one line, for the CLI)."""


def run_roots() -> list[Path]:
    """Where runs are looked for by default: ``<repo>/runs`` and ``<cache>/runs``."""
    base = Path(os.environ.get("FASBENCH_CACHE") or repo_root() / ".cache") / "runs"
    return [p for p in (repo_root() / "runs", base) if p.is_dir()]


def find_runs(paths: Sequence[str | Path] | None = None) -> list[Path]:
    """Run directories (holding ``summary.parquet``) at or under each path, sorted, without repeats."""
    found: list[Path] = []
    for p in paths or run_roots():
        p = Path(p)
        if not p.exists():
            raise RunError(f"{p}: no such directory")
        if (p / "summary.parquet").exists():
            found.append(p.resolve())
        else:
            found += sorted(q.parent.resolve() for q in p.rglob("summary.parquet"))
    return list(dict.fromkeys(found))


def resolve_run(run: str | Path, roots: Sequence[Path] | None = None) -> Path:
    """A run directory from a path, or from a run name (its directory name, or ``parent/name``)."""
    p = Path(run)
    if (p / "summary.parquet").exists():
        return p.resolve()
    if p.exists():
        raise RunError(f"{run}: not a run directory (no summary.parquet; run `fasbench eval --out {run}`)")
    cands = [d for d in find_runs(roots or run_roots()) if d.as_posix().endswith("/" + str(run).strip("/"))]
    if len(cands) == 1:
        return cands[0]
    if len(cands) > 1:
        raise RunError(f"run name {run!r} is ambiguous: {', '.join(str(c) for c in cands)}")
    where = ", ".join(str(r) for r in (roots or run_roots()))
    raise RunError(
        f"{run}: no such run (neither a directory nor a run name under "
        + (where or f"{default_runs_text()}: neither exists yet")
        + ")"
    )


def default_runs_text() -> str:
    """Where runs are looked for by default, in words (both folders, whether they exist or not)."""
    return "runs/ and $FASBENCH_CACHE/runs (default .cache/runs)"


def run_names(dirs: Sequence[Path]) -> list[str]:
    """Short unique names: the directory name, with as many parents as needed to tell runs apart."""
    depth = 1
    while True:
        names = ["/".join(d.parts[-depth:]) for d in dirs]
        if len(set(names)) == len(names) or depth >= max((len(d.parts) for d in dirs), default=1):
            return names
        depth += 1


def check_metrics(df: pl.DataFrame, metrics: Sequence[str], run: str) -> None:
    """A one-line error for a metric the summary does not have, with the closest names."""
    for m in metrics:
        if m not in df.columns:
            numeric = [c for c, t in df.schema.items() if t.is_numeric()]
            close = difflib.get_close_matches(m, numeric, n=3, cutoff=0.5)
            hint = (
                f"; did you mean {', '.join(close)}?"
                if close
                else f"; e.g. {', '.join(m for m in RUN_METRICS if m in numeric)} or another column of summary.parquet"
            )
            raise RunError(f"unknown metric {m!r} (not a column of {run}/summary.parquet){hint}")


def runs_table(
    paths: Sequence[str | Path] | None = None,
    metrics: Sequence[str] = RUN_METRICS,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per run: ``run``, ``policy``, ``toolset``, ``task_source``, ``n``, ``interval`` (how the
    intervals of its ``n`` tasks were made: :func:`fasbench.stats.metrics.interval_method`), ``failed`` (episodes
    that failed for infrastructure, e.g. a model server down: left out of ``n`` and the means), ``resumed``,
    ``query_source`` (what the explorer was given, with counts: run.json ``query_sources``), each metric
    with ``<m>_lo``/``<m>_hi`` (at ``level`` over tasks, :func:`fasbench.stats.metrics.mean_ci`: percentile
    bootstrap from 10 tasks on, Student t below, none for one task), ``created``, ``code`` and ``path``.
    Metrics a run lacks are null."""
    dirs = find_runs(paths)
    rows = []
    for name, d in zip(run_names(dirs), dirs):
        try:
            meta, (df, failed) = read_run(d), split_failed(load_summary(d))
        except (ValueError, OSError) as e:  # one unreadable run is one warning line; the table goes on
            warnings.warn(f"run {printable(name, 80)} skipped: {printable(str(e), 300)}", stacklevel=2)
            continue
        r = {
            "run": name,
            "policy": meta.policy or _first(df, "policy"),
            "toolset": meta.toolset or _first(df, "toolset"),
            "task_source": task_set_label(
                meta.task_source or ("tasks.jsonl" if (d / "tasks.jsonl").exists() else None), meta.corpus
            ),
            "n": df.height,
            "interval": interval_method(df.height),
            "failed": failed,
            "resumed": meta.resume_note(),
            "query_source": meta.query_source_label(),
            "limits": meta.limits_label(),
            "reward": meta.reward,
        }
        for m in metrics:
            vals = df[m].drop_nulls().cast(pl.Float64).to_list() if m in df.columns else []
            bounds = column_bounds(m, meta.reward if m == "reward" else None)
            mean, lo, hi = mean_ci(vals, n=n_boot, alpha=1 - level, seed=seed, bounds=bounds) if vals else (None,) * 3
            r[m], r[f"{m}_lo"], r[f"{m}_hi"] = mean, lo, hi
        r["created"] = meta.created
        r["code"] = meta.describe()
        r["path"] = str(d)
        rows.append(r)
    schema = {
        "run": pl.Utf8,
        "policy": pl.Utf8,
        "toolset": pl.Utf8,
        "task_source": pl.Utf8,
        "n": pl.Int64,
        "interval": pl.Utf8,
        "failed": pl.Int64,
        "resumed": pl.Utf8,
        "query_source": pl.Utf8,
        "limits": pl.Utf8,
        "reward": pl.Utf8,
        **{f"{m}{s}": pl.Float64 for m in metrics for s in ("", "_lo", "_hi")},
        "created": pl.Utf8,
        "code": pl.Utf8,
        "path": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def _first(df: pl.DataFrame, col: str):
    return df[col][0] if col in df.columns and df.height else None


def paired_diff(a: Sequence[float], b: Sequence[float], level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict:
    """Mean of ``b − a`` over paired tasks with :func:`fasbench.stats.metrics.paired_test`: the two-sided
    sign-flip p-value (exact up to 20 tasks that differ), its interval at ``level`` (exact sign-flip up to
    20 tasks, nan when n is too small for one; percentile bootstrap above), ``n`` and the test's name."""
    return paired_test(b, a, level=level, n_boot=n_boot, seed=seed)


def compare_runs(
    runs: Sequence[str | Path],
    metrics: Sequence[str] | None = None,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    repeats: Sequence[str | Path] | None = None,
) -> pl.DataFrame:
    """Every run after the first against the first (the reference), on the tasks both have: one row per
    (run, metric) with ``n`` shared tasks, ``reference``/``run`` means, ``diff`` = run − reference,
    ``lo``/``hi`` (``level`` interval; nan when n is too small for one), ``p`` (two-sided sign-flip),
    ``n_nonzero``, ``p_min`` (the smallest p these n could give), ``test`` and ``ci`` (the methods),
    ``level``, and ``noise_floor`` / ``noise_pairs`` (:func:`noise_floors` of the reference's and the run's
    policies, over the runs in ``repeats``: default the folders holding the compared runs; null when
    neither policy has repeated runs there), ``reference_failed``/``run_failed`` (failed episodes, left
    out: :func:`fasbench.evaluation.evaluate.split_failed`). ``metrics`` None: those of :data:`COMPARE_METRICS` every
    run has (a run written before a column existed lacks it). Unknown runs or given metrics raise
    :class:`RunError` with a one-line message."""
    if len(runs) < 2:
        raise RunError("compare needs at least two runs")
    dirs = [resolve_run(r) for r in runs]
    names = run_names(dirs)
    split = [split_failed(load_summary(d)) for d in dirs]  # failed episodes are no score: left out
    frames = [df for df, _ in split]
    defaulted = metrics is None
    if metrics is None:
        metrics = [m for m in COMPARE_METRICS if all(m in df.columns for df in frames)]
    if not metrics:
        raise RunError("compare needs at least one metric")
    for name, df in zip(names, frames):
        check_metrics(df, metrics, name)
    if "reward" in metrics:  # `reward` is each run's headline reward: comparable only when it is the same one
        heads = {name: read_run(d).reward for name, d in zip(names, dirs)}  # run.json (migrated: rundir)
        if len(set(heads.values())) > 1:
            raise RunError(
                "the runs' `reward` columns are different rewards ("
                + ", ".join(f"{n}: {h}" for n, h in heads.items())
                + "); compare one reward's column, e.g. "
                "--metric reward_relace_f2"
            )
    ref, ref_df = names[0], frames[0]
    pool = find_runs(repeats) if repeats is not None else find_runs(sorted({d.parent for d in dirs}))
    floors = noise_floors(list(dict.fromkeys([*dirs, *pool])), metrics)
    keys = [run_key(d) for d in dirs]
    rows = []
    for name, df, key in zip(names[1:], frames[1:], keys[1:]):
        if ref_df.join(df, on="task_id", how="semi").height == 0:
            continue  # no shared task at all: left out below, in one line
        for m in metrics:
            j = ref_df.select("task_id", m).join(df.select("task_id", m), on="task_id", suffix="_b").drop_nulls()
            if j.height == 0 and defaulted:  # e.g. a retrieval run has no calls, so no share of them
                continue
            if j.height == 0:
                bad = [f"{w} {k}" for w, k in ((ref, split[0][1]), (name, split[names.index(name)][1])) if k]
                raise RunError(
                    f"{name} and {ref} share no task with a value of {m}"
                    + (f" (failed episodes, left out: {', '.join(bad)})" if bad else "")
                )
            a, b = j[m].cast(pl.Float64).to_list(), j[f"{m}_b"].cast(pl.Float64).to_list()
            res = paired_diff(a, b, level, n_boot, seed)
            fl = [floors[k][m] for k in dict.fromkeys([keys[0], key]) if k in floors and m in floors[k]]
            rows.append(
                {
                    "reference": ref,
                    "run": name,
                    "metric": m,
                    "reference_mean": float(np.mean(a)),
                    "run_mean": float(np.mean(b)),
                    **res,
                    "reference_failed": split[0][1],
                    "run_failed": split[names.index(name)][1],
                    "noise_floor": max((f for f, _ in fl), default=None),
                    "noise_pairs": sum(n for _, n in fl) if fl else 0,
                }
            )
    failed = {n: k for n, (_, k) in zip(names, split) if k}
    alone = [n for n in names[1:] if not any(r["run"] == n for r in rows)]
    why = [f"{n} {failed[n]}" for n in [ref, *alone] if n in failed]
    why_txt = f" (failed episodes, left out: {', '.join(why)})" if why else ""
    if alone:
        msg = f"{', '.join(alone)} share{'s' if len(alone) == 1 else ''} no task with the reference {ref}{why_txt}"
        if len(alone) == len(names) - 1:
            raise RunError(msg)
        warnings.warn(msg + ": left out", stacklevel=2)  # the others' comparison goes on, said in one line
    return pl.DataFrame(rows, schema_overrides={"noise_floor": pl.Float64})


def failed_note(table: pl.DataFrame) -> str | None:
    """One line when a compared run has failed episodes (left out of its tasks), else None."""
    bad: dict[str, int] = {}
    for r in table.iter_rows(named=True):
        for who, k in ((r["reference"], r.get("reference_failed")), (r["run"], r.get("run_failed"))):
            if k:
                bad[who] = k
    return (
        (
            f"note: failed episodes (e.g. a model server down) are left out of n and the means: "
            f"{', '.join(f'{w} {k}' for w, k in bad.items())}; rerun `fasbench eval` with the same options "
            "to retry them"
        )
        if bad
        else None
    )


# ---------------------------------------------------------------- run-to-run noise

_SEED = re.compile(r"(?:^|(?<=[:,]))seed=[^,]*,?")


def policy_key(meta: RunMeta) -> tuple:
    """What makes two runs runs of one policy: the policy spec without its ``seed=`` parameter, the tool
    set, the task source, the turn and call limits and the report contract (``run.json``)."""
    spec = _SEED.sub("", str(meta.policy or "")).rstrip(",:")
    source = (
        canonical_name(meta.task_source) if meta.task_source else meta.task_source
    )  # old `:test` = `:fasbench-test`
    return (spec, meta.toolset, source, meta.max_turns, meta.max_calls, meta.report_contract)


def run_key(d: Path) -> tuple | None:
    """:func:`policy_key` of a run directory (its policy read from the summary when ``run.json`` lacks it);
    None when no policy is recorded at all (such a run is nobody's repeat)."""
    meta = read_run(d)
    if not meta.policy:
        meta.policy = _first(load_summary(d), "policy")
    return policy_key(meta) if meta.policy else None


def repeat_groups(dirs: Sequence[Path]) -> dict[tuple, list[Path]]:
    """Runs grouped by :func:`policy_key`, only groups of two runs or more."""
    groups: dict[tuple, list[Path]] = {}
    for d in dirs:
        key = run_key(Path(d))
        if key is not None:
            groups.setdefault(key, []).append(Path(d))
    return {k: v for k, v in groups.items() if len(v) > 1}


def _values(d: Path, metric: str) -> dict[str, float]:
    df = split_failed(load_summary(d))[0]
    if metric not in df.columns:
        return {}
    return {t: float(v) for t, v in df.select("task_id", metric).drop_nulls().iter_rows()}


def noise_floors(dirs: Sequence[Path], metrics: Sequence[str]) -> dict[tuple, dict[str, tuple[float, int]]]:
    """Per policy with repeated runs among ``dirs`` and per metric: (the largest |mean of run B − run A|
    over every pair of its runs, on the tasks both have; the number of pairs)."""
    out: dict[tuple, dict[str, tuple[float, int]]] = {}
    for key, group in repeat_groups(dirs).items():
        for m in metrics:
            vals = [_values(d, m) for d in group]
            diffs = []
            for a, b in itertools.combinations(vals, 2):
                shared = sorted(set(a) & set(b))
                if shared:
                    diffs.append(abs(float(np.mean([b[t] - a[t] for t in shared]))))
            if diffs:
                out.setdefault(key, {})[m] = (max(diffs), len(diffs))
    return out


def pass_hat_k(successes: Sequence[int], n: int, k: int) -> float:
    """τ-bench's pass^k (arXiv 2406.12045): the mean over tasks of C(c, k) / C(n, k), c of n runs
    succeeding: the chance that k runs drawn from the n all succeed."""
    return float(np.mean([math.comb(c, k) / math.comb(n, k) for c in successes])) if successes else math.nan


def flip_rate(successes: Sequence[int], n: int) -> float:
    """fasbench's flip rate: the mean over tasks of the share of pairs of runs that disagree on success,
    c(n − c) / C(n, 2) (0: every task always or never solved; 0.5·n/(n−1) at most)."""
    return float(np.mean([c * (n - c) / math.comb(n, 2) for c in successes])) if successes and n > 1 else math.nan


def noise_table(
    paths: Sequence[str | Path] | None = None, metric: str = "all_gold_at_5", threshold: float = 1.0
) -> pl.DataFrame:
    """One row per policy with repeated runs (:func:`repeat_groups`) among the runs at or under ``paths``:
    ``policy``, ``toolset``, ``task_source``, ``runs`` (n), ``tasks`` (those every run has a value of
    ``metric`` for), ``success`` (the rule), ``pass^1`` … ``pass^n`` and ``flip_rate``; empty when no
    policy was run twice."""
    dirs = find_runs(paths)
    rows = []
    for key, group in repeat_groups(dirs).items():
        vals = [_values(d, metric) for d in group]
        shared = sorted(set.intersection(*(set(v) for v in vals)))
        n = len(group)
        c = [sum(v[t] >= threshold for v in vals) for t in shared]
        rows.append(
            {
                "policy": key[0],
                "toolset": key[1],
                "task_source": task_set_label(key[2]),
                "runs": n,
                "tasks": len(shared),
                "success": f"{metric} >= {threshold:g}",
                **{f"pass^{k}": pass_hat_k(c, n, k) for k in range(1, n + 1)},
                "flip_rate": flip_rate(c, n),
            }
        )
    return (
        pl.DataFrame(rows, infer_schema_length=None)
        if rows
        else pl.DataFrame({"policy": []}, schema={"policy": pl.Utf8})
    )


def noise_text(table: pl.DataFrame, digits: int = 3) -> str:
    """:func:`noise_table` for a terminal: a header line and the table, or one line saying no policy was
    run twice."""
    if not table.height:
        return (
            "run-to-run noise: no policy was run more than once here (same spec but its seed, tool set, task "
            "set and limits); run a stochastic policy again with another seed=… for pass^k and the flip rate"
        )
    head = (
        f"run-to-run noise of repeated runs (success: {table['success'][0]}; pass^k: τ-bench, arXiv 2406.12045, "
        "the chance that k runs all succeed; flip rate: share of pairs of runs that disagree, per task)"
    )
    shown = table.with_columns(
        [
            pl.col(c).map_elements(lambda v: _num(v, digits), return_dtype=pl.Utf8)
            for c in table.columns
            if c.startswith("pass^") or c == "flip_rate"
        ]
    )
    return head + "\n" + format_table(shown.select([pl.col(c).cast(pl.Utf8).fill_null("–") for c in shown.columns]))


def _num(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def _p(p: float) -> str:
    return p_text(p)


#: Widest a name or spec (run, policy, task source) is shown in the runs table; ``--json`` keeps it whole.
SPEC_WIDTH = 44


def shorten(text: str, width: int = SPEC_WIDTH) -> str:
    """``text`` cut in its middle to ``width`` characters (``…`` where cut): a policy spec such as
    ``openai:base_url=...,model=...`` keeps its family and its end (the model) readable."""
    text = str(text)
    if len(text) <= width:
        return text
    tail = width // 3
    return text[: width - tail - 1] + "…" + text[-tail:]


def display_runs(
    table: pl.DataFrame, metrics: Sequence[str] = RUN_METRICS, digits: int = 3, width: int | None = SPEC_WIDTH
) -> pl.DataFrame:
    """The runs table as strings: ``mean [lo, hi]`` per metric, date without seconds, long names and
    specs shortened in their middle to ``width`` (:func:`shorten`; None: whole, as a paper table needs them)."""
    rows = []
    for r in table.iter_rows(named=True):
        row = {
            k: (shorten(r[k], width) if width and k in ("run", "policy", "task_source") and r[k] is not None else r[k])
            for k in (
                "run",
                "policy",
                "toolset",
                "limits",
                "task_source",
                "n",
                "failed",
                "interval",
                "resumed",
                "query_source",
            )
            if k in r
        }
        for m in metrics:
            if m in r:
                row[m] = ci_of(r, m, digits)
        row["created"] = (r["created"] or "–")[:16].replace("T", " ")
        row["code"] = r["code"] or "–"
        rows.append({k: ("–" if v is None else str(v)) for k, v in row.items()})
    return pl.DataFrame(rows) if rows else pl.DataFrame({"run": []})


#: The runs table's columns a paper table keeps (the rest, e.g. ``created``, ``code``, are bookkeeping).
PAPER_DROP = ("created", "code", "resumed", "query_source", "interval")


def paper_runs(table: pl.DataFrame, metrics: Sequence[str] = RUN_METRICS) -> pl.DataFrame:
    """:func:`display_runs` for a paper (``fasbench runs --latex``): names, specs and task sets whole, without
    the bookkeeping columns (:data:`PAPER_DROP`; the interval method goes in the caption)."""
    df = display_runs(table, metrics, width=None)
    return df.drop([c for c in PAPER_DROP if c in df.columns])


def display_compare(table: pl.DataFrame, digits: int = 3) -> pl.DataFrame:
    """The comparison as strings: means, ``diff [lo, hi]`` signed (the diff alone: n too small for an interval
    at this level), then the sign-flip p with its n beside it, the smallest p that n allows, and the
    test (``exact`` or ``MC``, Monte Carlo)."""
    return pl.DataFrame(
        [
            {
                "run": r["run"],
                "vs": r["reference"],
                "metric": r["metric"],
                "reference": _num(r["reference_mean"], digits),
                "run mean": _num(r["run_mean"], digits),
                "diff (run − ref)": ci(r["diff"], r["lo"], r["hi"], digits, signed=True),
                "p": _p(r["p"]),
                "n": str(r["n"]),
                "min p": _p(r.get("p_min")),
                "test": "exact" if str(r.get("test", "")).startswith("exact") else "MC",
                "noise floor": _num(r.get("noise_floor"), digits),
            }
            for r in table.iter_rows(named=True)
        ]
    )


def compare_note(table: pl.DataFrame, level: float = 0.95) -> str:
    """One line saying how :func:`display_compare`'s p and intervals were computed (for the CLI and
    the notebooks)."""
    note = (
        f"p: two-sided sign-flip test of the mean paired difference (exact: all 2^m flips of the m tasks "
        f"that differ, up to {EXACT_MAX_N}; MC: {N_FLIPS:,} random flips, p = (b+1)/(B+1)); min p: the smallest "
        f"p these tasks allow; interval: {level:.0%}, exact sign-flip up to {EXACT_MAX_N} tasks, percentile "
        "bootstrap above"
    )
    if table.height and any(math.isnan(v) for v in table["lo"].to_list() if v is not None):
        note += f"; [–]: no {level:.0%} interval exists for n ≤ {_no_ci_max_n(level)}"
    return note + "\n" + noise_note(table)


def noise_note(table: pl.DataFrame) -> str:
    """One line on the noise floor column: what it is, or that no repeated runs exist."""
    pairs = int(table["noise_pairs"].max() or 0) if "noise_pairs" in table.columns and table.height else 0
    if not pairs:
        return (
            "noise floor: – (no repeated runs of these policies in the runs' folders: the same spec but its "
            "seed, tool set, task set and limits); run a stochastic policy again with another seed=… to "
            "measure run-to-run noise"
        )
    return (
        "noise floor: the largest |mean difference| between two runs of one policy (same spec but its seed) "
        f"on their shared tasks, over up to {pairs} pair(s) of repeated runs; a diff within it is what "
        "re-running the same policy already shows"
    )


def _no_ci_max_n(level: float) -> int:
    """The largest n for which no exact sign-flip interval reaches ``level`` (2^n < 2/(1 − level))."""
    return math.ceil(math.log2(2 / (1 - level))) - 1


def format_table(df: pl.DataFrame) -> str:
    """Aligned plain text of a frame of strings (no truncation, for terminals and logs):
    :func:`fasbench.stats.tables.text_table` (each cell :func:`fasbench.base.errors.printable`: a run's policy or
    name from run.json never reaches the terminal raw)."""
    return text_table(df.columns, df.iter_rows())
