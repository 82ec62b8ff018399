"""Paths in the bash tool's arguments: containment of operands (:func:`contain`) and glob
expansion confined to the root (:func:`expand_glob`), both built on :func:`confined_real`.

Nothing outside the root is looked at: a path is resolved one component at a time, and a step
that leaves the root (``..`` above it, a symlink whose target lies outside) ends the walk there,
before the file system outside is touched. So neither a refusal nor a glob's matches can say
whether something outside exists (a glob over ``../*``, ``/repo/../etc/shado?`` or
``link_out_dir/*`` is refused before anything is listed, with the same message whatever lies
there). Glob matches are operands, never options: a match that a program would read as an
option (a file named ``--pre=sh``, ``-L`` or ``-``) comes back as ``./NAME``.
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import os
import re
import stat
import time
from contextlib import contextmanager

from fasbench.base.contain import is_inside, root_path
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.pipeline import relative_spelling

GLOB_MAX_MATCHES = 4096  # paths one glob may expand to
GLOB_MAX_SCANNED = 200_000  # directory entries one command line's globs may look at
GLOB_MAX_PART = 1024  # characters of one glob component (a name has at most 255 bytes)
_MAX_LINKS = 40  # symlinks followed in one resolution (the kernel's limit: ELOOP)
_FIND_WORDS = ("!", "(", ")", ",")  # names find would read as operators


def _refuse(msg: str):
    raise ToolError(f"command refused: {msg}")


def confined_real(root: str, rel: str) -> str | None:
    """The real path of ``root/rel`` (symlinks and ``..`` resolved, missing parts kept as
    written, like ``os.path.realpath``), or None as soon as a step leads outside ``root``.
    Only paths inside the root are looked at (``lstat``/``readlink``): a ``..`` above the root
    or a symlink whose target is outside stops the walk without looking there."""
    todo = [c for c in reversed(rel.split("/")) if c not in ("", ".")]
    cur, links = root, 0
    while todo:
        c = todo.pop()
        if c in ("", "."):
            continue
        if c == "..":
            if cur == root:
                return None
            cur = os.path.dirname(cur)
            continue
        nxt = f"{cur}/{c}"
        try:
            st = os.lstat(nxt)
        except OSError:  # missing (or not a directory): the rest is taken as written
            cur = nxt
            continue
        if not stat.S_ISLNK(st.st_mode):
            cur = nxt
            continue
        links += 1
        if links > _MAX_LINKS:
            return None
        try:
            target = os.readlink(nxt)
        except OSError:
            return None
        if target.startswith("/"):
            if not is_inside(root, target.rstrip("/") or "/"):
                return None
            cur, target = root, target[len(root) :]
        todo.extend(q for q in reversed(target.split("/")) if q not in ("", "."))
    return cur


def contain(ws: Workspace, p: str, what: str = "path") -> str:
    """``p`` as it may be passed to the program: a relative path whose real path (symlinks and
    ``..`` resolved, missing parts allowed) is inside the root, or an absolute workspace spelling
    (``/repo/x``, ``/x``, the root path) rewritten to the real absolute path; ToolError when it
    leads outside the workspace (decided without looking outside it)."""
    if "\x00" in p:
        _refuse(f"NUL character in {what}")
    root = str(ws.root)
    if p.startswith("/"):
        rel = relative_spelling(ws.root, p)
        real = confined_real(root, rel)
        spelled_inside = is_inside(ws.root, os.path.normpath(p)) or p == "/repo" or p.startswith("/repo/")
        if not spelled_inside and (real is None or not os.path.lexists(real)):
            _refuse(f"{what} {p!r} is outside the workspace; paths are relative to the repository root")
        if real is None:
            _refuse(f"{what} {p!r} leads outside the workspace ('..' and symlinks may not leave it)")
        return str(ws.root / rel)
    if confined_real(root, p) is None:
        _refuse(f"{what} {p!r} leads outside the workspace ('..' and symlinks may not leave it)")
    return p


class GlobBudget:
    def __init__(self, deadline: float):
        self.deadline, self.scanned = deadline, 0

    def tick(self, n: int = 1):
        self.scanned += n
        if self.scanned > GLOB_MAX_SCANNED:
            _refuse(f"globs of this command look at more than {GLOB_MAX_SCANNED} directory entries; narrow them")
        if time.monotonic() > self.deadline:
            raise ToolError("command timed out while expanding globs; narrow them")


def _as_operand(h: str) -> str:
    """A relative match as an operand no program reads as an option (or find as an operator)."""
    return "./" + h if h.startswith("-") or h.split("/", 1)[0] in _FIND_WORDS else h


@contextmanager
def _listing(root: str, real: str):
    """The entries of the directory ``real`` (a confined real path), empty when it cannot be listed:
    opened with ``O_NOFOLLOW`` and listed only when the directory actually opened lies under
    ``root`` (one swapped for a symlink out after it was resolved is not listed)."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield iter(())
        return
    try:
        if not is_inside(root_path(root), os.readlink(f"/proc/self/fd/{fd}")):
            yield iter(())
            return
        with os.scandir(fd) as it:  # scandir lists a duplicate of fd; fd itself is closed below
            yield it
    finally:
        os.close(fd)


