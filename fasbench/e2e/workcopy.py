"""How fasbench's own git reads the main agent's copy (the agent's commands run in
:mod:`fasbench.base.untrusted`, the one sandbox for untrusted code).

The agent's ``.git`` in its copy is its own (its config, hooks and attributes may be
anything). fasbench keeps the base commit in a second git directory *beside* the copy, never mounted in
the sandbox, and runs every git call of its own through the one git wall (:func:`fasbench.base.gitsafe.run`:
``--git-dir`` / ``--work-tree`` given, an environment of its own with no variable of the caller, no
system or global config, ``fasbench.base.gitsafe.OVERRIDES`` above the repository's config: no fsmonitor,
hooks, attributes file, pager or external diff; ``--no-textconv --no-ext-diff`` on ``diff``), and an
``info/attributes`` that resets ``diff``, ``filter``, ``text``, ``eol``, ``ident`` and
``working-tree-encoding`` for every path (the corpus's ``.gitattributes`` can neither name a driver nor
hide a change as binary). No driver is configured anywhere the agent can write, so none can run.

**The diff is bounded** (:func:`bounded_diff`): before git reads the copy, every tracked path is looked
at (``lstat``, nothing opened): a file larger than ``MAX_DIFF_FILE_BYTES`` (a 50 GB sparse file, say)
or one that is no longer a regular file or a link (a FIFO, a socket, a device) is refused by name and
left out of the diff, and the rest of the diff is kept; git itself has ``DIFF_TIMEOUT_S`` and
``MAX_GIT_OUTPUT``.

The per-command cost of bwrap over mini-swe-agent's local environment is measured in the e2e README.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from fasbench.base import gitsafe

MAX_GIT_OUTPUT = 50_000_000  # bytes of a git answer fasbench reads (a diff past it is not recorded)
DIFF_TIMEOUT_S = 120
MAX_DIFF_FILE_BYTES = 16 << 20  # a tracked file larger than this is refused by name, not diffed
MAX_REFUSED = 200  # refused paths past this: the whole diff is refused
RESET_ATTRIBUTES = "* !diff !filter !text !eol !ident !working-tree-encoding !merge\n"


# ---- fasbench's own git on the copy


class SandboxGitError(RuntimeError):
    """One of fasbench's git calls on a copy failed, timed out or answered more than its limit (not
    ``data.gitmine.GitRepoError``: a repository given to mine that git cannot read)."""


def safe_git(
    args: list[str],
    git_dir: Path,
    work_tree: Path,
    timeout: float = 600,
    max_bytes: int = MAX_GIT_OUTPUT,
    config: tuple = (),
) -> str:
    """``git`` with fasbench's fixed flags and environment on an explicit git dir and work tree; its
    output read up to ``max_bytes`` (SandboxGitError past it, or on failure or timeout)."""
    cmd, *rest = args
    paths = None
    if "--" in rest:  # what follows is operands (paths): the wall puts them after its own "--"
        rest, paths = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
    try:
        return gitsafe.run(
            cmd,
            *rest,
            paths=paths,
            git_dir=git_dir,
            work_tree=work_tree,
            timeout=timeout,
            max_bytes=max_bytes,
            config=config,
        )
    except gitsafe.GitError as e:
        raise SandboxGitError(f"git {cmd} in {work_tree}: {str(e).removeprefix(f'git {cmd}: ')}") from None


def base_repository(copy: Path, git_dir: Path) -> None:
    """Commit ``copy`` as the base in ``git_dir`` (fasbench's, outside the copy), then give the copy a
    ``.git`` of its own for the agent: a plain copy of that directory (no hard links, no alternates)."""
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    gitsafe.run("init", "-q", "--bare", paths=[str(git_dir)], timeout=120)
    safe_git(["config", "core.bare", "false"], git_dir, copy)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(RESET_ATTRIBUTES)
    shutil.rmtree(git_dir / "hooks", ignore_errors=True)  # the sample hooks (core.hooksPath is /dev/null anyway)
    safe_git(["add", "-A", "-f"], git_dir, copy)
    safe_git(
        ["commit", "-q", "--no-verify", "-m", "base"],
        git_dir,
        copy,
        config=(("user.name", "fasbench"), ("user.email", "fasbench@localhost")),
    )
    shutil.copytree(git_dir, copy / ".git", symlinks=True)
    (copy / ".git" / "info" / "attributes").unlink()  # the agent's git honours the corpus's attributes, as usual


def diff_refusals(git_dir: Path, work_tree: Path) -> list[tuple[str, str]]:
    """(path, why) for each tracked path fasbench's git must not read: larger than ``MAX_DIFF_FILE_BYTES`` (a
    sparse file too: its size is what git would read), or no longer a regular file or a link (FIFO,
    socket, device). Only ``lstat``: nothing is opened."""
    names = safe_git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD"], git_dir, work_tree, timeout=60)
    out = []
    for name in filter(None, names.split("\0")):
        try:
            st = os.lstat(os.path.join(work_tree, name))
        except OSError:
            continue  # deleted (or under a path that is no directory now): git diffs that
        mode = st.st_mode
        if stat.S_ISREG(mode) and st.st_size > MAX_DIFF_FILE_BYTES:
            out.append((name, f"{st.st_size} bytes, over {MAX_DIFF_FILE_BYTES}"))
        elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
            out.append((name, f"not a regular file: {stat.filemode(mode)}"))
    return out


def bounded_diff(git_dir: Path, work_tree: Path) -> tuple[str, str | None]:
    """(diff, refusal): the work tree's tracked changes against the base, read by fasbench's git only,
    without the paths :func:`diff_refusals` names (``refusal`` names them, one line; None when there is
    none). SandboxGitError when git fails, times out (``DIFF_TIMEOUT_S``) or answers more than
    ``MAX_GIT_OUTPUT`` bytes, or when more than ``MAX_REFUSED`` paths are refused."""
    refused = diff_refusals(git_dir, work_tree)
    if len(refused) > MAX_REFUSED:
        raise SandboxGitError(
            f"git diff in {work_tree}: {len(refused)} tracked paths refused (over {MAX_REFUSED}), "
            f"e.g. {refused[0][0]} ({refused[0][1]})"
        )
    skip = [":(top,exclude,literal)" + name for name, _ in refused]
    diff = safe_git(
        ["diff", "--no-textconv", "--no-ext-diff", "--no-color", "HEAD", "--", ":(top)", *skip],
        git_dir,
        work_tree,
        timeout=DIFF_TIMEOUT_S,
    )
    if not refused:
        return diff, None
    why = "; ".join(f"{n} ({w})" for n, w in refused)
    return diff, f"git diff in {work_tree}: left out {len(refused)} path(s): {why}"[:2000]
