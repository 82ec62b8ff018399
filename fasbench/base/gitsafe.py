"""The one way fasbench runs git: every git process of the package starts here (the corpus clone and
checkout, ``data mine-git`` and ``eval --tasks git:PATH``, e2e's git on its copies, provenance) or
takes its environment from here (the tools' git, :func:`fasbench.tools.bash.pipeline.tool_env`).
``tests/test_architecture.py`` fails when another module calls ``subprocess`` with git.

The repositories git reads are untrusted (a corpus, a user's repository, a URL from an imported
record): their config, attributes and layout may name programs. :func:`run` therefore

- puts every operand after ``--end-of-options`` (revisions) or ``--`` (paths, a clone's URL and
  folder), refuses an operand that starts with ``-`` all the same, and checks a URL with
  :func:`url_problem` (https, ``file:///``, an absolute path; no ``::``
  transport such as ``ext::``, no ``--upload-pack=``);
- fixes the repository: ``--git-dir`` and ``--work-tree`` given (git discovers nothing and follows
  no ``.git`` file, ``core.worktree`` or parent folder; ``init`` and ``clone``, which make a
  repository, run in ``/`` with no ``GIT_DIR``);
- starts git with an environment of its own, not the caller's: no ``GIT_*`` variable of the caller,
  no system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  ``HOME``/``XDG_CONFIG_HOME`` naming nothing), no system attributes, no template folder (no hooks
  copied into a new repository), no terminal prompt or askpass, no pager;
- sets :data:`OVERRIDES` above every config file (``GIT_CONFIG_COUNT``: command-line strength, the
  repository's own config cannot undo them): no fsmonitor, hooks, attributes file, pager, external
  diff, ssh command, gpg program, credential helper, submodule recursion; transports: every
  protocol off (``protocol.allow=never``, ``GIT_ALLOW_PROTOCOL``) but the ones a call names
  (``https`` and ``file`` for a clone, ``file`` for a local clone, none otherwise);
- adds ``--no-textconv --no-ext-diff`` to ``diff``, ``log`` and ``show`` (a textconv or diff driver
  named by the repository's config and attributes never runs);
- bounds the call: a timeout and a cap on the bytes of output read (:class:`GitError` past them).

Filters (``filter.*.clean/smudge/process``) run only on checkout and work-tree reads, and only when
a config defines them: fasbench checks out only in clones it made itself (whose config it wrote),
with system and global config off.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?(?::[0-9]{1,5})?"
#: An https clone URL: a host (and port), then a path without white space.
HTTPS_RE = re.compile(rf"https://{_HOST}/[^\s]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def url_problem(url: str) -> str | None:
    """Why git may not clone ``url`` (None when it may): an option spelt as a URL, a transport (``ext::``), a
    control character, a ``..`` component, anything but https://HOST/PATH, file:///PATH or an absolute local
    path. The record boundary (:func:`fasbench.records.fields.clone_url`) and :func:`clone` both ask it."""
    if url.startswith("-"):
        return "starts with '-' (git would read it as an option)"
    if "::" in url:
        return "names a git transport ('::', e.g. ext::)"
    if _CONTROL.search(url):
        return "holds a control character"
    if any(part == ".." for part in url.split("/")):
        return "has a '..' component"
    if not (
        HTTPS_RE.fullmatch(url) or url.startswith("file:///") or (url.startswith("/") and not url.startswith("//"))
    ):
        return "is neither https://HOST/PATH, file:///PATH nor an absolute local path"
    return None


#: git configuration above every config file of every git fasbench runs (no program the repository
#: could name runs; no network transport unless a call allows it).
OVERRIDES = (
    ("core.fsmonitor", "false"), ("core.hooksPath", "/dev/null"), ("core.pager", "cat"),
    ("core.attributesFile", "/dev/null"), ("core.sshCommand", "false"), ("log.showSignature", "false"),
    ("gpg.program", "false"), ("protocol.allow", "never"), ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"), ("core.untrackedCache", "false"), ("diff.external", ""),
    ("credential.helper", ""), ("core.askPass", "false"), ("fetch.recurseSubmodules", "false"),
)  # fmt: skip
PROTOCOLS = ("https", "file")  # the transports a call may allow
NO_DRIVERS = {
    "diff": ("--no-textconv", "--no-ext-diff"),
    "log": ("--no-textconv", "--no-ext-diff"),
    "show": ("--no-textconv", "--no-ext-diff"),
}
#: subcommands that take no ``--end-of-options`` before a revision (git 2.39's checkout reads it as a
#: path): their revisions (checked: no leading ``-``) come before ``--``, which ends them
REV_THEN_DASHES = ("checkout",)
MAKERS = ("init", "clone")  # subcommands that make a repository (no GIT_DIR, run in /)
NO_REPOSITORY = "/nonexistent/no-git-repository"
PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_OUTPUT = 50_000_000  # bytes of one git answer read by default


class GitError(RuntimeError):
    """A git call of the wall failed, timed out, answered more than its cap or was refused (one line)."""


def git_binary() -> str:
    g = shutil.which("git", path=PATH)
    if g is None:
        raise GitError("git is not installed on this machine (looked in /usr/local/bin, /usr/bin, /bin)")
    return g


def config_env(protocols: tuple[str, ...] = ()) -> dict[str, str]:
    """``GIT_CONFIG_COUNT`` / ``KEY_i`` / ``VALUE_i`` of :data:`OVERRIDES`, each of ``protocols``
    allowed on top, and ``GIT_ALLOW_PROTOCOL``."""
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad:
        raise ValueError(f"git protocol {bad[0]!r} is not allowed here (only {', '.join(PROTOCOLS)})")
    pairs = list(OVERRIDES) + [(f"protocol.{p}.allow", "always") for p in protocols]
    env = {"GIT_CONFIG_COUNT": str(len(pairs)), "GIT_ALLOW_PROTOCOL": ":".join(protocols) or "none"}
    for i, (k, v) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = k, v
    return env


def environ(
    git_dir: str | Path | None, work_tree: str | Path | None, protocols: tuple[str, ...] = ()
) -> dict[str, str]:
    """The whole environment of a git the wall starts (none of the caller's variables): fixed
    ``GIT_DIR``/``GIT_WORK_TREE`` (``GIT_DIR`` naming nothing when ``git_dir`` is None and
    ``work_tree`` is given; neither for ``init``/``clone``), no user/system config, no prompts."""
    env = {
        **config_env(protocols),
        "PATH": PATH,
        "LC_ALL": "C",
        "LANG": "C",
        "HOME": "/nonexistent",
        "XDG_CONFIG_HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TEMPLATE_DIR": "",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "false",
        "SSH_ASKPASS": "false",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_PROTOCOL_FROM_USER": "0",
    }
    if git_dir is not None or work_tree is not None:
        env["GIT_DIR"] = str(git_dir) if git_dir is not None else NO_REPOSITORY
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
        env["GIT_CEILING_DIRECTORIES"] = str(Path(work_tree).parent)
    return env


def _operand(v: str, what: str) -> str:
    if not isinstance(v, str) or not v or v.startswith("-") or "\0" in v:
        raise GitError(f"git {what} {v!r} refused: an operand may not be empty or start with '-'")
    return v


def run(
    cmd: str,
    *options: str,
    revs: tuple[str, ...] | list[str] = (),
    paths: tuple | list | None = None,
    git_dir: str | Path | None = None,
    work_tree: str | Path | None = None,
    protocols: tuple[str, ...] = (),
    timeout: float = 600,
    max_bytes: int = MAX_OUTPUT,
    ok: tuple[int, ...] = (0,),
    config: tuple[tuple[str, str], ...] = (),
) -> str:
    """``git <cmd> <options> --end-of-options <revs> -- <paths>`` (``<revs> -- <paths>`` for
    :data:`REV_THEN_DASHES`) on ``git_dir``/``work_tree`` under the wall (module doc); its standard
    output as text. ``options`` are fasbench's own, never data; ``revs`` and ``paths`` may come from
    data; ``config`` (fasbench's own ``(key, value)`` pairs, e.g. a committer) is set like ``git -c``,
    before :data:`OVERRIDES`, which win. :class:`GitError` (one line) when git exits with a code not
    in ``ok``, times out, writes more than ``max_bytes`` or an operand is refused."""
    argv = [git_binary()]
    if cmd not in MAKERS:
        if git_dir is None and work_tree is None:
            raise GitError(f"git {cmd}: the wall runs git only on a repository it is given (git_dir)")
        if git_dir is not None:
            argv.append(f"--git-dir={git_dir}")
        if work_tree is not None:
            argv.append(f"--work-tree={work_tree}")
    argv += [cmd, *NO_DRIVERS.get(cmd, ()), *options]
    rv = [_operand(r, "revision") for r in revs]
    ps = None if paths is None else [_operand(str(p), "operand") for p in paths]
    if rv and cmd in REV_THEN_DASHES:
        argv += [*rv, "--", *(ps or [])]
    else:
        argv += ["--end-of-options", *rv] if rv else []
        argv += ["--", *ps] if ps is not None else []
    env = environ(None, None, protocols) if cmd in MAKERS else environ(git_dir, work_tree, protocols)
    if config:  # fasbench's own pairs first: OVERRIDES come after them and win
        n = int(env["GIT_CONFIG_COUNT"])
        pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(n)]
        for i, (k, v) in enumerate([*config, *pairs]):
            env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = k, v
        env["GIT_CONFIG_COUNT"] = str(len(config) + n)
    cwd = "/" if cmd in MAKERS or work_tree is None else str(work_tree)
    with tempfile.TemporaryFile() as out:
        try:
            r = subprocess.run(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {cmd}: no answer in {timeout:g} s") from None
        except OSError as e:
            raise GitError(f"git {cmd}: cannot start git ({e})") from None
        if r.returncode not in ok:
            err = r.stderr.decode("utf-8", "replace").strip().replace("\n", "; ")
            raise GitError(f"git {cmd}: {err[:300] or f'exit code {r.returncode}'}")
        if out.tell() > max_bytes:
            raise GitError(f"git {cmd}: more than {max_bytes} bytes of output")
        out.seek(0)
        return out.read().decode("utf-8", "replace")


def clone(url: str, dest: str | Path, *options: str, local: bool = False, timeout: float = 3600) -> None:
    """``git clone <options> -- URL DEST``: ``url`` checked first (:func:`url_problem`, :class:`GitError` with
    its reason when refused); https and file transports only (file only with ``local``: a clone of a clone
    fasbench made)."""
    why = "is not a string" if not isinstance(url, str) else url_problem(url)
    if why:
        raise GitError(f"clone URL: {url!r:.80} {why}")
    run(
        "clone",
        *options,
        "--template=",
        paths=[url, str(dest)],
        protocols=("file",) if local else PROTOCOLS,
        timeout=timeout,
    )


def repository(path: str | Path, own: bool = False) -> Path:
    """The git directory of the repository at ``path``: ``path/.git`` when it is a real folder, else
    ``path`` itself when it is a bare repository; :class:`GitError` otherwise (a ``.git`` file or
    symlink pointing elsewhere is not followed, except with ``own``: fasbench's own checkout, which
    may be a ``git worktree`` whose ``.git`` file names its git directory)."""
    p = Path(path)
    dot = p / ".git"
    if dot.is_dir() and not dot.is_symlink():
        return dot
    if own and dot.is_file():
        line = dot.read_text(encoding="utf-8", errors="replace")[:4096].strip()
        if line.startswith("gitdir: ") and (p / line[8:]).is_dir():
            return p / line[8:]
    if os.path.lexists(dot):
        raise GitError(
            f"{path}: .git is a file or a symlink (a worktree, a submodule or a pointer elsewhere); "
            "give the repository itself"
        )
    if (p / "HEAD").is_file() and (p / "objects").is_dir() and (p / "refs").is_dir():
        return p
    raise GitError(f"{path} is not a git repository (no .git folder)")