def expand_glob(ws: Workspace, word: str, budget: GlobBudget) -> list[str]:
    """Bash-style expansion of ``word`` inside the root: sorted, hidden names only when the
    pattern names them, the word itself when nothing matches. Confined: a part before the first
    wildcard that leads outside the root is refused before anything is listed; directories are
    entered only while their real path is inside the root (a symlink out is never followed;
    a match that is a symlink out is refused by name, from its target as the root holds it).
    Bounded: at most GLOB_MAX_MATCHES results and GLOB_MAX_SCANNED entries looked at, under
    the call's deadline."""
    absolute = word.startswith("/")
    pat = relative_spelling(ws.root, word) if absolute else word
    parts = [q for q in pat.split("/") if q]
    if not parts:
        return [word]
    for q in parts:
        if len(q) > GLOB_MAX_PART and globmod.has_magic(q):
            _refuse(f"a part of glob {word[:80]!r}... is longer than {GLOB_MAX_PART} characters")
    root = str(ws.root)
    # (the path as spelled, relative; its real path inside the root)
    found: list[tuple[str, str]] = [("", root)]
    magic_seen = False
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        nxt: list[tuple[str, str]] = []
        if not globmod.has_magic(part):
            for pre, real in found:
                budget.tick()
                r = confined_real(root, os.path.relpath(real, root) + "/" + part)
                if r is None:
                    if not magic_seen:  # the fixed prefix leads outside: refused before anything is listed
                        _refuse(f"glob {word!r} leads outside the workspace ('..' and symlinks may not leave it)")
                    if last:
                        _refuse(f"glob {word!r} matches {pre + part!r}, which leads outside the workspace")
                    continue  # below a match that leads outside: never entered
                exists = os.path.lexists(r if part == ".." else f"{real}/{part}")
                if exists and (last or os.path.isdir(r)):
                    nxt.append((pre + part + ("" if last else "/"), r))
        else:
            magic_seen = True
            rx = re.compile(fnmatch.translate(part))
            for pre, real in found:
                with _listing(root, real) as it:
                    for e in it:
                        budget.tick()
                        if e.name.startswith(".") and not part.startswith("."):
                            continue
                        if not rx.match(e.name):
                            continue
                        path = os.path.join(real, e.name)
                        if e.is_symlink():  # followed only while it stays inside
                            r = confined_real(root, os.path.relpath(path, root))
                            if r is None:
                                if last:
                                    _refuse(
                                        f"glob {word!r} matches {pre + e.name!r}, which leads outside the workspace"
                                    )
                                continue  # a symlink out: never entered
                            is_dir = os.path.isdir(r)
                        else:
                            r, is_dir = path, e.is_dir(follow_symlinks=False)
                        if not last and not is_dir:
                            continue
                        nxt.append((pre + e.name + ("" if last else "/"), r))
                        if len(nxt) > GLOB_MAX_MATCHES:
                            _refuse(f"glob {word!r} matches more than {GLOB_MAX_MATCHES} paths; narrow it")
        found = nxt
        if not found:
            return [word]
    return [str(ws.root / h) if absolute else _as_operand(h) for h in sorted(h for h, _ in found)]
