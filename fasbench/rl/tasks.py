"""The training tasks of a GRPO run, each with its corpus materialised (``Task.root`` set).

Kept apart so that it can be swapped for the task-set naming and corpus helper shared with SFT and
evaluation (issue #16) without touching the trainer."""

from __future__ import annotations

from pathlib import Path

from fasbench.data import load_tasks
from fasbench.data.corpus import CorpusError, materialize
from fasbench.data.gitmine import mine
from fasbench.records import Task, read_tasks
from fasbench.rl.config import RLConfig
from fasbench.training.config import expand


def load_rl_tasks(cfg: RLConfig) -> list[Task]:
    """The training tasks of ``cfg``, each with a materialised corpus (``root`` set)."""
    src = cfg.tasks
    if src.startswith("git:"):
        repo = Path(expand(src[4:]))
        tasks, _ = mine(repo)
        tasks = _materialize(tasks, cfg)  # a git worktree at each task's parent commit
    else:
        p = Path(expand(src))
        if src.endswith((".jsonl", ".jsonl.gz")) or p.exists():
            if not p.exists():
                raise FileNotFoundError(f"rl config tasks: {p} does not exist")
            tasks = read_tasks(p)
            if cfg.split and not cfg.task_ids:
                tasks = [t for t in tasks if t.split in (None, cfg.split)]
            tasks = _materialize(tasks, cfg)
        else:
            tasks = load_tasks(src, None if cfg.task_ids else cfg.split)
            tasks = _materialize(tasks, cfg)
    if not tasks:
        raise ValueError(f"rl config: no usable task from {src!r} (split {cfg.split!r}, ids {cfg.task_ids})")
    return tasks


def _materialize(tasks: list[Task], cfg: RLConfig) -> list[Task]:
    if cfg.task_ids:
        want = list(cfg.task_ids)
        by_id = {t.id: t for t in tasks}
        missing = [i for i in want if i not in by_id]
        if missing:
            raise ValueError(f"rl config task_ids not found in {cfg.tasks!r}: {missing}")
        tasks = [by_id[i] for i in want]
    out = []
    for t in tasks:
        if cfg.n_tasks is not None and not cfg.task_ids and len(out) >= cfg.n_tasks:
            break
        if t.root and Path(t.root).is_dir():
            out.append(t)
            continue
        try:
            out.append(materialize(t, mode=cfg.corpus_mode))
        except CorpusError:
            if cfg.task_ids:
                raise
    return out

