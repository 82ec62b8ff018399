"""The counterfactual study end to end (notebook 10): a search run on the trajectories' own tasks,
the handoffs, the per-trajectory frame, and totals with intervals by group (bootstrap; Student t below 10)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl

from fasbench.data import load_tasks
from fasbench.data.corpora import with_corpora
from fasbench.data.corpus import pick_for, root_dir
from fasbench.e2e.counterfactual import RULES, Handoff, counterfactual_frame, make_handoff, pair_key
from fasbench.e2e.pays import arm_columns
from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits
from fasbench.records import Task, iter_jsonl, read_traces
from fasbench.stats.metrics import mean_ci
from fasbench.studies.handoff import FORMATS, token_counter
from fasbench.trajectories.analysis import parse_paths, steps_frame


def search_tasks(datasets: Sequence[str] | None = None, limit: int | None = None, download: bool = False) -> list[Task]:
    """The agent-trace tasks (one per shipped trajectory, ``fasbench.data.agent_traces``) whose corpus the
    offline manifest marks as located; ``datasets`` keeps those of the given trajectory folders;
    ``limit`` the first N of each; without ``download`` only tasks whose corpus is already in the cache
    (``fasbench.data.corpus``), so a smoke run does not fetch from PyPI."""
    sdist = root_dir() / "sdist"
    have = {p.name.lower() for p in sdist.iterdir()} if sdist.exists() else set()
    tasks = load_tasks("agent-traces", usable_only=True)
    out, seen = [], {}
    for t in tasks:
        ds = pair_key(t)[0]
        if datasets is not None and ds not in datasets:
            continue
        pk = pick_for(t)
        if not download and (pk is None or f"{pk[0]}-{pk[1]}".lower() not in have):
            continue
        seen[ds] = seen.get(ds, 0) + 1
        if limit is None or seen[ds] <= limit:
            out.append(t)
    return out


def run_search(
    tasks: Sequence[Task],
    policy: str,
    toolset: str,
    out: str | Path,
    max_turns: int = 6,
    progress: bool = True,
    report_contract: str = "free",
):
    """``run_eval`` of ``policy`` on ``tasks`` (resumable) under ``report_contract`` (``free`` | ``ids``:
    ``fasbench.tools.contract``); returns (traces, materialised tasks)."""
    out = Path(out)
    limits = Limits(max_turns=max_turns, report_contract=report_contract)
    run_eval(tasks, policy, toolset, out, limits=limits, progress=progress)
    want = {t.id for t in tasks}
    traces = [tr for tr in read_traces(out / "traces.jsonl") if tr.task_id in want]  # the file may hold more
    done = {tr.task_id for tr in traces}
    rooted = with_corpora([t for t in tasks if t.id in done], progress=progress).tasks
    return traces, rooted


def handoffs(traces, tasks: Sequence[Task], tokenizer=None) -> dict[tuple[str, str], Handoff]:
    count = token_counter(tokenizer)
    by_id = {t.id: t for t in tasks}
    return {
        pair_key(by_id[tr.task_id]): make_handoff(tr, by_id[tr.task_id], count) for tr in traces if tr.task_id in by_id
    }


def save_handoffs(hand: dict[tuple[str, str], Handoff], path: str | Path) -> Path:
    """Write handoffs as gzipped JSONL (one row per (data set, instance id)), so the counterfactual can
    run where the search run's corpora are not at hand (the shipped ``data/e2e/`` file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for (ds, iid), h in sorted(hand.items()):
            f.write(json.dumps({"dataset": ds, "instance_id": iid, **asdict(h)}, sort_keys=True) + "\n")
    return path


def load_handoffs(path: str | Path) -> dict[tuple[str, str], Handoff]:
    """Handoffs written by :func:`save_handoffs`."""
    out = {}
    for r in iter_jsonl(path):
        key = (r.pop("dataset"), r.pop("instance_id"))
        out[key] = Handoff(**r)
    if not out:
        raise ValueError(f"{path}: no handoff in the file")
    return out


def frame(
    paths: Sequence[str | Path], hand: dict, progress: bool = True, ids: dict | None = None
) -> tuple[pl.DataFrame, dict]:
    """The per-trajectory counterfactual frame for the trajectories under ``paths`` and the parse report;
    with the hand-off arms' columns (``pays.arm_columns``). ``hand``: the free-form search run's handoffs
    (the ``citations`` and ``code`` arms); ``ids``: the handoffs of a search run under the ids report
    contract on the same tasks (the ``ids`` arm), matched to ``hand``'s by search task id."""
    trajs, report = parse_paths(paths, progress=progress)
    steps = steps_frame(trajs)
    by_task = {h.task_id: h for h in (ids or {}).values()}

    def extra(turns, turn_ids, first_edit, looks_by_call, weight, handoff):
        other = by_task.get(handoff.task_id) if handoff is not None else None
        return arm_columns(turns, turn_ids, first_edit, looks_by_call, weight, handoff, ids_handoff=other)

    return counterfactual_frame(trajs, steps, hand, progress=progress, extra=extra), report.to_dict()


