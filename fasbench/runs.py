"""All evaluation runs in one table, and paired comparisons of several runs on several metrics.

A run is a directory written by :func:`fasbench.evaluate.run_eval`: ``summary.parquet`` (one row per
task), ``traces.jsonl``, ``tasks.jsonl`` (the tasks with their gold) and ``run.json`` (policy, tool set,
limits, task source, code version, creation time). Runs are named by their directory (with its parent
when two share a name) and can be given by path or by that name (searched under :func:`run_roots`).

- :func:`runs_table` — one row per run: policy, tool set, task source, n, the main metrics with
  bootstrap intervals, date, code version (``fasbench runs``);
- :func:`compare_runs` — each run against the first on the tasks they share: both means, the paired
  difference (run − reference) with its interval, the two-sided sign-flip p-value and n
  (:func:`fasbench.metrics.paired_test`: exact at small n, valid at every n), for several metrics at
  once (``fasbench compare A B [C …]``);
- :func:`format_table` — either frame as aligned plain text for a terminal.
"""

from __future__ import annotations

import difflib
import math
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import polars as pl

from fasbench.evaluate import load_summary, query_source_label, read_run_meta, resume_note
from fasbench.metrics import EXACT_MAX_N, N_FLIPS, bootstrap_ci, p_text, paired_test
from fasbench.paths import repo_root
from fasbench.tasksets import task_set_label

RUN_METRICS = ("file_f2", "line_f1", "reward_relace_f2", "acc_at_5", "turns", "wall_s")
COMPARE_METRICS = ("file_f2", "line_f1", "reward_relace_f2", "turns")


class RunError(ValueError):
    """A run or metric that does not exist (the message is one line, for the CLI)."""


def run_roots() -> list[Path]:
    """Where runs are looked for by default: ``<repo>/runs`` and ``<cache>/runs``."""
    base = Path(os.environ.get("FASBENCH_CACHE") or repo_root() / ".cache") / "runs"
    return [p for p in (repo_root() / "runs", base) if p.is_dir()]


def find_runs(paths: Sequence[str | Path] | None = None) -> list[Path]:
    """Run directories (holding ``summary.parquet``) at or under each path, sorted, without repeats."""
    found: list[Path] = []
    for p in (paths or run_roots()):
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
    where = ", ".join(str(r) for r in (roots or run_roots())) or "no run folder yet"
    raise RunError(f"{run}: no such run (neither a directory nor a run name under {where})")


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
            hint = f"; did you mean {', '.join(close)}?" if close else f"; e.g. {', '.join(m for m in RUN_METRICS if m in numeric)} or another column of summary.parquet"
            raise RunError(f"unknown metric {m!r} (not a column of {run}/summary.parquet){hint}")


