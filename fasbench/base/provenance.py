"""What produced an artefact: the code version (git describe and commit of the checkout, or the
installed package version outside a git checkout) and the time, for run directories and figures."""

from __future__ import annotations

import functools
import time
from importlib import metadata

from fasbench.base import gitsafe
from fasbench.base.paths import repo_root


@functools.lru_cache(maxsize=1)
def code_version() -> dict:
    """``{"describe": "f1b5676-dirty", "commit": "<40 hex>", "dirty": bool}`` for the checkout this
    package runs from; ``{"describe": "fasbench <version>", "commit": None, "dirty": None}`` when it
    is not a git checkout (an installed wheel)."""
    root = repo_root()

    def git(*args: str) -> str | None:
        try:  # the checkout's own .git only (an installed package's folder discovers no parent repository)
            return (
                gitsafe.run(*args, git_dir=gitsafe.repository(root, own=True), work_tree=root, timeout=10).strip()
                or None
            )
        except gitsafe.GitError:
            return None

    commit = git("rev-parse", "HEAD")
    if commit:
        describe = git("describe", "--always", "--dirty", "--tags") or commit[:7]
        return {"describe": describe, "commit": commit, "dirty": describe.endswith("-dirty")}
    try:
        v = metadata.version("fasbench")
    except metadata.PackageNotFoundError:
        v = "unknown"
    return {"describe": f"fasbench {v}", "commit": None, "dirty": None}


def timestamp() -> str:
    """UTC time as ISO 8601, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
