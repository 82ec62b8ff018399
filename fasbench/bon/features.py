"""Features of a pool state (the rollouts seen so far) and the table of states the stopping
classifiers learn from.

A *state* is (task, order, n): the first ``n`` rollouts in launch order (a cascade) or in finish
order (parallel launch). Its label ``success`` says whether the selector's answer on that state
reaches the success bar; ``success_next`` is the same at the next checkpoint (what one more
batch would give), which the Resolve-Later classifier learns.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from fasbench.bon.pool import Pool, Rollout
from fasbench.bon.select import Selection, Selector, jaccard
from fasbench.bon.verify import file_score

FEATURES = [
    "n",  # pool size
    "files_jaccard",  # mean pairwise Jaccard of the reported file sets
    "searched_jaccard",  # mean pairwise Jaccard of the searched paths
    "margin",  # the selector's decision margin
    "top_share",  # share of rollouts citing the most cited file
    "n_selected",  # files in the selected answer
    "turns_mean",
    "turns_std",
    "calls_mean",
    "tool_error_rate",  # failed calls / calls, over the pool
    "no_report_rate",  # share of rollouts that ended without a report
    "confidence_max",  # self-confidence (NaN when the policy gives none)
    "confidence_mean",
    "confidence_sel",  # mean self-confidence of the rollouts that cite the most voted file
    "verify_mean",  # the report verifier (fasbench.bon.verify): mean check score over rollouts
    "verify_pass",  # share of rollouts whose report passes the verifier
    "verify_sel",  # mean check score of the selected files (over the rollouts citing each)
    "indep_sel",  # share of the selected files that the independent search ranks among its best
    "indep_recall_mean",  # mean share of the independent search's best files a report cites
]


def _verify_features(rollouts: Sequence[Rollout], sel: Selection) -> dict[str, float]:
    ver = [r.verify for r in rollouts if r.verify is not None]
    if not ver:
        return {
            "verify_mean": math.nan,
            "verify_pass": math.nan,
            "verify_sel": math.nan,
            "indep_sel": math.nan,
            "indep_recall_mean": math.nan,
        }
    per_file: dict[str, list[float]] = {}
    indep: dict[str, int] = {}
    for v in ver:
        for p, checks in (v.get("files") or {}).items():
            per_file.setdefault(p, []).append(file_score(checks))
            indep[p] = int(checks[4] or 0)
    chosen = [p for p in sel.files if p in per_file]
    return {
        "verify_mean": float(np.mean([v["score"] for v in ver])),
        "verify_pass": float(np.mean([v["pass"] for v in ver])),
        "verify_sel": float(np.mean([np.mean(per_file[p]) for p in chosen])) if chosen else 0.0,
        "indep_sel": float(np.mean([indep[p] for p in chosen])) if chosen else 0.0,
        "indep_recall_mean": float(np.mean([v.get("indep_recall", 0.0) for v in ver])),
    }


def mean_pairwise_jaccard(sets: Sequence[frozenset]) -> float:
    """Mean Jaccard over all pairs; 1.0 for fewer than two sets (nothing disagrees yet)."""
    if len(sets) < 2:
        return 1.0
    pairs = list(itertools.combinations(sets, 2))
    return sum(jaccard(a, b) for a, b in pairs) / len(pairs)


def pool_features(rollouts: Sequence[Rollout], sel: Selection) -> dict[str, float]:
    if not rollouts:
        raise ValueError("pool_features: empty pool state")
    turns = np.array([r.turns for r in rollouts], float)
    calls = sum(r.n_calls for r in rollouts)
    conf = [r.confidence for r in rollouts if r.confidence is not None]
    top = next(iter(sel.votes), None)
    conf_top = [r.confidence for r in rollouts if r.confidence is not None and top in (r.files or {})]
    return {
        "n": float(len(rollouts)),
        "files_jaccard": mean_pairwise_jaccard([r.file_set for r in rollouts]),
        "searched_jaccard": mean_pairwise_jaccard([frozenset(r.searched) for r in rollouts]),
        "margin": float(sel.margin),
        "top_share": max(sel.votes.values()) if sel.votes else 0.0,
        "n_selected": float(len(sel.files)),
        "turns_mean": float(turns.mean()),
        "turns_std": float(turns.std()),
        "calls_mean": calls / len(rollouts),
        "tool_error_rate": sum(r.tool_errors for r in rollouts) / calls if calls else 0.0,
        "no_report_rate": sum(r.files is None for r in rollouts) / len(rollouts),
        "confidence_max": max(conf) if conf else math.nan,
        "confidence_mean": float(np.mean(conf)) if conf else math.nan,
        "confidence_sel": float(np.mean(conf_top)) if conf_top else (0.0 if conf else math.nan),
        **_verify_features(rollouts, sel),
    }


def select_state(pool: Pool, selector: Selector, n: int, order: str) -> tuple[Selection, float]:
    """The selection on the state (n, order) and its quality, memoised on the pool."""
    key = (id(selector), order, n)
    if key not in pool._memo:
        sel = selector(pool.prefix(n, order))
        pool._memo[key] = (sel, pool.quality_of(sel.files))
    return pool._memo[key]


def checkpoints(n_max: int, schedule: Sequence[int] | None) -> list[int]:
    """The pool sizes at which a strategy decides: the schedule's sizes (checked against ``n_max``),
    or every size 1..``n_max`` when ``schedule`` is None (parallel: a decision at every finish)."""
    if schedule is None:
        return list(range(1, n_max + 1))
    s = list(schedule)
    if not s or s != sorted(set(s)) or s[0] < 1:
        raise ValueError(f"schedule must be increasing positive pool sizes, got {s}")
    if s[-1] > n_max:
        raise ValueError(f"schedule {s} needs {s[-1]} rollouts per task; the pools have {n_max}")
    return s


def states(
    pools: Sequence[Pool],
    selector: Selector,
    order: str = "launch",
    schedule: Sequence[int] | None = None,
    success_at: float = 0.5,
) -> list[dict]:
    """One row per (task, checkpoint): features, quality, success and success at the next
    checkpoint (the same at the last one)."""
    rows = []
    for pool in pools:
        sizes = checkpoints(pool.n, schedule)
        qs = [select_state(pool, selector, n, order)[1] for n in sizes]
        for j, n in enumerate(sizes):
            sel, q = select_state(pool, selector, n, order)
            qn = qs[min(j + 1, len(sizes) - 1)]
            rows.append(
                {
                    "task_id": pool.task_id,
                    "split": pool.split,
                    "order": order,
                    "stage": j,
                    "n_stages": len(sizes),
                    **pool_features(pool.prefix(n, order), sel),
                    "quality": q,
                    "success": int(q >= success_at),
                    "quality_next": qn,
                    "success_next": int(qn >= success_at),
                }
            )
    return rows
