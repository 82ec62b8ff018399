"""The training tasks of a GRPO run: the config's task fields mapped onto the task-set loader and the
corpus helper every workflow shares (:func:`fasbench.data.tasksets.load_task_set`,
:func:`fasbench.data.corpora.with_corpora`).

The fields keep their meaning: ``tasks`` names the task set (``SOURCE[:SPLIT]``, a Task JSONL file,
``git:PATH``); ``split`` picks its split (a split written in the name wins; tasks mined with
``git:`` are all kept, whatever their assigned split); ``n_tasks`` keeps the first N tasks whose
corpus materialises (the others are skipped, with their reason in ``OUT/skipped_tasks.jsonl``);
``task_ids`` picks exactly these tasks, in that order, from every split, and overrides ``split`` and
``n_tasks`` (an unknown id or a corpus that cannot be built is then an error, not a skip);
``corpus_mode`` is offline | online | None (each task's default)."""

from __future__ import annotations

from fasbench.data.corpora import with_corpora
from fasbench.data.tasksets import load_task_set, parse_task_set
from fasbench.records import Task
from fasbench.rl.config import SKIPPED_FILE, RLConfig


def load_rl_tasks(cfg: RLConfig, progress: bool = True) -> list[Task]:
    """The training tasks of ``cfg``, each with a materialised corpus (``root`` set)."""
    ts = parse_task_set(cfg.tasks)
    split = None if cfg.task_ids or ts.kind == "git" or ts.split else cfg.split
    tasks = load_task_set(ts, split=split, ids=cfg.task_ids)
    got = with_corpora(
        tasks,
        cfg.corpus_mode,
        limit=None if cfg.task_ids else cfg.n_tasks,
        skipped=cfg.out / SKIPPED_FILE,
        progress=progress,
        desc="rl corpora",
        strict=bool(cfg.task_ids),
    )
    if not got.tasks:
        why = "; ".join(f"{n} {r}" for r, n in got.reasons().items()) or "the task set is empty"
        raise ValueError(f"rl config: no usable task from {cfg.tasks!r} (split {split!r}, ids {cfg.task_ids}): {why}")
    return got.tasks
