"""Corpora for many tasks at once, skipping the tasks whose corpus cannot be built, with reasons.

:func:`with_corpora` is the one helper every workflow uses (evaluation, SFT data and evaluation, RL,
best-of-N, end-to-end): tasks that already have a corpus (``root`` an existing folder) pass as
they are; a SWE-bench task that the shipped offline manifest marks as not located is skipped with
the manifest's reason without downloading anything; every other task is materialised
(:func:`fasbench.data.corpus.try_materialize`) and skipped with its reason when that fails. It stops
once ``limit`` tasks are usable (the first N usable tasks, in order), shows a progress bar, and
keeps the skipped tasks in a JSONL file (``task_id``, ``reason``, ``detail``) that a rerun resumes:
a task is recorded once however often it fails, and dropped from the file when it later succeeds.
Corpora themselves are cached (``fasbench.data.corpus``), so a rerun does not fetch them again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fasbench.data import offline_manifest
from fasbench.data.corpus import CorpusError, pick_for, try_materialize
from fasbench.records import Task, append_jsonl, iter_jsonl, repair_jsonl


@dataclass
class Corpora:
    """What :func:`with_corpora` gives: the usable ``tasks`` (``root`` set, gold placed on it, in
    input order) and the ``skipped`` ones as ``{"task_id", "reason", "detail"}`` rows."""

    tasks: list[Task] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)

    def reasons(self) -> dict[str, int]:
        """Skipped tasks per reason."""
        out: dict[str, int] = {}
        for r in self.skipped:
            out[r["reason"]] = out.get(r["reason"], 0) + 1
        return out


def _manifest_skip(task: Task, mode: str | None, manifest: dict) -> dict | None:
    """The shipped manifest's reason when it says this task's offline corpus cannot be placed."""
    offline = mode == "offline" or (mode is None and pick_for(task) is not None)
    row = manifest.get(task.id) if offline else None
    if row is None or row.get("located") or task.gold.explore is not None:
        return None  # imported read regions are relocated anew: the manifest does not cover them
    return {"reason": row.get("reason") or "not-located", "detail": f"shipped manifest: {row.get('detail', '')}"[:300]}


def _read_skipped(path: Path | None) -> dict[str, dict]:
    if path is None or not path.exists():
        return {}
    repair_jsonl(path)
    return {r["task_id"]: r for r in iter_jsonl(path) if "task_id" in r}


def _rewrite(path: Path, rows: list[dict]) -> None:
    """Replace ``path`` by ``rows`` in one step (a crash leaves the old file or the new one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    append_jsonl(tmp, rows)
    os.replace(tmp, path)


def with_corpora(
    tasks: Sequence[Task],
    mode: str | None = None,
    limit: int | None = None,
    skipped: str | Path | None = None,
    progress: bool = True,
    desc: str = "corpora",
    strict: bool = False,
    use_manifest: bool = True,
) -> Corpora:
    """The tasks with their corpora (see the module doc). ``mode``: offline | online | None
    (``FASBENCH_CORPUS_MODE``, else each task's default). ``limit``: stop after this many usable
    tasks. ``skipped``: the resumable JSONL of skipped tasks. ``strict``: raise ``CorpusError`` at the
    first task that cannot be used (for an explicit list of ids, where a silent skip would mislead).
    ``use_manifest``: consult the shipped offline manifest before downloading."""
    mode = mode or os.environ.get("FASBENCH_CORPUS_MODE") or None
    if mode not in (None, "offline", "online"):
        raise ValueError(f"unknown corpus mode {mode!r}; choose offline or online")
    path = Path(skipped) if skipped is not None else None
    before = _read_skipped(path)
    manifest = offline_manifest() if use_manifest and mode != "online" else {}
    out = Corpora()
    succeeded: set[str] = set()
    changed: set[str] = set()
    total = min(limit, len(tasks)) if limit is not None else len(tasks)
    # local import: tqdm.auto is heavy to import (asyncio, importlib.metadata), paid by every `fasbench`
    # command through the data CLI's imports
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit="task", disable=not progress or not tasks)
    for t in tasks:
        if limit is not None and len(out.tasks) >= limit:
            break
        got, why = None, None
        if t.root and Path(t.root).is_dir():
            got = t
        else:
            why = _manifest_skip(t, mode, manifest)
            if why is None:
                got, why = try_materialize(t, mode)
        if got is not None:
            out.tasks.append(got)
            succeeded.add(t.id)
            bar.update(1)
        else:
            if strict:
                bar.close()
                raise CorpusError(why["reason"], f"task {t.id}: {why['detail']}")
            row = {"task_id": t.id, **why}
            out.skipped.append(row)
            if path is not None and t.id not in before:
                append_jsonl(path, [row])  # written as it happens: an interrupted batch keeps it
            elif path is not None and before[t.id].get("reason") != why["reason"]:
                changed.add(t.id)
            before[t.id] = row
            if limit is None:
                bar.update(1)
        bar.set_postfix(skipped=len(out.skipped), refresh=False)
    bar.close()
    if path is not None and (changed or succeeded & set(before)):
        # one row per task still skipped, with its latest reason
        _rewrite(path, [r for i, r in before.items() if i not in succeeded])
    return out
