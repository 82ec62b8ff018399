"""The one boundary for the fields of external records: what a task's repository, commit, clone URL,
id and line ranges may be, checked where a record enters fasbench.

Every task that comes from outside (a tasks file read by :func:`fasbench.records.read_tasks`, a
record of another benchmark turned into a task by ``fasbench.data.importers`` / ``swebench_pro`` /
``contextbench``, a repository mined by ``fasbench.data.gitmine``) passes :func:`check_task` before
anything uses it; a field that is not what it must be is a :class:`fasbench.records.jsonl.RecordError` with
one line naming the task, the field and what is wrong (its value shown as ``repr``, cut, so that a
newline or a terminal escape in it is never printed raw). The importers put that line in their
skip list and go on with the next record.

- a **repository** (``repo``) is ``owner/name`` or ``name``, each part of ``[A-Za-z0-9_.-]``,
  starting with a letter, digit or ``_`` (so never ``..``, ``-x`` or a path), or ``name==version``
  (an installed package: the ``symbols`` tasks);
- a **commit** (``base_commit``) is 7 to 40 (SHA-1) or 64 (SHA-256) hexadecimal digits, nothing else
  (not a ref name, not ``/../..``, not an option);
- a **clone URL** (``meta["clone_url"]``) is ``https://HOST[:PORT]/PATH``, ``file:///PATH`` or an
  absolute local path ``/PATH``, with no ``::`` (git's ``transport::address``, e.g. ``ext::``),
  no ``..`` component, no control character (no space in an https URL), never starting with ``-``;
- an **id** is a safe name: ``[A-Za-z0-9_][A-Za-z0-9_.@+=,-]*``, at most :data:`MAX_ID` characters
  (never ``..``, a separator or an absolute name);
- a **line range** is integers (not booleans, not strings), ``1 <= start <= end <= MAX_LINE``;
  SWE-Explore's regions may also be ``[path, start, -1]`` (to the end of the file) and
  ``[path, -N, -1]`` (the last N lines); a path is a non-empty string without NUL, at most
  :data:`MAX_PATH` characters.
"""

from __future__ import annotations

import re
from typing import Any

from fasbench.base.gitsafe import url_problem
from fasbench.records.jsonl import RecordError

MAX_LINE = 10_000_000  # no source file of a benchmark has more lines; a larger number is refused
MAX_ID = 200
MAX_PATH = 4096
MAX_URL = 2048
_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}"
REPO_RE = re.compile(rf"{_PART}(?:/{_PART}|==[A-Za-z0-9][A-Za-z0-9.+!_-]{{0,63}})?")
COMMIT_RE = re.compile(r"[0-9a-f]{7,40}|[0-9a-f]{64}")
ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+=,-]*")


def show(value: Any, n: int = 60) -> str:
    """``repr`` of a value, cut to ``n`` characters: one printable line whatever the value holds."""
    r = repr(value)
    return r if len(r) <= n else r[: n - 1] + "…"


def text(value: Any, where: str, max_len: int | None = None) -> str:
    """A string (not a number, list or null), at most ``max_len`` characters."""
    if not isinstance(value, str):
        raise RecordError(f"{where}: expected a string, got {type(value).__name__} {show(value)}")
    if max_len is not None and len(value) > max_len:
        raise RecordError(f"{where}: longer than {max_len} characters")
    return value


def integer(value: Any, where: str, lo: int = -MAX_LINE, hi: int = MAX_LINE) -> int:
    """An integer (not a boolean, float or string) in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{where}: expected an integer, got {type(value).__name__} {show(value)}")
    if not lo <= value <= hi:
        raise RecordError(f"{where}: {value} is outside {lo}..{hi}")
    return value


def repo_name(value: Any, where: str = "repo") -> str:
    """A repository name: ``owner/name`` or ``name`` from the fixed character set (module doc)."""
    v = text(value, where, 201)
    if not REPO_RE.fullmatch(v):
        raise RecordError(f"{where}: {show(v)} is not a repository name owner/name (letters, digits, _ . -)")
    return v


def commit(value: Any, where: str = "base_commit") -> str:
    """A commit id: 7-40 or 64 hexadecimal digits (lowercased)."""
    v = text(value, where, 64).lower()
    if not COMMIT_RE.fullmatch(v):
        raise RecordError(f"{where}: {show(value)} is not a commit id (7 to 40 or 64 hexadecimal digits)")
    return v


def clone_url(value: Any, where: str = "clone_url") -> str:
    """A clone URL of an allowed form: https to a host, file:///PATH or /PATH (module doc)."""
    v = text(value, where, MAX_URL)
    why = url_problem(v)
    if why:
        raise RecordError(f"{where}: {show(v)} {why}")
    return v


def record_id(value: Any, where: str = "id") -> str:
    """A safe name for an id (module doc): usable as a file name, never a path."""
    v = text(value, where, MAX_ID)
    if not ID_RE.fullmatch(v):
        raise RecordError(
            f"{where}: {show(v)} is not a safe id (letters, digits, _ . @ + = , -; no separator, no leading '.' or '-')"
        )
    return v


