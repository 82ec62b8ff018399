"""Where the live main agent's commands run, and how fasbench's own git reads its copy.

**The sandbox.** Every model-written command runs in bubblewrap (``bwrap``: Debian/Ubuntu package
``bubblewrap``), through mini-swe-agent's own ``BubblewrapEnvironment`` configured by fasbench
(``live.SandboxEnvironment``, its ``execute`` replaced by ``execute_sandboxed``):

- the file system is a fresh one: the system directories (``/usr``, ``/bin``, ``/lib*``, ``/sbin``) and a
  few files of ``/etc`` (users, the loader cache, the time zone, Python's site config) read-only, the corpus
  copy read-write at its own path, a private tmpfs on ``/tmp`` (also ``HOME``), a minimal ``/dev`` and the
  sandbox's own ``/proc``, read-only (run as root, the sandbox's user is the host's root, and ``/proc/sys``
  checks only the file mode). Nothing else is mounted: not the home directory, not ``/work`` or ``/opt``, not the
  fasbench cache or run directory, not fasbench's virtual environment. The agent gets the system's
  ``python3``, ``git``, coreutils, grep and sed (what SWE-bench's agents use); a corpus whose tests need more
  packages cannot run them here (the offline corpora are source trees only, their tests are not run);
- a cleared environment: ``PATH``, ``HOME=/tmp``, ``LANG``, ``LC_ALL`` and mini-swe-agent's SWE-bench
  variables (pager off, progress bars off). bwrap itself is started with that environment too, so the
  sandbox's pid 1 (a bwrap process, whose ``/proc/1/environ`` the command can read) holds no secret;
- every namespace unshared (user where possible, pid, network, ipc, uts, cgroup) and every capability
  dropped: no network at all (the model endpoint is called by fasbench's process, not by the commands),
  no view of the host's processes; ``--die-with-parent`` and the pid namespace end every process of a
  command with it (a timeout, or output past ``MAX_OUTPUT_BYTES``, kills bwrap, and with it the namespace);
  ``--new-session`` (no terminal injection) and stdin is ``/dev/null``.

**fasbench's git.** The agent's ``.git`` in its copy is its own (its config, hooks and attributes may be
anything). fasbench keeps the base commit in a second git directory *beside* the copy, never mounted in
the sandbox, and runs every git call of its own through the one git wall (:func:`fasbench.gitsafe.run`:
``--git-dir`` / ``--work-tree`` given, an environment of its own with no variable of the caller, no
system or global config, ``fasbench.gitsafe.OVERRIDES`` above the repository's config: no fsmonitor,
hooks, attributes file, pager or external diff; ``--no-textconv --no-ext-diff`` on ``diff``), and an
``info/attributes`` that resets ``diff``, ``filter``, ``text``, ``eol``, ``ident`` and
``working-tree-encoding`` for every path (the corpus's ``.gitattributes`` can neither name a driver nor
hide a change as binary). No driver is configured anywhere the agent can write, so none can run.

The per-command cost of bwrap over mini-swe-agent's local environment is measured in the e2e README.
"""

from __future__ import annotations

import glob
import os
import selectors
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from fasbench import gitsafe

INSTALL_HINT = "apt-get install bubblewrap"
SANDBOX_PATH = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
SANDBOX_HOME = "/tmp"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc files a shell, git and python need; the rest of /etc (ssh, ssl, shadow, pip/npm config …) is left out
ETC = ("passwd", "group", "hosts", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
       "timezone", "alternatives", "os-release", "debian_version", "mime.types", "protocols", "services",
       "shells", "locale.alias", "terminfo", "magic", "magic.mime")
STARTUP_TIMEOUT_S = 30
MAX_OUTPUT_BYTES = 2_000_000  # of one command (the model sees the first and last 5,000 characters of it anyway)
MAX_GIT_OUTPUT = 50_000_000  # bytes of a git answer fasbench reads (a diff past it is not recorded)
DIFF_TIMEOUT_S = 300
RESET_ATTRIBUTES = "* !diff !filter !text !eol !ident !working-tree-encoding !merge\n"


