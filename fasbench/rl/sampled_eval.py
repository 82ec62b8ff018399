"""Evaluation with the rollout engine (issue 35 item 5): k samples a task at the training temperature
AND greedy, on held-out tasks, as episode-table rows, and the per-task means that
:func:`fasbench.rl.mini.before_after_table` pairs.

A greedy before/after comparison moves only once the probability of a second call in a turn passes one
half; sampling at the training temperature sees the change in that probability. Each rollout is one
row of the episode table (:func:`fasbench.evaluation.episodes.episode_row`: ``turns``, ``calls_per_turn``,
``file_f2``, ``file_recall``, ``reward`` and every reward's parts) with the columns this adds in front:
``mode`` (``sampled`` | ``greedy``), ``sample``, ``first_calls`` (calls of the first turn),
``first_parallel`` (1.0 when the first turn made two calls or more), ``new_tokens``, ``capped``,
``rollout_s`` (the rollout's latency within its batch). :func:`task_means` averages a mode's rows per
task (the pairing unit: tasks, not samples, are independent); :data:`EVAL_MEASURES` is
:data:`fasbench.rl.mini.MEASURES` with ``first_parallel`` added.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fasbench.evaluation.episodes import episode_row
from fasbench.harness import Limits
from fasbench.records import Task
from fasbench.records.jsonl import append_jsonl
from fasbench.rl.mini import MEASURES
from fasbench.rl.rollout import rollout_group

#: The measures compared before vs after: mini's, and the probability of >= 2 calls in the first turn.
EVAL_MEASURES = {**MEASURES, "first_parallel": "P(>= 2 calls in the first turn)"}
MODES = ("sampled", "greedy")


def evaluate_sampled(
    model,
    tokenizer,
    tasks: Sequence[Task],
    *,
    k: int = 4,
    temperature: float = 1.0,
    greedy: bool = True,
    toolset: str = "relace",
    limits: Limits | None = None,
    reward: str = "relace",
    max_new_tokens: int = 160,
    seed: int = 0,
    label: str = "model",
    max_batch: int = 16,
    out: str | Path | None = None,
    progress: bool = False,
) -> pl.DataFrame:
    """Episode-table rows of ``k`` rollouts a task sampled at ``temperature`` and (``greedy``) one greedy
    rollout a task, generated ``max_batch`` rollouts at a time by the engine. ``out``: a JSONL file the
    traces are appended to (each with ``meta["rollout"]["mode"]``). Rows in task order: sampled, then greedy."""
    if k < 1:
        raise ValueError(f"evaluation: k must be >= 1, got {k}")
    limits = limits or Limits()
    by_id = {t.id: t for t in tasks}
    rows: list[dict] = []
    plan = [("sampled", k, temperature)] + ([("greedy", 1, 0.0)] if greedy else [])
    bar = None
    if progress:
        # local import: tqdm.auto is heavy to import; only a progress display needs it
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks) * sum(n for _, n, _ in plan), desc=f"evaluate {label}")
    for mode, n, temp in plan:
        per = max(1, max_batch // n)
        for i in range(0, len(tasks), per):
            chunk = list(tasks[i : i + per])
            rs = rollout_group(
                model,
                tokenizer,
                chunk,
                k=n,
                toolset=toolset,
                limits=limits,
                reward=reward,
                max_new_tokens=max_new_tokens,
                temperature=temp,
                seed=seed,
                label=label,
            )
            for r in rs:
                r.trace.meta["rollout"]["mode"] = mode
                first = len(r.trace.turns[0].calls) if r.trace.turns else 0
                rows.append(
                    {
                        "mode": mode,
                        "sample": r.sample,
                        "first_calls": first,
                        "first_parallel": float(first >= 2),
                        "new_tokens": r.new_tokens,
                        "capped": r.capped,
                        "rollout_s": r.wall_s,
                        **episode_row(r.trace, by_id[r.task_id], reward=reward, localization=False),
                    }
                )
            if out is not None:
                append_jsonl(out, [r.trace.to_dict() for r in rs])
            if bar is not None:
                bar.update(len(rs))
    if bar is not None:
        bar.close()
    return pl.DataFrame(rows, infer_schema_length=None)


def task_means(
    rows: pl.DataFrame, mode: str = "sampled", measures: Sequence[str] = tuple(EVAL_MEASURES)
) -> pl.DataFrame:
    """One row per task: the mean of each measure over that task's rollouts of ``mode`` (and ``n`` rollouts),
    the table :func:`fasbench.rl.mini.before_after_table` pairs by ``task_id``."""
    if mode not in MODES:
        raise ValueError(f"evaluation: mode {mode!r} unknown; choose one of {', '.join(MODES)}")
    sub = rows.filter(pl.col("mode") == mode)
    return sub.group_by("task_id", maintain_order=True).agg(
        pl.len().alias("n"), *[pl.col(m).cast(pl.Float64).mean() for m in measures]
    )
