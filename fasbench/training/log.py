"""The run folder of a training run, shared by SFT and RL: the step log written as training goes
(:class:`StepLog`, a ``TrainerCallback``), read back with :func:`read_log`, the checkpoint a run
resumes from (:func:`last_checkpoint`, its step :func:`checkpoint_step`) and the callback that saves a
checkpoint at the last step (:func:`save_at_end`), so ``max_steps`` is a total: a rerun resumes at the
step the run ended at, never from an earlier checkpoint (which would train and log those steps again)."""

from __future__ import annotations

import json
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
    # local import: transformers (with torch) is heavy to import; this module is
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
    # local import: transformers.trainer_utils imports torch, heavy
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(run_dir)) if Path(run_dir).is_dir() else None


def save_at_end():
    """A ``transformers.TrainerCallback`` that asks for a checkpoint at the last step (when
    ``save_steps`` does not divide ``max_steps`` the trainer would otherwise end without one, and a
    rerun would resume from the one before and train those steps again)."""
    # local import: transformers (with torch) is heavy to import, as in step_log
    from transformers import TrainerCallback

    class SaveAtEnd(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.max_steps > 0 and state.global_step >= state.max_steps and args.save_strategy != "no":
                control.should_save = True
            return control

    return SaveAtEnd()


def checkpoint_step(checkpoint: str | Path | None) -> int:
    """The ``global_step`` of a ``checkpoint-N`` folder (its ``trainer_state.json``; N when that is
    missing); 0 for None."""
    if not checkpoint:
        return 0
    f = Path(checkpoint) / "trainer_state.json"
    if f.exists():
        return int(json.loads(f.read_text(encoding="utf-8"))["global_step"])
    return int(Path(checkpoint).name.rsplit("-", 1)[-1])


def resume_line(kind: str, run_dir: str | Path, done_before: int, this_call: int, target: int | None) -> str:
    """One line saying what a training call did: steps run in this call and steps resumed from disk."""
    total = done_before + this_call
    of = f" of max_steps={target}" if target and target > 0 else ""
    if this_call == 0 and done_before:
        return (
            f"{kind}: resumed at step {done_before}{of} from {run_dir}: no step in this call "
            f"(max_steps is a total; raise it to train more), final/ kept"
        )
    if done_before:
        return f"{kind}: {this_call} steps in this call (steps {done_before + 1}-{total}{of}), {done_before} resumed from {run_dir}"
    return f"{kind}: {this_call} steps in this call (steps 1-{total}{of}), none resumed"
