"""Where things live: the repository, the shipped data, the git-ignored cache, the figures."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def repo_root() -> Path:
    """The checkout this package runs from (the folder holding pyproject.toml)."""
    return Path(__file__).resolve().parent.parent


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