def path(value: Any, where: str) -> str:
    """A file path a record names: a non-empty string without NUL (containment is checked where it is read)."""
    v = text(value, where, MAX_PATH)
    if not v or "\0" in v:
        raise RecordError(f"{where}: {show(v)} is not a file path")
    return v


def line_range(start: Any, end: Any, where: str) -> list[int]:
    """``[start, end]`` with ``1 <= start <= end <= MAX_LINE``."""
    s, e = integer(start, f"{where} start", 1), integer(end, f"{where} end", 1)
    if s > e:
        raise RecordError(f"{where}: start {s} is after end {e}")
    return [s, e]


def region(r: Any, where: str, tail: bool = False) -> list:
    """``[path, start, end]`` as :func:`line_range`; with ``tail`` also ``end == -1`` (to the end of
    the file, ``start >= 1``) or ``[-N, -1]`` (the last N lines)."""
    if not isinstance(r, (list, tuple)) or len(r) != 3:
        raise RecordError(f"{where}: each region must be [path, start, end], got {show(r)}")
    p = path(r[0], f"{where} path")
    if tail and r[2] == -1 and not isinstance(r[2], bool):
        integer(r[1], f"{where} start", -MAX_LINE, MAX_LINE)
        if r[1] == 0:
            raise RecordError(f"{where}: start 0 is not a line")
        return [p, r[1], -1]
    return [p, *line_range(r[1], r[2], where)]


def _ranges(ranges: dict, where: str) -> None:
    for p, rs in ranges.items():
        path(p, f"{where} path")
        for r in rs:
            line_range(r[0], r[1], f"{where}[{show(p, 40)}]")


def check_task(task):
    """``task`` (a :class:`fasbench.records.Task`) when every field it takes from outside is what it
    must be (module doc); :class:`RecordError` with one line naming the task and the field otherwise.
    ``base_commit`` is returned lowercased."""
    tid = record_id(task.id, "id")
    where = f"task {tid}"
    text(task.query, f"{where}: query")
    repo_name(task.repo, f"{where}: repo")
    if task.base_commit is not None:
        task.base_commit = commit(task.base_commit, f"{where}: base_commit")
    for k in ("version", "split", "root"):
        if getattr(task, k) is not None:
            text(getattr(task, k), f"{where}: {k}", MAX_PATH)
    if not isinstance(task.meta, dict):
        raise RecordError(f"{where}: meta: expected an object, got {type(task.meta).__name__}")
    if task.meta.get("clone_url") is not None:
        clone_url(task.meta["clone_url"], f"{where}: meta.clone_url")
    g = task.gold
    _ranges(g.edited, f"{where}: gold.edited")
    for name, v in g.variants.items():
        _ranges(v, f"{where}: gold.variants[{show(name, 20)}]")
    for key, tail in (("explore", True), ("context", False)):
        d = getattr(g, key)
        for k in ("core_regions", "optional_regions", "regions"):
            for r in (d or {}).get(k) or []:
                region(r, f"{where}: gold.{key}.{k}", tail)
    for level, names in g.entities.items():
        for n in names:
            text(n, f"{where}: gold.entities[{show(level, 20)}]", MAX_PATH)
    return task


def skip_name(rec: Any, i: int, key: tuple[str, ...] = ("instance_id",)) -> str:
    """How a record is named in the skip list: its first ``key`` field that is a safe id, else its number."""
    for k in key:
        iid = rec.get(k) if isinstance(rec, dict) else None
        if isinstance(iid, str) and ID_RE.fullmatch(iid) and len(iid) <= MAX_ID:
            return iid
    return f"record {i + 1}"


def each_record(recs: list, one, key: tuple[str, ...] = ("instance_id",)) -> tuple[list, list[dict]]:
    """``one(rec, rid) -> (task, None) | (None, {"reason", "detail"?})`` for every record, each task
    checked at the boundary (:func:`check_task`); a record that is not an
    object, a field of the wrong type or value (``bad-field``), any other shape the importer
    cannot read (``bad-record``, JSON nested past the recursion limit included) or a second task with
    an id already imported (``duplicate-id``) is one line in the skip list, and the batch goes on."""
    tasks, dropped, seen = [], [], set()
    for i, rec in enumerate(recs):
        rid = skip_name(rec, i, key)
        if not isinstance(rec, dict):
            dropped.append({"id": rid, "reason": "not-an-object", "detail": f"got {type(rec).__name__}"})
            continue
        try:
            t, why = one(rec, rid)
            if t is not None:
                check_task(t)
        except RecordError as e:
            t, why = None, {"reason": "bad-field", "detail": str(e).replace("\n", " ")[:300]}
        except RecursionError:
            t, why = None, {"reason": "bad-record", "detail": "a field is nested too deeply"}
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            t, why = None, {"reason": "bad-record", "detail": f"{type(e).__name__}: {e}".replace("\n", " ")[:300]}
        if t is not None and t.id in seen:
            t, why = None, {"reason": "duplicate-id", "detail": f"task {t.id} appears twice; the first is kept"}
        if t is None:
            dropped.append({"id": rid, **why})
        else:
            seen.add(t.id)
            tasks.append(t)
    return tasks, dropped