def runs_table(paths: Sequence[str | Path] | None = None, metrics: Sequence[str] = RUN_METRICS,
               level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """One row per run: ``run``, ``policy``, ``toolset``, ``task_source``, ``n``, ``resumed``, ``query_source``
    (what the explorer was given, with counts: run.json ``query_sources``), each metric with
    ``<m>_lo``/``<m>_hi`` (percentile bootstrap at ``level`` over tasks), ``created``, ``code`` and
    ``path``. Metrics a run lacks are null."""
    dirs = find_runs(paths)
    rows = []
    for name, d in zip(run_names(dirs), dirs):
        meta, df = read_run_meta(d), load_summary(d)
        r = {"run": name, "policy": meta.get("policy") or _first(df, "policy"),
             "toolset": meta.get("toolset") or _first(df, "toolset"),
             "task_source": task_set_label(meta.get("task_source") or ("tasks.jsonl" if (d / "tasks.jsonl").exists()
                                                                        else None), meta.get("corpus")),
             "n": df.height, "resumed": resume_note(d), "query_source": query_source_label(meta)}
        for m in metrics:
            vals = df[m].drop_nulls().cast(pl.Float64).to_list() if m in df.columns else []
            mean, lo, hi = bootstrap_ci(vals, n=n_boot, alpha=1 - level, seed=seed) if vals else (None,) * 3
            r[m], r[f"{m}_lo"], r[f"{m}_hi"] = mean, lo, hi
        r["created"] = meta.get("created")
        r["code"] = (meta.get("code_version") or {}).get("describe")
        r["path"] = str(d)
        rows.append(r)
    schema = {"run": pl.Utf8, "policy": pl.Utf8, "toolset": pl.Utf8, "task_source": pl.Utf8, "n": pl.Int64,
              "resumed": pl.Utf8, "query_source": pl.Utf8,
              **{f"{m}{s}": pl.Float64 for m in metrics for s in ("", "_lo", "_hi")},
              "created": pl.Utf8, "code": pl.Utf8, "path": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def _first(df: pl.DataFrame, col: str):
    return df[col][0] if col in df.columns and df.height else None


def paired_diff(a: Sequence[float], b: Sequence[float], level: float = 0.95, n_boot: int = 2000,
                seed: int = 0) -> dict:
    """Mean of ``b − a`` over paired tasks with :func:`fasbench.metrics.paired_test`: the two-sided
    sign-flip p-value (exact up to 20 tasks that differ), its interval at ``level`` (exact sign-flip up to
    20 tasks, nan when n is too small for one; percentile bootstrap above), ``n`` and the test's name."""
    return paired_test(b, a, level=level, n_boot=n_boot, seed=seed)


def compare_runs(runs: Sequence[str | Path], metrics: Sequence[str] = COMPARE_METRICS, level: float = 0.95,
                 n_boot: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Every run after the first against the first (the reference), on the tasks both have: one row per
    (run, metric) with ``n`` shared tasks, ``reference``/``run`` means, ``diff`` = run − reference,
    ``lo``/``hi`` (``level`` interval; nan when n is too small for one), ``p`` (two-sided sign-flip),
    ``n_nonzero``, ``p_min`` (the smallest p these n could give), ``test`` and ``ci`` (the methods) and
    ``level``. Unknown runs or metrics raise
    :class:`RunError` with a one-line message."""
    if len(runs) < 2:
        raise RunError("compare needs at least two runs")
    if not metrics:
        raise RunError("compare needs at least one metric")
    dirs = [resolve_run(r) for r in runs]
    names = run_names(dirs)
    frames = [load_summary(d) for d in dirs]
    for name, df in zip(names, frames):
        check_metrics(df, metrics, name)
    ref, ref_df = names[0], frames[0]
    rows = []
    for name, df in zip(names[1:], frames[1:]):
        for m in metrics:
            j = ref_df.select("task_id", m).join(df.select("task_id", m), on="task_id", suffix="_b").drop_nulls()
            if j.height == 0:
                raise RunError(f"{name} and {ref} share no task with a value of {m}")
            a, b = j[m].cast(pl.Float64).to_list(), j[f"{m}_b"].cast(pl.Float64).to_list()
            res = paired_diff(a, b, level, n_boot, seed)
            rows.append({"reference": ref, "run": name, "metric": m, "reference_mean": float(np.mean(a)),
                         "run_mean": float(np.mean(b)), **res})
    return pl.DataFrame(rows)


def _num(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def _ci(v, lo, hi, digits: int = 3, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return f"{f.format(v)} [–]"
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"


def _p(p: float) -> str:
    return p_text(p)


def display_runs(table: pl.DataFrame, metrics: Sequence[str] = RUN_METRICS, digits: int = 3) -> pl.DataFrame:
    """The runs table as strings: ``mean [lo, hi]`` per metric, date without seconds."""
    rows = []
    for r in table.iter_rows(named=True):
        row = {k: r[k] for k in ("run", "policy", "toolset", "task_source", "n", "resumed", "query_source") if k in r}
        for m in metrics:
            if m in r:
                row[m] = _ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"], digits)
        row["created"] = (r["created"] or "–")[:16].replace("T", " ")
        row["code"] = r["code"] or "–"
        rows.append({k: ("–" if v is None else str(v)) for k, v in row.items()})
    return pl.DataFrame(rows) if rows else pl.DataFrame({"run": []})


def display_compare(table: pl.DataFrame, digits: int = 3) -> pl.DataFrame:
    """The comparison as strings: means, ``diff [lo, hi]`` signed (``[–]``: n too small for an interval
    at this level), then the sign-flip p with its n beside it, the smallest p that n allows, and the
    test (``exact`` or ``MC``, Monte Carlo)."""
    return pl.DataFrame([{"run": r["run"], "vs": r["reference"], "metric": r["metric"],
                          "reference": _num(r["reference_mean"], digits), "run mean": _num(r["run_mean"], digits),
                          "diff (run − ref)": _ci(r["diff"], r["lo"], r["hi"], digits, signed=True), "p": _p(r["p"]),
                          "n": str(r["n"]), "min p": _p(r.get("p_min")),
                          "test": "exact" if str(r.get("test", "")).startswith("exact") else "MC"}
                         for r in table.iter_rows(named=True)])


def compare_note(table: pl.DataFrame, level: float = 0.95) -> str:
    """One line saying how :func:`display_compare`'s p and intervals were computed (for the CLI and
    the notebooks)."""
    note = (f"p: two-sided sign-flip test of the mean paired difference (exact: all 2^m flips of the m tasks "
            f"that differ, up to {EXACT_MAX_N}; MC: {N_FLIPS:,} random flips, p = (b+1)/(B+1)); min p: the smallest "
            f"p these tasks allow; interval: {level:.0%}, exact sign-flip up to {EXACT_MAX_N} tasks, percentile "
            "bootstrap above")
    if table.height and any(math.isnan(v) for v in table["lo"].to_list() if v is not None):
        note += f"; [–]: no {level:.0%} interval exists for n ≤ {_no_ci_max_n(level)}"
    return note


def _no_ci_max_n(level: float) -> int:
    """The largest n for which no exact sign-flip interval reaches ``level`` (2^n < 2/(1 − level))."""
    return math.ceil(math.log2(2 / (1 - level))) - 1


def format_table(df: pl.DataFrame) -> str:
    """Aligned plain text of a frame of strings (no truncation, for terminals and logs)."""
    cols = df.columns
    cells = [[str(c) for c in cols]] + [[str(v) for v in row] for row in df.iter_rows()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
