"""One way to name a task set, parsed by one function for every command that takes tasks.

A task set is named by one string:

- ``SOURCE[:SPLIT]`` — a shipped task source (``fasbench.data.SOURCES``: swebench-lite,
  swebench-verified, agent-traces), optionally one of fasbench's own splits (``fasbench-train`` |
  ``fasbench-dev`` | ``fasbench-test``, :mod:`fasbench.data.splits`), e.g. ``swebench-verified:fasbench-test``.
  A split is never the official one: ``swebench-lite`` (no split) is the official SWE-bench Lite test set
  (all 300 tasks), ``swebench-verified`` all 500 of Verified. The bare ``train`` | ``dev`` | ``test`` are
  accepted as aliases of the fasbench splits, with a one-line note on standard error (once), because
  ``swebench-lite:test`` reads like Lite's official 300-task test split and is not it;
- ``PATH[:SPLIT]`` — a Task JSONL file (``.jsonl`` or ``.jsonl.gz``, as ``fasbench data tasks``,
  ``data import`` or ``data mine-git`` write it); with ``:SPLIT`` the tasks of that split (tasks
  that carry no split are kept);
- ``swebench-lite:locagent`` — LocAgent's evaluation set: all 300 Lite tasks but the 26 its
  evaluation leaves out (:data:`LOCAGENT_FILTERED`), 274 tasks (upstream tasks, every fasbench split);
- ``symbols[:SPLIT]`` — the miniature's task family (``fasbench.data.symbols``: "find the files that
  define these k symbols" in pure-Python packages of the environment, gold from ``ast``), built on
  first use;
- ``git:PATH`` — tasks mined from the history of the local git repository at PATH
  (``fasbench.data.gitmine``), with their deterministic split assigned (``fasbench.data.splits``).

``{cache}`` and ``{repo}`` in a path stand for the cache and repository folders (as in the RL and
SFT profiles). :func:`parse_task_set` checks a name and says in one line what is wrong with a bad
one; :func:`load_task_set` returns its tasks (optionally one split, chosen ids, the first N).
:func:`task_set_label` is the one label of a task set in tables and figures: the name, whose split it
is (fasbench's own deterministic split, ``fasbench.data.splits``, not the upstream one), how many of
the upstream tasks it holds and the corpus kind, e.g. ``swebench-lite:fasbench-test (fasbench's own split,
98 of Lite's 300 test tasks; offline sdist corpora)``; names recorded with an alias (older runs) are
labelled with the canonical spelling (:func:`canonical_name`); :func:`corpus_kind_of` names the corpus kind of tasks.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fasbench.base.paths import cache_dir, repo_root
from fasbench.data import SOURCES, build_tasks, load_tasks, symbols
from fasbench.data.gitmine import GitRepoError, mine
from fasbench.data.splits import SPLITS, assign
from fasbench.records import Task, read_tasks

KINDS = ("source", "file", "git", "symbols")
FORMS = (
    "SOURCE[:SPLIT] (SOURCE: {}; SPLIT: {}), swebench-lite:locagent, symbols[:SPLIT], a Task JSONL "
    "file[:SPLIT], or git:PATH"
)
#: The canonical spelling of each fasbench split in a task-set name -> the split a task carries.
SPLIT_NAMES = {f"fasbench-{s}": s for s in SPLITS}
_NOTED: set[str] = set()  # the aliases already noted on standard error (once each per process)


def split_name(name: str | None, note: bool = True) -> str | None:
    """The split (``train`` | ``dev`` | ``test``, as :mod:`fasbench.data.splits` assigns it) a split
    name stands for: the canonical ``fasbench-train`` | ``fasbench-dev`` | ``fasbench-test``, or the bare
    alias, which prints one note on standard error (once per alias) unless ``note`` is False. None for a
    name that is neither."""
    if name in SPLIT_NAMES:
        return SPLIT_NAMES[name]
    if name in SPLITS:
        if note and name not in _NOTED:
            _NOTED.add(name)
            print(
                f"note: split {name!r} is fasbench's own split (fasbench-{name}, by instance-id hash), not the "
                "official one; the official SWE-bench Lite test set is `swebench-lite` (no split)",
                file=sys.stderr,
            )
        return name
    return None


def canonical_name(name: str) -> str:
    """A task-set name with its split spelled canonically (``swebench-lite:test`` ->
    ``swebench-lite:fasbench-test``; a trailing `` (first N)`` note kept); other names unchanged. No note
    printed: for names recorded by older runs."""
    m = re.match(r"^(.*?)((?:\s+\(.*\))?)$", str(name).strip())
    base, extra = m.group(1), m.group(2)
    head, sep, split = base.rpartition(":")
    if sep and split in SPLITS and head and not base.startswith("git:"):
        return f"{head}:fasbench-{split}{extra}"
    return str(name).strip()


#: The SWE-bench Lite tasks LocAgent's evaluation leaves out: the first 26 ids of ``filtered_instances``
#: in ``utils/eval_metric.py`` of github.com/gersteinlab/LocAgent (commit 074ccf6e, lines 14-39, the
#: default ``filter_list`` of ``cal_metrics``; the 12 ids after them are Loc-Bench tasks, not Lite).
LOCAGENT_FILTERED = (
    "pytest-dev__pytest-5227",
    "sympy__sympy-15345",
    "sympy__sympy-21614",
    "scikit-learn__scikit-learn-13439",
    "sympy__sympy-11400",
    "sympy__sympy-19487",
    "sympy__sympy-15308",
    "django__django-12915",
    "sympy__sympy-20590",
    "sympy__sympy-17022",
    "django__django-11099",
    "django__django-13220",
    "django__django-11964",
    "matplotlib__matplotlib-25332",
    "django__django-10914",
    "django__django-14915",
    "django__django-11049",
    "django__django-11564",
    "sympy__sympy-17655",
    "sympy__sympy-16106",
    "sympy__sympy-12171",
    "django__django-15400",
    "django__django-14411",
    "sympy__sympy-21055",
    "django__django-15213",
    "django__django-15902",
)
#: Named selections ``SOURCE:NAME``: (source, ids left out, what it is).
SELECTIONS = {
    "locagent": (
        "swebench-lite",
        LOCAGENT_FILTERED,
        "LocAgent's evaluation set: 274 of Lite's 300 test tasks, the 26 of its "
        "eval_metric.py filtered_instances left out",
    )
}


class TaskSetError(ValueError):
    """A task-set name that names no task set, or a selection it cannot give (one line)."""


@dataclass(frozen=True)
class TaskSet:
    """A parsed task-set name: ``kind`` (source | file | git), ``target`` (the source name or the
    path), ``split`` (None = all) and the name as given (``spec``)."""

    kind: str
    target: str
    split: str | None
    spec: str
    selection: str | None = None  # a name of SELECTIONS (source kind only)

    def __str__(self) -> str:
        return self.spec


def expand(path: str) -> str:
    """``~``, ``{cache}`` and ``{repo}`` expanded in a path."""
    return os.path.expanduser(str(path).replace("{cache}", str(cache_dir())).replace("{repo}", str(repo_root())))


def _forms() -> str:
    return FORMS.format(", ".join(SOURCES), "/".join(SPLIT_NAMES))


def parse_task_set(spec: str) -> TaskSet:
    """Check a task-set name and say what it names; :class:`TaskSetError` with one line otherwise."""
    if not isinstance(spec, str) or not spec.strip():
        raise TaskSetError(f"task set must be named: {_forms()}")
    spec = spec.strip()
    if spec.startswith("git:"):
        path = expand(spec[4:])
        if not path:
            raise TaskSetError(f"task set {spec!r}: git: needs a repository path (git:PATH)")
        if not Path(path).is_dir():
            raise TaskSetError(f"task set {spec!r}: {path} is not a folder (git:PATH names a local git repository)")
        return TaskSet("git", path, None, spec)
    base, sep, split = spec.rpartition(":")
    if sep and split in SELECTIONS:
        if base != SELECTIONS[split][0]:
            raise TaskSetError(f"task set {spec!r}: selection {split!r} is of {SELECTIONS[split][0]} only")
        return TaskSet("source", base, None, spec, split)
    split = split_name(split) if sep else None
    if split is None:
        base = spec
    else:
        spec = f"{base}:fasbench-{split}"  # recorded (run.json, labels) in the canonical spelling
    if base in SOURCES:
        return TaskSet("source", base, split, spec)
    if base == "symbols":
        return TaskSet("symbols", base, split, spec)
    path = Path(expand(base))
    if path.is_dir():
        raise TaskSetError(f"task set {spec!r}: {path} is a folder, not a Task JSONL file")
    if path.is_file():
        return TaskSet("file", str(path.resolve()), split, spec)
    if base.endswith((".jsonl", ".jsonl.gz", ".json")):
        raise TaskSetError(f"task set {spec!r}: file {path} does not exist (a task set is {_forms()})")
    src, _, sp = spec.partition(":")
    if src in SOURCES:
        raise TaskSetError(f"task set {spec!r}: unknown split {sp!r}; choose one of {', '.join(SPLIT_NAMES)}")
    raise TaskSetError(f"task set {spec!r} is neither an existing JSONL file, nor {_forms()}")


def load_task_set(
    spec: str | TaskSet, limit: int | None = None, split: str | None = None, ids: Sequence[str] | None = None
) -> list[Task]:
    """The tasks of a task set. ``split`` (fasbench-train | fasbench-dev | fasbench-test, or the bare
    train | dev | test) filters like ``:SPLIT`` (giving both
    with different values is an error); ``ids`` keeps exactly these tasks in the order given (an
    unknown id is an error naming it); ``limit`` keeps the first N. A record of a Task JSONL file
    that fails the record boundary (:func:`fasbench.records.fields.check_task`) is skipped with one
    line on standard error naming it and why."""
    ts = spec if isinstance(spec, TaskSet) else parse_task_set(spec)
    if split is not None:
        if split_name(split, note=False) is None:
            raise TaskSetError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_NAMES)}")
        split = split_name(split, note=False)
    if split and ts.split and split != ts.split:
        raise TaskSetError(f"task set {ts.spec!r} names split {ts.split!r} but split {split!r} was asked for")
    want = split or ts.split
    if ts.kind == "source":
        tasks = load_tasks(ts.target, want)
        if ts.selection:
            drop = set(SELECTIONS[ts.selection][1])
            tasks = [t for t in tasks if t.id not in drop]
    elif ts.kind == "symbols":
        tasks = symbols.load_tasks(want)
    elif ts.kind == "file":
        skipped: list[dict] = []
        tasks = read_tasks(ts.target, skipped)  # each record checked at the boundary (fasbench.records.fields)
        if skipped and not tasks:  # nothing usable: the file is bad input, not an empty task set
            sk = skipped[0]
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            raise TaskSetError(f"task set {ts.spec!r}: no usable task; record {sk['record']}: {sk['reason']}{more}")
        for sk in skipped:  # one line each; the other tasks run
            print(f"warning: task set {ts.spec}: record {sk['record']} skipped: {sk['reason']}", file=sys.stderr)
        if want:
            tasks = [t for t in tasks if t.split in (None, want)]
    else:
        try:
            tasks, _ = mine(ts.target)
        except GitRepoError as e:
            raise TaskSetError(f"task set {ts.spec!r}: {e}") from None
        tasks = assign(tasks)
        if want:
            tasks = [t for t in tasks if t.split == want]
    if ids:
        by_id = {t.id: t for t in tasks}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            more = f" (and {len(unknown) - 3} more)" if len(unknown) > 3 else ""
            raise TaskSetError(f"ids not in task set {ts.spec!r}: {', '.join(unknown[:3])}{more}")
        tasks = [by_id[i] for i in dict.fromkeys(ids)]
    return tasks[:limit] if limit else tasks


# ---------------------------------------------------------------- labels

UPSTREAM = {
    "swebench-lite": "Lite's {n} test tasks",
    "swebench-verified": "Verified's {n} test tasks",
    "agent-traces": "the {n} agent-trace tasks",
}  # what the shipped sources are drawn from
CORPUS_KINDS = {
    "offline": "offline sdist corpora",
    "online": "online git worktrees at base_commit",
    "mixed": "offline sdist and online git corpora",
    "local": "local corpora",
    "default": "offline sdist corpora where a release is picked, else online",
}


@functools.cache
def _count(source: str, split: str | None) -> int:
    return len(load_tasks(source, split))


def corpus_kind_of(tasks: Sequence[Task]) -> str | None:
    """``offline`` | ``online`` | ``mixed`` | ``local`` (corpora given by path, e.g. a toy corpus or a
    mined repository's worktree) for tasks with their corpus (``meta["corpus"]["mode"]``); None without tasks."""
    modes = {(t.meta.get("corpus") or {}).get("mode") or ("local" if t.root else None) for t in tasks}
    modes.discard(None)
    if not modes:
        return None
    if modes <= {"offline"} or modes <= {"online"} or modes <= {"local"}:
        return modes.pop()
    return "mixed" if modes >= {"offline", "online"} else sorted(modes - {"local"})[0]


def task_set_label(name: str | None, corpus: str | None = None) -> str:
    """The label of a task set for tables and figures: its name (as recorded, e.g. ``run.json``'s
    ``task_source``, a trailing ``(first N)`` kept), whose split it is and how many upstream tasks it
    holds, and the corpus kind (``offline`` | ``online`` | ``mixed`` | ``local`` | ``default`` or None =
    not recorded). Several sources joined by ``+`` share one split. Never raises: a name it cannot
    read is given back with the corpus kind."""
    corpus_txt = CORPUS_KINDS.get(corpus, corpus) if corpus else None
    if not name:
        return f"tasks of the run ({corpus_txt})" if corpus_txt else "tasks of the run"
    m = re.match(r"^(.*?)((?:\s+\(.*\))?)$", canonical_name(name))
    base, extra = m.group(1), m.group(2).strip()[1:-1] if m.group(2).strip() else ""
    head, sep, split = base.rpartition(":")
    split = SPLIT_NAMES.get(split, split)
    if sep and split in SELECTIONS and head == SELECTIONS[split][0]:
        what_sel = SELECTIONS[split][2]
        label = "; ".join(x for x in (what_sel, extra, corpus_txt) if x)
        return f"{base} ({label})"
    if not sep or split not in SPLITS:
        head, split = base, None
    parts = [p for p in head.split("+") if p]
    what: list[str] = []
    if parts and all(p in SOURCES for p in parts):
        try:
            counts = [(p, _count(p, split), _count(p, None)) for p in parts]
        except Exception:  # noqa: BLE001 - a label never fails; the shipped task files may be missing
            counts = []
        if counts and split:
            of = ", ".join(f"{k} of {UPSTREAM[p].format(n=n)}" for p, k, n in counts)
            what.append(f"fasbench's own {split} split, {of}" if len(counts) > 1 else f"fasbench's own split, {of}")
        elif counts:
            what.append(", ".join(f"all of {UPSTREAM[p].format(n=n)}" for p, k, n in counts))
    elif head == "symbols":
        what.append("definition-finding tasks in installed packages" + (f", fasbench's {split} split" if split else ""))
    elif base.startswith("git:"):
        what.append("mined from git history" + (f", fasbench's {split} split" if split else ""))
    elif split:
        what.append(f"task file, {split} split")
    if extra:
        what.append(extra)
    label = "; ".join([", ".join(what)] if what else [])
    if corpus_txt:
        label = f"{label}; {corpus_txt}" if label else corpus_txt
    return f"{base} ({label})" if label else base


def task_set_tasks(spec: str, split: str | None = None, rebuild: bool = False) -> list[Task]:
    """``fasbench data tasks``: the tasks of a task set (:func:`load_task_set`), or with ``rebuild`` a
    shipped SOURCE built again from the raw data (not ``data/tasks/``), filtered by ``split`` or its
    ``:SPLIT``. A TaskSetError (one line) for a rebuild of anything else or an unknown split."""
    name = parse_task_set(spec)
    if not rebuild:
        return load_task_set(name, split=split)
    if name.kind != "source":
        raise TaskSetError(f"--rebuild builds a shipped SOURCE ({', '.join(SOURCES)}), not {spec!r}")
    if split and split_name(split, note=False) is None:
        raise TaskSetError(f"unknown split {split!r}; choose one of {', '.join(SPLIT_NAMES)}")
    want = split_name(split, note=False) or name.split
    return [t for t in build_tasks(name.target) if not want or t.split == want]