# ---------------------------------------------------------------- totals with intervals


def ratio_ci(
    num: Sequence[float], den: Sequence[float], n: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float, float]:
    """Σnum/Σden over trajectories and its percentile bootstrap interval (resampling trajectories)."""
    x, y = np.asarray(num, float), np.asarray(den, float)
    if x.size == 0 or y.sum() == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n, x.size))
    r = x[idx].sum(axis=1) / y[idx].sum(axis=1)
    return float(x.sum() / y.sum()), float(np.quantile(r, alpha / 2)), float(np.quantile(r, 1 - alpha / 2))


def totals(df: pl.DataFrame, by: Sequence[str] = ("dataset",), n_boot: int = 2000) -> pl.DataFrame:
    """One row per (group, rule, rendering) over trajectories with a search run: n, the pooled net saving
    (Σnet/Σtokens) and the mean per-trajectory net share with 95% intervals (metrics.mean_ci), replaced turns and
    calls, coverage; plus the gross saving (no handoff) of each rule."""
    rows = []
    d = df.filter(pl.col("has_search"))
    if d.height == 0:
        return pl.DataFrame()
    for key, g in d.group_by(list(by), maintain_order=True):
        key = dict(zip(by, key))
        tot = g["total_tokens"].to_list()
        cov = {
            c: mean_ci(g[c].drop_nulls().to_list(), n_boot)
            for c in ("file_coverage", "read_file_coverage", "line_coverage")
        }
        for rule in RULES:
            gross = ratio_ci(g[f"{rule}_gross"].to_list(), tot, n_boot)
            turns = mean_ci(g[f"{rule}_replaced_turns"].to_list(), n_boot)
            for fmt in FORMATS:
                pooled = ratio_ci(g[f"{rule}_net_{fmt}"].to_list(), tot, n_boot)
                mean = mean_ci(g[f"{rule}_net_share_{fmt}"].to_list(), n_boot)
                rows.append(
                    {
                        **key,
                        "rule": rule,
                        "format": fmt,
                        "n": g.height,
                        "net_share": pooled[0],
                        "net_share_lo": pooled[1],
                        "net_share_hi": pooled[2],
                        "mean_net_share": mean[0],
                        "mean_net_share_lo": mean[1],
                        "mean_net_share_hi": mean[2],
                        "gross_share": gross[0],
                        "gross_share_lo": gross[1],
                        "gross_share_hi": gross[2],
                        "replaced_turns": turns[0],
                        "replaced_turns_lo": turns[1],
                        "replaced_turns_hi": turns[2],
                        "explore_turns_before": float(g["explore_turns_before"].mean()),
                        "handoff_tokens": float(g[f"handoff_tokens_{fmt}"].mean()),
                        **{f"{c}": v[0] for c, v in cov.items()},
                        **{f"{c}_lo": v[1] for c, v in cov.items()},
                        **{f"{c}_hi": v[2] for c, v in cov.items()},
                    }
                )
    return pl.DataFrame(rows)


def upper_bound(df: pl.DataFrame, by: Sequence[str] = ("dataset",), n_boot: int = 2000) -> pl.DataFrame:
    """The ``all`` rule's gross saving over every trajectory with a first edit (search run or not), and the
    replaced calls' own tokens alone (``calls_share``: Relace's "initial search" share, no context effect)."""
    rows = []
    for key, g in df.group_by(list(by), maintain_order=True):
        r = ratio_ci(g["all_gross"].to_list(), g["total_tokens"].to_list(), n_boot)
        c = ratio_ci(g["all_saved_calls"].to_list(), g["total_tokens"].to_list(), n_boot)
        t = mean_ci(g["all_replaced_turns"].to_list(), n_boot)
        rows.append(
            {
                **dict(zip(by, key)),
                "n": g.height,
                "gross_share": r[0],
                "gross_share_lo": r[1],
                "gross_share_hi": r[2],
                "calls_share": c[0],
                "calls_share_lo": c[1],
                "calls_share_hi": c[2],
                "replaced_turns": t[0],
                "replaced_turns_lo": t[1],
                "replaced_turns_hi": t[2],
            }
        )
    return pl.DataFrame(rows)
