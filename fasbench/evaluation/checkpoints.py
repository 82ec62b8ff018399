"""One checkpoint evaluator: a model checkpoint run as a policy on tasks through the harness, scored,
its traces written as it goes (a rerun resumes), the episode table returned.

SFT's before/after comparison (``fasbench.sft.before_after``), RL's (``fasbench.rl``) and ``fasbench eval``
with an ``hf:`` policy all go through here: a checkpoint evaluation IS an evaluation run
(:func:`fasbench.evaluation.evaluate.run_eval` with the policy ``hf:model=CHECKPOINT,…``), so its directory holds
``run.json``, ``traces.jsonl``, ``tasks.jsonl`` and ``summary.parquet`` like any run, and ``fasbench
runs`` / ``fasbench compare BEFORE AFTER`` read it (a paired bootstrap of after − before).
The rows are :mod:`fasbench.evaluation.episodes` rows: ``policy`` is the label (``before``/``after``), ``reward``
the chosen reward, ``wellformed``/``report_wellformed`` the SFT measures, ``reward_NAME__PART`` the
reward's parts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits
from fasbench.records import Task

_SPEC_CHARS = (",", "=")  # the policy spec's separators (fasbench.policies.parse_spec)


def checkpoint_policy(
    model: str | Path, label: str | None = None, max_new_tokens: int = 256, temperature: float = 0.0, seed: int = 0
) -> str:
    """The policy spec of a checkpoint: ``hf:model=PATH,max_new_tokens=N,temperature=T,seed=S,name=LABEL``
    (``model`` is anything ``fasbench.models.load_model`` takes: a name, a checkpoint folder, an adapter)."""
    for what, v in (("model", str(model)), ("label", label or "")):
        if any(c in v for c in _SPEC_CHARS):
            raise ValueError(
                f"checkpoint {what} {v!r} contains ',' or '=', which a policy spec cannot hold; "
                "rename it or link it from a plain path"
            )
    spec = f"hf:model={model},max_new_tokens={int(max_new_tokens)},temperature={float(temperature)},seed={int(seed)}"
    return spec + (f",name={label}" if label else "")


def evaluate_checkpoint(
    model: str | Path,
    tasks: Sequence[Task],
    out: str | Path | None = None,
    toolset: str = "relace",
    limits: Limits | None = None,
    reward: str = "relace",
    judge: str | None = None,
    label: str | None = None,
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    seed: int = 0,
    progress: bool = True,
    task_source: str | None = None,
) -> pl.DataFrame:
    """Episodes of the checkpoint ``model`` on ``tasks`` (greedy unless ``temperature`` > 0) with
    ``toolset`` and ``limits``, scored under every reward (``reward`` is the headline column;
    ``judge``: FastContext's LLM judge spec). ``out``: the run directory (traces are appended one
    episode at a time and a rerun resumes; None = a temporary one, nothing kept). Tasks without a
    corpus get one; those that cannot are skipped with a reason in ``out/skipped.jsonl``.
    Returns the episode table (one row per task, ``policy`` = ``label``, default the model)."""
    spec = checkpoint_policy(model, label or Path(str(model)).name, max_new_tokens, temperature, seed)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="fasbench-ckpt-") as tmp:
            return run_eval(
                tasks,
                spec,
                toolset,
                Path(tmp) / "run",
                limits,
                backend="serial",
                progress=progress,
                judge=judge,
                task_source=task_source,
                reward=reward,
            )
    return run_eval(
        tasks,
        spec,
        toolset,
        out,
        limits,
        backend="serial",
        progress=progress,
        judge=judge,
        task_source=task_source,
        reward=reward,
    )
