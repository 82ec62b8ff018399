"""Choosing the tasks of a run: by id (``--ids`` / ``--ids-file``), then only the tasks usable on the
chosen corpus kind, with every excluded task and its reason known before the run starts.

Corpus kinds: ``offline`` (the PyPI sdist of the last release before the task; gold relocated)
and ``online`` (a git worktree at ``base_commit``; exact). ``None`` = fasbench.data.corpus's own
choice per task (offline where a release is picked). The corpora come from
:func:`fasbench.data.corpora.with_corpora`: a SWE-bench task the shipped offline manifest marks as
not located is excluded with the manifest's reason without downloading anything; every other task
is materialised (corpus fetched once into the cache, gold and imported read regions relocated,
entity gold computed) and excluded with its reason (``CorpusError.reason``, ``io-error``,
``bad-task``) when that fails.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from pathlib import Path

from fasbench.data.corpora import with_corpora
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
    """(tasks with a corpus and their gold placed on it, in input order; excluded rows {id, reason, detail}
    in input order), by :func:`fasbench.data.corpora.with_corpora`."""
    got = with_corpora(tasks, mode, progress=progress)
    return got.tasks, [{"id": r["task_id"], "reason": r["reason"], "detail": r["detail"]} for r in got.skipped]


def describe_excluded(excluded: Sequence[dict], n_total: int, kind: str | None) -> str:
    """One line: how many were excluded on this corpus kind, by reason."""
    if not excluded:
        return f"all {n_total} tasks usable on the {kind or 'default'} corpus"
    why = collections.Counter(r["reason"] for r in excluded)
    parts = ", ".join(f"{r} {n}" for r, n in why.most_common())
    return f"excluded {len(excluded)} of {n_total} tasks not usable on the {kind or 'default'} corpus: {parts}"


def describe_run_count(
    ran: int,
    asked: int | None,
    available: int,
    excluded: Sequence[dict],
    kind: str | None,
    where: str | Path | None = None,
) -> str:
    """One line: how many tasks a run got of the N asked for (``--limit N``) and why fewer: the task
    set holds fewer, or some are not usable on the corpus kind (reasons in ``where``), e.g. "ran 6 of
    the 10 asked: 4 not usable on the offline corpus (reasons in OUT/excluded.jsonl)"."""
    want = asked or available
    head = f"ran {ran} of the {want} asked" if asked else f"ran {ran} of the {available} tasks"
    why = []
    if asked and available < asked:
        why.append(f"the task set holds only {available}")
    if excluded:
        reasons = collections.Counter(r["reason"] for r in excluded)
        top = ", ".join(f"{r} {n}" for r, n in reasons.most_common(3))
        why.append(
            f"{len(excluded)} not usable on the {kind or 'default'} corpus ({top}"
            + (f"; reasons in {where})" if where else ")")
        )
    rest = min(available, want) - len(excluded) - ran
    if rest > 0:
        why.append(f"{rest} in other shards")
    return head + (": " + "; ".join(why) if why and ran < want else "")
