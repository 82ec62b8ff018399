"""Search tasks with known answers and their corpora. See README.md in this folder.

``load_tasks(source, split=None, usable_only=False)``: Task records of ``swebench-lite``,
``swebench-verified`` or ``agent-traces`` (from the shipped ``data/tasks/<source>.jsonl.gz``,
built from the raw data when absent), with ``split`` set. ``usable_only=True`` keeps the tasks that
the offline corpus manifest (``data/tasks/offline_manifest.jsonl.gz``) marks as located; call
``fasbench.data.corpus.materialize(task)`` to get the corpus and the relocated gold.
"""

from __future__ import annotations

from fasbench.base.paths import child, data_dir
from fasbench.data import agent_traces, splits, swebench
from fasbench.data.corpus import resolve_root, root_dir
from fasbench.data.splits import SPLITS
from fasbench.records import iter_jsonl, read_tasks

SOURCES = ("swebench-lite", "swebench-verified", "agent-traces")


def build_tasks(source: str) -> list:
    """Build the Task records of ``source`` from the raw data (slow for agent-traces: ~40 s)."""
    if source in swebench.SOURCES:
        tasks = swebench.tasks(source)
    elif source == "agent-traces":
        tasks, _ = agent_traces.build()
    else:
        raise ValueError(f"unknown task source {source!r}; choose one of {', '.join(SOURCES)}")
    return splits.assign(tasks)


def tasks_path(source: str):
    return child(data_dir() / "tasks", source, ".jsonl.gz", "task source")


def offline_manifest() -> dict[str, dict]:
    """``{task id: manifest row}`` of the shipped offline-corpus manifest (empty if absent). The file
    stores each corpus root relative to the corpora cache; rows come back with ``root`` resolved
    on this machine (``<cache>/corpora/<root>``; None for tasks not located)."""
    p = data_dir() / "tasks" / "offline_manifest.jsonl.gz"
    if not p.exists():
        return {}
    base = root_dir()  # once: each call resolves the repository's path (0.5 s over the 1,300 rows)
    return {r["id"]: {**r, "root": resolve_root(r.get("root"), base)} for r in iter_jsonl(p)}


def load_tasks(source: str, split: str | None = None, usable_only: bool = False) -> list:
    """Task records of ``source``; ``split`` in train/dev/test; ``usable_only``: located offline."""
    if source not in SOURCES:
        raise ValueError(f"unknown task source {source!r}; choose one of {', '.join(SOURCES)}")
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    p = tasks_path(source)
    tasks = read_tasks(p) if p.exists() else build_tasks(source)
    if split:
        tasks = [t for t in tasks if t.split == split]
    if usable_only:
        man = offline_manifest()
        if not man:
            raise FileNotFoundError(
                "no offline manifest (data/tasks/offline_manifest.jsonl.gz); "
                "run `fasbench data corpus --all --write-manifest`"
            )
        tasks = [t for t in tasks if man.get(t.id, {}).get("located")]
    return tasks


def swebench_tasks() -> dict:
    """``{id: task}`` of the shipped SWE-bench tasks (Verified first, then Lite): what importers of
    other benchmarks' gold join their records with."""
    out = {}
    for src in ("swebench-verified", "swebench-lite"):
        for t in load_tasks(src):
            out.setdefault(t.id, t)
    return out
