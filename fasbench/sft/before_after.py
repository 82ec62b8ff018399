"""A model before vs after SFT, through the harness on dev tasks: share of episodes whose tool
calls are all well-formed, share with a parsable report, calls per turn, turns, reward.

The episodes are run and tabulated by the one checkpoint evaluator (:mod:`fasbench.evaluation.checkpoints`):
each evaluation is a run directory (``fasbench runs`` / ``fasbench compare`` read it), its rows are
:mod:`fasbench.evaluation.episodes` rows (``policy`` = the label, ``reported``, ``wellformed``,
``report_wellformed``, ``reward``, …)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from fasbench.data.corpora import with_corpora
from fasbench.data.tasksets import load_task_set
from fasbench.evaluation.checkpoints import evaluate_checkpoint
from fasbench.records import Task
from fasbench.sft.data import limits
from fasbench.sft.train import example_tokens

#: The per-episode measures :func:`summary` averages (columns of the episode table).
SUMMARY_KEYS = ("wellformed", "any_wellformed", "reported", "report_wellformed", "calls_per_turn", "turns", "reward")


def dev_tasks(profile, n: int | None = None) -> list[Task]:
    """``n`` dev tasks of the profile's eval task set (``eval.source``, a task-set name of
    ``fasbench.data.tasksets``) whose corpus can be materialised (never test)."""
    n = n if n is not None else profile.eval.n_tasks
    return with_corpora(load_task_set(profile.eval.source, split="dev"), limit=n, desc="dev corpora").tasks


def evaluate(model: str, tasks: list[Task], profile, label: str, out: str | Path | None = None) -> list[dict]:
    """Run ``model`` (a name or checkpoint for ``load_model``) on ``tasks`` with the profile's tool
    set, limits, generation settings and reward (``fasbench.evaluation.checkpoints.evaluate_checkpoint``);
    ``out`` is the run directory (resumes; None = not kept). Returns one episode row per task."""
    ev = profile.eval
    df = evaluate_checkpoint(
        model,
        tasks,
        out,
        toolset=profile.build.toolset,
        limits=limits(profile.build, max_turns=ev.max_turns),
        reward=ev.reward,
        label=label,
        max_new_tokens=ev.max_new_tokens,
        temperature=ev.temperature,
    )
    return df.to_dicts()


def summary(rows: list[dict]) -> dict:
    """Means of the per-episode measures (:data:`SUMMARY_KEYS`) and the number of episodes."""
    if not rows:
        return {}
    n = len(rows)
    return {"episodes": n, **{k: sum(float(r[k] or 0) for r in rows) / n for k in SUMMARY_KEYS}}


def dataset_frame(dataset, tokenizer):
    """One row per example (split, source, turns, calls, calls per turn, tokens), a polars frame."""
    rows = []
    for split in dataset:
        for ex in dataset[split]:
            rows.append(
                {
                    "split": split,
                    "source": ex["source"],
                    "turns": ex["n_turns"],
                    "calls": ex["n_calls"],
                    "calls_per_turn": ex["n_calls"] / max(1, ex["n_turns"]),
                    "tokens": example_tokens(ex, tokenizer),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "split": pl.Utf8,
            "source": pl.Utf8,
            "turns": pl.Int64,
            "calls": pl.Int64,
            "calls_per_turn": pl.Float64,
            "tokens": pl.Int64,
        },
    )


def dataset_stats(frame):
    """Per split and source: examples, mean turns, calls per turn, mean and max tokens."""
    return (
        frame.group_by("split", "source")
        .agg(
            pl.len().alias("examples"),
            pl.col("turns").mean().round(2).alias("turns"),
            pl.col("calls_per_turn").mean().round(2).alias("calls_per_turn"),
            pl.col("tokens").mean().round(0).alias("tokens_mean"),
            pl.col("tokens").max().alias("tokens_max"),
        )
        .sort("split", "source")
    )
