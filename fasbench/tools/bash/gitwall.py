"""git under the walls: whether the bash tool may run git in a workspace at all.

Every git a tool runs gets ``GIT_DIR=<root>/.git`` and ``GIT_WORK_TREE=<root>``
(:func:`fasbench.tools.bash.pipeline.tool_env`), so git never discovers or follows a repository the
workspace names (a ``.git`` file, ``core.worktree``, a parent directory). What is left is the
repository's own configuration and layout, which git obeys and which may name programs
(``core.fsmonitor``, hooks, ``filter.*.clean``/``process``, ``diff.*.textconv``/``command``,
``diff.external``, a pager, ``gpg.program``) or files elsewhere (``include.path``,
``mailmap.file``, ``core.attributesFile``, a symlink inside ``.git``, ``commondir``,
``objects/info/alternates``). :func:`refusal` accepts a repository only when

- ``<root>/.git`` is a real directory with no ``commondir`` or alternates
  (:func:`fasbench.tools.bash.confine.git_dir`) and no symlink in it leads outside the root;
- its config (``$GIT_DIR/config``, a regular file, listed by git itself from standard input
  with no repository set up, includes not followed, under both walls; reading config runs
  nothing) sets only keys of :data:`SAFE_KEYS`: keys that name no
  program and no file. An allowlist, not a list of bad keys: a key git learns next year is
  refused until it is read and listed here.

With no driver configured (global and system config are off, ``GIT_CONFIG_COUNT`` defines
none), a ``.gitattributes`` naming ``filter=x`` or ``diff=x`` runs nothing. The bash tool also
adds ``--no-textconv --no-ext-diff --ignore-submodules=all`` where git would apply them
(:data:`fasbench.tools.bash.commands.GIT_EXTRA`); the one git wall's :data:`fasbench.base.gitsafe.OVERRIDES` sit
above the repository's config in every git the tools run.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from fasbench.base.contain import is_inside
from fasbench.tools.base import Workspace
from fasbench.tools.bash.confine import git_dir
from fasbench.tools.bash.pipeline import Stage, run_pipeline

#: Repository config keys that name no program and no file (section.key, or section.*.key for
#: keys under a subsection), as ``git config --list`` spells them (section and key lowercased).
SAFE_KEYS = frozenset(
    """
core.repositoryformatversion core.filemode core.bare core.logallrefupdates core.ignorecase
core.precomposeunicode core.symlinks core.autocrlf core.eol core.safecrlf core.checkstat core.trustctime
core.abbrev core.quotepath core.commitgraph core.multipackindex core.splitindex core.sparsecheckout
core.sparsecheckoutcone core.compression core.loosecompression core.bigfilethreshold core.protecthfs
core.protectntfs core.warnambiguousrefs core.packedgitlimit core.packedgitwindowsize core.deltabasecachelimit
extensions.objectformat extensions.refstorage extensions.noop
user.name user.email init.defaultbranch pull.rebase pull.ff fetch.prune lfs.repositoryformatversion
remote.*.url remote.*.fetch remote.*.tagopt remote.*.mirror remote.*.prune
branch.*.remote branch.*.merge branch.*.rebase submodule.*.url submodule.*.active
""".split()
)

MAX_GIT_ENTRIES = 200_000  # entries of .git looked at for symlinks leading out (then refused)


def _key_allowed(key: str) -> bool:
    parts = key.split(".")
    if len(parts) == 2:
        return key in SAFE_KEYS
    return len(parts) > 2 and f"{parts[0]}.*.{parts[-1]}" in SAFE_KEYS


def _symlink_out(root: Path, gd: Path) -> str | None:
    """The first symlink under ``gd`` that leads outside ``root`` (relative spelling), "…" when
    ``gd`` has more than MAX_GIT_ENTRIES entries, None when there is none."""
    n = 0
    stack = [str(gd)]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                n += 1
                if n > MAX_GIT_ENTRIES:
                    return "…"
                if e.is_symlink():
                    if not is_inside(root, os.path.realpath(e.path)):
                        return os.path.relpath(e.path, root)
                elif e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return None


def refusal(ws: Workspace) -> str | None:
    """Why git may not run in this workspace (one line), or None when it may."""
    root = ws.root
    dot = root / ".git"
    gd = git_dir(root)
    if gd is None:
        if not os.path.lexists(dot):
            return "this workspace has no git repository (no .git directory in its root)"
        if dot.is_symlink() or not dot.is_dir():
            return (
                ".git in this workspace is a file or a symlink (a worktree, a submodule, or a pointer "
                "elsewhere); git runs only on a .git directory inside the workspace"
            )
        return ".git in this workspace borrows another repository (commondir or objects/info/alternates)"
    try:
        st, cst = gd.stat(), os.lstat(gd / "config")
    except OSError:
        return "this workspace's .git has no config"
    if not stat.S_ISREG(cst.st_mode):
        return "this workspace's .git/config is not a regular file"
    key = (str(root), st.st_mtime_ns, st.st_ino, cst.st_mtime_ns, cst.st_size, cst.st_ino)
    if key not in _CHECKED:
        why, final = _check(ws, gd)
        if not final:
            return why
        if len(_CHECKED) > 256:
            _CHECKED.clear()
        _CHECKED[key] = why
    return _CHECKED[key]


_CHECKED: dict[tuple, str | None] = {}  # the verdict per repository state (.git and its config unchanged)


def _check(ws: Workspace, gd: Path) -> tuple[str | None, bool]:
    """(:func:`refusal` past the layout checks, whether the verdict may be kept)."""
    out = _symlink_out(ws.root, gd)
    if out == "…":
        return (
            f"this workspace's .git has more than {MAX_GIT_ENTRIES} entries to check; git is not available here",
            True,
        )
    if out is not None:
        return f"this workspace's .git holds a symlink leading outside the workspace ({out})", True
    git = shutil.which("git", path="/usr/local/bin:/usr/bin:/bin")
    if git is None:
        return "git is not installed on this machine", False
    # the file on standard input, no repository set up (GIT_DIR names nothing): git reads that
    # one file and follows no include
    cfg = Stage(
        [git, "config", "--file", "-", "--no-includes", "--list", "-z"],
        stdin_path=gd / "config",
        env={"GIT_DIR": "/nonexistent/no-git-repository"},
    )
    r = run_pipeline(ws, [cfg], max_bytes=1 << 20)
    if r.returncode != 0:
        why = r.stderr.decode(errors="replace").strip().splitlines()
        return f"this workspace's .git/config cannot be read ({why[0] if why else 'git config failed'})", False
    for entry in r.stdout.decode(errors="replace").split("\0"):
        key = entry.split("\n", 1)[0]
        if key and not _key_allowed(key):
            shown = re.sub(r"[^\w.*-]", "?", key)[:80]
            return (
                f"this workspace's .git/config sets {shown}, which may run a program or read a file "
                "git would obey; git runs only on repositories whose config names neither"
            ), True
    return None, True
