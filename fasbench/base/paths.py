"""Where things live: the repository, the shipped data, the git-ignored cache, the figures; and the
one way a name from data becomes a path (:func:`safe_name`, :func:`name_key`, :class:`Names`, :func:`child`)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def repo_root() -> Path:
    """The checkout this package runs from (the folder holding pyproject.toml)."""
    return Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """Shipped, small, real data sets (each with a SOURCE.md)."""
    return repo_root() / "data"


def cache_dir(*parts: str) -> Path:
    """Derived and large artefacts (corpora, converted models, embeddings); git ignores it.
    ``FASBENCH_CACHE`` overrides the default ``<repo>/.cache``."""
    base = Path(os.environ.get("FASBENCH_CACHE") or repo_root() / ".cache")
    p = base.joinpath(*parts)
    p.mkdir(parents=True, exist_ok=True)
    return p


def figures_dir() -> Path:
    """Exported figures; ``FASBENCH_FIGURES`` overrides the default ``<repo>/figures``."""
    p = Path(os.environ.get("FASBENCH_FIGURES") or repo_root() / "figures")
    p.mkdir(parents=True, exist_ok=True)
    return p


def _roots(extra: tuple[tuple[str, str], ...] = ()) -> list[tuple[str, str]]:
    """(absolute folder, what to show instead) of this machine, longest first: the cache when set outside
    the checkout (``$FASBENCH_CACHE``), the checkout (relative: ``.``), the home folder (``~``)."""
    roots = list(extra)
    cache = os.environ.get("FASBENCH_CACHE")
    if cache and os.path.isabs(cache):
        roots.append((str(Path(cache)), "$FASBENCH_CACHE"))
    roots += [(str(repo_root()), "."), (str(Path.home()), "~")]
    roots = [(r.rstrip("/"), to) for r, to in roots if len(r.rstrip("/")) > 1]  # never "/" itself
    return sorted(dict(roots).items(), key=lambda rt: -len(rt[0]))


def scrub_paths(text: str, extra: tuple[tuple[str, str], ...] = ()) -> str:
    """``text`` with this machine's absolute folders (:func:`_roots`, and ``extra`` pairs such as the
    checkout a run was made in) written portably: ``/home/u/fasbench/runs/x`` as ``runs/x``,
    ``/home/u/data`` as ``~/data``. A longer folder that only starts with the same letters is left alone."""
    for root, to in _roots(extra):
        esc = re.escape(root)
        text = re.sub(esc + r"/(?=[^/])", "" if to == "." else to.replace("\\", "\\\\") + "/", text)
        text = re.sub(esc + r"(?![\w.-])", to, text)
    return text


def shown_path(path: str | Path) -> str:
    """A path as a notebook or log prints it: no folder of this machine in it (:func:`scrub_paths`)."""
    return scrub_paths(str(path))


@contextmanager
def building(target: Path) -> Iterator[Path]:
    """A scratch folder next to ``target`` to build it in, removed on exit whatever happens; move
    the result into place with :func:`replace_dir` so that ``target`` is never half-written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
    try:
        yield tmp
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(src: Path, target: Path) -> None:
    """Move the finished folder ``src`` to ``target``, replacing an older ``target``."""
    if target.exists():
        shutil.rmtree(target)
    src.rename(target)


# --- names from data become paths here, and only here -------------------------------------------
# Every file or folder named after a string that came from data (a trace id, a task id, a run,
# policy, shard or figure name, a repository slug) is named through :func:`safe_name` (refuse what
# cannot be one path component), :func:`name_key` (a safe, distinct key for any string) or
# :class:`Names` (one run's names: a duplicate is refused, never written over).
# tests/test_architecture.py holds the rule: no path join of an f-string or a data field elsewhere.

MAX_NAME_BYTES = 200  # one component, UTF-8; under the usual 255 with room for a suffix


class UnsafeName(ValueError):
    """A name from data that cannot be one path component; the message is one line saying why."""


def _shown(name: object) -> str:
    r = repr(name)
    return r if len(r) <= 60 else r[:57] + "..."


def safe_name(name: object, what: str = "name", max_bytes: int = MAX_NAME_BYTES) -> str:
    """``name`` itself when it can be one path component, else :class:`UnsafeName` naming it and why:
    not a string, empty, ``.`` or ``..``, a ``/`` or ``\\`` (so no absolute name), a control character
    (NUL included), not encodable text, or longer than ``max_bytes`` bytes."""
    if not isinstance(name, str):
        why = f"is a {type(name).__name__}, not a string"
    elif not name:
        why = "is empty"
    elif name in (".", ".."):
        why = "is . or .."
    elif "/" in name or "\\" in name:
        why = "holds a path separator"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        why = "holds a control character"
    else:
        try:
            size = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            size, why = 0, "is not valid text (a lone surrogate)"
        else:
            why = f"is {size} bytes, over {max_bytes}" if size > max_bytes else ""
        if not why:
            return name
    raise UnsafeName(f"{what} {_shown(name)} {why}: it cannot name a file")


_KEY_CHARS = re.compile(r"[^\w.@-]+", re.ASCII)


def name_key(name: str, what: str = "name") -> str:
    """A safe file name for any string, distinct for distinct strings: ``name`` itself when it is
    made of ``[A-Za-z0-9_.@-]`` only (and is not ``.``/``..``, not too long), else its readable
    part (other characters as ``_``, at most 80) + ``-`` + 16 hex digits of its SHA-256."""
    if not isinstance(name, str):
        raise UnsafeName(f"{what} {_shown(name)} is a {type(name).__name__}, not a string: it cannot name a file")
    clean = _KEY_CHARS.sub("_", name)
    if clean == name and name.strip(".") and len(name) <= MAX_NAME_BYTES - 17:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{clean[:80].strip('.') or '_'}-{digest}"


class Names:
    """The names one run writes under one folder: :meth:`claim` returns the safe name, refusing an
    unsafe one and a second claim of the same name (case-folded: a case-insensitive file system
    would write the two over each other) with :class:`UnsafeName`."""

    def __init__(self, what: str = "name"):
        self.what = what
        self._taken: dict[str, str] = {}

    def claim(self, name: object) -> str:
        n = safe_name(name, self.what)
        first = self._taken.get(n.casefold())
        if first is not None:
            raise UnsafeName(f"{self.what} {_shown(n)} repeats {_shown(first)}: refused, not written over")
        self._taken[n.casefold()] = n
        return n


def child(parent: Path, name: object, suffix: str = "", what: str = "name") -> Path:
    """``parent / (safe_name(name) + suffix)``: the one join of a name from data onto a folder."""
    return Path(parent) / (safe_name(name, what) + suffix)
