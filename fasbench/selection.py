"""Choosing the tasks of a run: by id (``--ids`` / ``--ids-file``), then only the tasks usable on the
chosen corpus kind, with every excluded task and its reason known before the run starts.

Corpus kinds: ``offline`` (the PyPI sdist of the last release before the task; gold relocated)
and ``online`` (a git worktree at ``base_commit``; exact). ``None`` = fasbench.data.corpus's own
choice per task (offline where a release is picked). A SWE-bench task the shipped offline manifest
marks as not located is excluded with the manifest's reason without downloading anything; every
other task is materialised (corpus fetched once into the cache, gold and imported read regions
relocated, entity gold computed) and excluded with ``CorpusError.reason`` when that fails.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Sequence

from tqdm.auto import tqdm

from fasbench.data import offline_manifest
from fasbench.data.corpus import CorpusError, materialize, pick_for
from fasbench.records import Task


class SelectionError(ValueError):
    """Bad ids or an unreadable ids file; the message names which."""


def read_ids_file(path: str | Path) -> list[str]:
    """Ids one a line (blank lines and ``#`` comments ignored)."""
    p = Path(path)
    if not p.is_file():
        raise SelectionError(f"--ids-file {p} does not exist")
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        s = line.split("#", 1)[0].strip()
        if s:
            out.append(s)
    if not out:
        raise SelectionError(f"--ids-file {p} lists no ids")
    return out


def pick_ids(tasks: Sequence[Task], ids: Sequence[str]) -> list[Task]:
    """The tasks with these ids, in the order given; an unknown id is an error naming it."""
    by_id = {t.id: t for t in tasks}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        more = f" (and {len(unknown) - 3} more)" if len(unknown) > 3 else ""
        raise SelectionError(f"ids not in the task set: {', '.join(unknown[:3])}{more}")
    return [by_id[i] for i in dict.fromkeys(ids)]


def usable(tasks: Sequence[Task], mode: str | None = None, progress: bool = True) -> tuple[list[Task], list[dict]]:
    """(tasks with a corpus and their gold placed on it, excluded rows {id, reason, detail})."""
    mode = mode or os.environ.get("FASBENCH_CORPUS_MODE") or None
    man = offline_manifest() if mode != "online" else {}
    ok, excluded, todo = [], [], []
    for t in tasks:
        if t.root and Path(t.root).is_dir():
            ok.append(t)
            continue
        row = man.get(t.id)
        offline = mode == "offline" or (mode is None and pick_for(t) is not None)
        if offline and row is not None and not row.get("located") and t.gold.explore is None:
            excluded.append({"id": t.id, "reason": row.get("reason") or "not-located", "detail": row.get("detail", "")})
            continue
        todo.append(t)
    for t in tqdm(todo, desc="corpora", unit="task", disable=not progress or not todo):
        try:
            ok.append(materialize(t, mode=mode))
        except CorpusError as e:
            excluded.append({"id": t.id, "reason": e.reason, "detail": e.detail[:300]})
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted(ok, key=lambda t: order[t.id]), excluded


def describe_excluded(excluded: Sequence[dict], n_total: int, kind: str | None) -> str:
    """One line: how many were excluded on this corpus kind, by reason."""
    if not excluded:
        return f"all {n_total} tasks usable on the {kind or 'default'} corpus"
    why = collections.Counter(r["reason"] for r in excluded)
    parts = ", ".join(f"{r} {n}" for r, n in why.most_common())
    return f"excluded {len(excluded)} of {n_total} tasks not usable on the {kind or 'default'} corpus: {parts}"
