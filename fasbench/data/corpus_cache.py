"""Where corpora live in the cache and how their folders are named: the corpora root, the clone and
checkout folder names of a task (through :func:`fasbench.base.paths.safe_name`), roots as manifests store
them, the cache's locks, and :class:`CorpusError` (split out of :mod:`fasbench.data.corpus`)."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from fasbench.base.paths import cache_dir, child, safe_name
from fasbench.records import Task


class CorpusError(RuntimeError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def root_dir() -> Path:
    return cache_dir("corpora")


def checkout_names(task: Task) -> tuple[str, str]:
    """The cache's folder names of ``task``'s clone (``git/<owner>__<name>``) and checkout
    (``worktrees/<owner>__<name>@<commit[:12]>``), through :func:`fasbench.base.paths.safe_name`: a repository
    ``..`` or a base commit ``/../../..`` is refused (``UnsafeName``, a ``bad-task`` skip), never a path."""
    slug = safe_name(str(task.repo).strip("/").replace("/", "__"), f"task {task.id}: repository")
    return slug, safe_name(f"{slug}@{str(task.base_commit)[:12]}", f"task {task.id}: base commit")


def portable_root(root: str | Path | None) -> str | None:
    """A corpus root as manifests store it: relative to the corpora cache (``root_dir()``), so a
    manifest built on one machine holds no path of that machine; a root outside the cache is
    kept as given. :func:`resolve_root` undoes it."""
    if not root:
        return None
    p = Path(root)
    try:
        return p.resolve().relative_to(root_dir().resolve()).as_posix()
    except ValueError:
        return str(root)


def resolve_root(root: str | None, base: Path | None = None) -> str | None:
    """The absolute corpus root of a manifest row on this machine (relative roots are under the
    corpora cache ``base``, by default ``root_dir()``: pass it when resolving many rows, as finding
    the cache resolves the repository's path)."""
    if not root:
        return None
    return root if os.path.isabs(root) else str((base or root_dir()) / root)


@contextmanager
def lock(name: str):
    """An exclusive lock of the corpora cache named ``name`` (a file under ``locks/``)."""
    path = child(root_dir() / "locks", name, ".lock", "lock name")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
