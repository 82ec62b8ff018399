"""The run folder of a training run, shared by SFT and RL: the step log written as training goes
(:class:`StepLog`, a ``TrainerCallback``), read back with :func:`read_log`, and the checkpoint a run
resumes from (:func:`last_checkpoint`)."""

from __future__ import annotations

import time
from pathlib import Path

from fasbench.records import append_jsonl, iter_jsonl

LOG_FILE = "log.jsonl"  # SFT's step log; RL's is rl_log.jsonl (fasbench.rl.train.LOG_FILE)


def _kind(logs: dict) -> str:
    if "train_runtime" in logs:
        return "summary"
    if any(k.startswith("eval_") for k in logs):
        return "eval"
    return "step"


def step_log(path: str | Path):
    """A ``transformers.TrainerCallback`` appending every log record (loss, learning rate, reward
    parts, ...) to the JSONL ``path`` as it is logged, with ``step``, ``time`` and ``kind``
    (``step``, ``eval`` or ``summary``; main process only)."""
    # local import: transformers (with torch) costs ~2.7-6 s (python -X importtime); this module is
    # read by the CLIs' `log` commands, which must start fast.
    from transformers import TrainerCallback

    path = Path(path)

    class StepLog(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if not logs or not state.is_world_process_zero:
                return
            append_jsonl(path, [{"step": state.global_step, "time": time.time(), **logs, "kind": _kind(logs)}])

    return StepLog()


def read_log(run_dir: str | Path, name: str = LOG_FILE) -> list[dict]:
    """The step log ``name`` of a run folder, one record per (kind, step): a step logged twice, e.g.
    before and after a resume, keeps its last record. In step order (a step's ``eval`` record after
    its ``step`` record), the ``summary`` records (one per training call) last; [] when there is none."""
    p = Path(run_dir) / name
    if not p.exists():
        return []
    by_key: dict[tuple[int, str], dict] = {}
    summaries = []
    for r in iter_jsonl(p):
        kind = r.get("kind") or _kind(r)  # logs written before the kind field
        if kind == "summary":
            summaries.append(r)
        else:
            by_key[(int(r["step"]), 0 if kind == "step" else 1)] = r
    return [by_key[k] for k in sorted(by_key)] + summaries


def last_checkpoint(run_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` folder of ``run_dir`` (TRL/transformers' own rule), or None."""
    # local import: transformers.trainer_utils imports torch, ~4.6 s measured with python -X importtime
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(run_dir)) if Path(run_dir).is_dir() else None