class SandboxError(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here: no episode can run."""


def bwrap_executable() -> str | None:
    """The bwrap to use: ``MSWEA_BUBBLEWRAP_EXECUTABLE`` (mini-swe-agent's own setting) or ``bwrap`` on PATH."""
    name = os.environ.get("MSWEA_BUBBLEWRAP_EXECUTABLE") or "bwrap"
    return shutil.which(name)


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment a command sees (and bwrap is started with)."""
    return {"PATH": SANDBOX_PATH, "HOME": SANDBOX_HOME, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **(extra or {})}


def _mounts() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    etc = [f"/etc/{n}" for n in ETC] + sorted(glob.glob("/etc/python3*"))
    for p in etc:
        if os.path.exists(p):
            args += ["--ro-bind", p, p]
    return args


def wrapper_args(env: dict[str, str]) -> list[str]:
    """bwrap's arguments before the copy's own ``--bind`` (mini-swe-agent's environment appends it)."""
    args = ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    # /proc read-only: run as root, the sandbox's uid is the host's root, whom /proc/sys lets write
    # kernel settings (core_pattern, …) by file mode alone, capabilities dropped or not
    return args + _mounts() + ["--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc", "--remount-ro", "/proc"]


def check_sandbox() -> str:
    """bwrap's path once it has run a command in the sandbox; SandboxError (one line) otherwise."""
    exe = bwrap_executable()
    if exe is None:
        raise SandboxError("the live main agent runs its commands in bubblewrap, and 'bwrap' is not installed "
                           f"(or not on PATH): {INSTALL_HINT} (Debian/Ubuntu; on other systems the "
                           "distribution's bubblewrap package)")
    with tempfile.TemporaryDirectory(prefix="fasbench-bwrap-") as d:
        r = execute_sandboxed(exe, d, "echo ok > probe && cat probe", sandbox_env(), STARTUP_TIMEOUT_S)
    ok = r["returncode"] == 0 and r["output"].strip() == "ok"
    why = r["exception_info"] or (r["output"].strip().splitlines() or [f"exit status {r['returncode']}"])[-1]
    if not ok:
        raise SandboxError(f"bubblewrap ({exe}) cannot create its sandbox here ({why[:200]}); it needs user "
                           "namespaces (kernel.unprivileged_userns_clone=1, or a container started with them) "
                           f"or root, and {INSTALL_HINT} where it is missing")
    return exe


def execute_sandboxed(executable: str, root: str, command: str, env: dict[str, str], timeout: float,
                      max_output: int = MAX_OUTPUT_BYTES) -> dict:
    """Run ``/bin/bash -c command`` in the sandbox of the copy ``root``; mini-swe-agent's output dict (output,
    returncode, exception_info). bwrap itself starts with ``env`` (the command's whole environment), so the
    sandbox's pid 1, a bwrap process whose ``/proc/1/environ`` the command can read, holds nothing else;
    stdin is ``/dev/null``. Past ``timeout`` seconds or ``max_output`` bytes of output bwrap is killed, and
    with it every process of the namespace (what was read is kept)."""
    cmd = [executable, *wrapper_args(env), "--bind", root, root, "--chdir", root, "/bin/bash", "-c", command]
    try:
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as e:
        return {"output": "", "returncode": -1, "exception_info": f"An error occurred while executing the command: {e}",
                "extra": {"exception_type": type(e).__name__, "exception": str(e)}}
    buf, stop = bytearray(), ""
    deadline = time.monotonic() + timeout
    with proc, selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while not stop:
            left = deadline - time.monotonic()
            if left <= 0:
                stop = f"the command timed out after {timeout:g} seconds"
            elif sel.select(left):
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > max_output:
                    stop = f"the command's output passed {max_output} bytes; it was stopped"
        if stop:
            proc.kill()
        rc = proc.wait()
    out = bytes(buf[:max_output]).decode("utf-8", errors="replace")
    if not stop:
        return {"output": out, "returncode": rc, "exception_info": ""}
    return {"output": out, "returncode": -1, "exception_info": f"An error occurred while executing the command: {stop}",
            "extra": {"exception_type": "TimeoutExpired" if "timed out" in stop else "OutputLimit", "exception": stop}}


# ---- fasbench's own git on the copy


class SandboxGitError(RuntimeError):
    """One of fasbench's git calls on a copy failed, timed out or answered more than its limit (not
    ``data.gitmine.GitRepoError``: a repository given to mine that git cannot read)."""


def safe_git(args: list[str], git_dir: Path, work_tree: Path, timeout: float = 600,
             max_bytes: int = MAX_GIT_OUTPUT, config: tuple = ()) -> str:
    """``git`` with fasbench's fixed flags and environment on an explicit git dir and work tree; its
    output read up to ``max_bytes`` (SandboxGitError past it, or on failure or timeout)."""
    cmd, *rest = args
    paths = None
    if "--" in rest:  # what follows is operands (paths): the wall puts them after its own "--"
        rest, paths = rest[:rest.index("--")], rest[rest.index("--") + 1:]
    try:
        return gitsafe.run(cmd, *rest, paths=paths, git_dir=git_dir, work_tree=work_tree, timeout=timeout,
                           max_bytes=max_bytes, config=config)
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
    safe_git(["commit", "-q", "--no-verify", "-m", "base"], git_dir, copy,
             config=(("user.name", "fasbench"), ("user.email", "fasbench@localhost")))
    shutil.copytree(git_dir, copy / ".git", symlinks=True)
    (copy / ".git" / "info" / "attributes").unlink()  # the agent's git honours the corpus's attributes, as usual


def safe_diff(git_dir: Path, work_tree: Path) -> str:
    """The work tree's tracked changes against the base, read by fasbench's git only (SandboxGitError
    when git cannot read them: e.g. a tracked file replaced by a FIFO, more than ``MAX_GIT_OUTPUT``
    bytes)."""
    return safe_git(["diff", "--no-textconv", "--no-ext-diff", "--no-color", "HEAD", "--"], git_dir, work_tree,
                    timeout=DIFF_TIMEOUT_S)
