"""Where untrusted code runs: the one bubblewrap sandbox (``bwrap``: Debian/Ubuntu package ``bubblewrap``).

Two callers: the live main agent's commands (``fasbench.e2e``, in its corpus copy, read-write) and
``fasbench data perturb --check`` (the corpus's modules imported and its tests collected by pytest,
read-only). Nothing else in fasbench runs code of a corpus, but one fallback that needs the network: an
offline corpus's sdist is fetched from PyPI without running it, and only where that fails by ``pip
download``, which runs the sdist's ``setup.py`` for its metadata (``fasbench.data.corpus``: with
``PIP_ENV`` only, no key of the caller).

- **The file system** is a fresh one: the system directories (``/usr``, ``/bin``, ``/lib*``, ``/sbin``)
  and a few files of ``/etc`` (users, the loader cache, the time zone, Python's site config) read-only;
  the root (the copy, or the corpus) at its own path, read-write or read-only; extra read-only paths
  (perturb's check: the virtual environment and its base Python, so that the corpus and pytest import);
  a private tmpfs of bounded size on ``/tmp`` (also ``HOME``); a minimal ``/dev``; the sandbox's own
  ``/proc``, read-only. Every mount is ``nosuid`` and ``nodev`` (bwrap's binds), and the commands run
  with ``no_new_privs``: a set-uid file does nothing inside. Not the home directory, not ``/work`` or
  ``/opt``, not the fasbench cache or run directory.
- **An unprivileged user.** Started as root, bwrap sets up the namespaces and mounts as root (no user
  namespace: one would map the sandbox's user to the host's root, whose files then are the host's
  root's), and the command runs through ``setpriv`` as :func:`sandbox_ids` (``nobody``, or
  ``FASBENCH_SANDBOX_UID``), every capability gone. What the commands write is that user's, never the
  host's root's; a writable root is handed to that user first (:func:`give_to_sandbox`: owner, mode
  0700, so that no other user of the host reaches a file in it) and, after each command, loses every
  set-uid and set-gid bit (:func:`strip_setid`). Started as another user, bwrap makes a user namespace
  and the commands run as that user (``--disable-userns``: no nested one).
- **Limits** set before bwrap starts (rlimits, inherited, hard limits not raisable inside): processes
  (``RLIMIT_NPROC``: the tasks the sandbox's user had plus ``processes``), address space, file size
  (no 50 GB sparse file), CPU seconds (the command's time limit) and no core files; ``/tmp``'s size
  (``--size``); the time limit and output bound of :func:`run_sandboxed` (bwrap killed, and with it
  the pid namespace).
- **A cleared environment**: ``PATH``, ``HOME=/tmp``, ``LANG``, ``LC_ALL`` and what the caller adds; bwrap
  itself is started with that environment too, so the sandbox's pid 1 (whose ``/proc/1/environ`` a
  command may read) holds no secret. No API key, no fasbench variable, nothing of the caller.
- **Every namespace** but the user one as above (pid, network, ipc, uts, cgroup): no network at all, no
  view of the host's processes; ``--die-with-parent`` and the pid namespace end every process of a
  command with it; ``--new-session`` and stdin ``/dev/null``.
"""

from __future__ import annotations

import glob
import math
import os
import pwd
import resource
import selectors
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "apt-get install bubblewrap"
SANDBOX_PATH = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
SANDBOX_HOME = "/tmp"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc files a shell, git and python need; the rest of /etc (ssh, ssl, shadow, pip/npm config …) is left out
ETC = (
    "passwd",
    "group",
    "hosts",
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "alternatives",
    "os-release",
    "debian_version",
    "mime.types",
    "protocols",
    "services",
    "shells",
    "locale.alias",
    "terminfo",
    "magic",
    "magic.mime",
)
STARTUP_TIMEOUT_S = 30
MAX_OUTPUT_BYTES = 2_000_000  # of one command (the model sees the first and last 5,000 characters of it anyway)
SETPRIV = "/usr/bin/setpriv"  # util-linux: drops to the sandbox's user inside the sandbox (started as root)
NEEDED_OPTIONS = ("--size", "--perms", "--disable-userns")  # bubblewrap >= 0.8
# the command's working directory, entered as the sandbox's user (bwrap's --chdir runs before the drop)
ENTER = 'cd -- "$0" || exit 126; exec "$@"'


class SandboxError(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here: no untrusted code can run."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandboxed command may use (each an rlimit but ``tmp_bytes``, the size of its ``/tmp``)."""

    processes: int = 256  # tasks (processes and threads) beyond those its user already has
    address_space: int = 2 << 30  # bytes of each process
    file_size: int = 256 << 20  # bytes of any file it writes
    cpu_s: int | None = None  # CPU seconds of each process; None: the command's time limit + 1
    tmp_bytes: int = 512 << 20  # its /tmp (a tmpfs: memory)


DEFAULT_LIMITS = SandboxLimits()


def bwrap_executable() -> str | None:
    """The bwrap to use: ``MSWEA_BUBBLEWRAP_EXECUTABLE`` (mini-swe-agent's own setting) or ``bwrap`` on PATH."""
    name = os.environ.get("MSWEA_BUBBLEWRAP_EXECUTABLE") or "bwrap"
    return shutil.which(name)


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment a command sees (and bwrap is started with)."""
    return {"PATH": SANDBOX_PATH, "HOME": SANDBOX_HOME, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **(extra or {})}


def sandbox_ids() -> tuple[int, int] | None:
    """(uid, gid) the commands run as when fasbench runs as root: ``FASBENCH_SANDBOX_UID`` (a number, not
    0), else ``nobody``'s; None when fasbench is not root (the commands then run as its own user)."""
    if os.geteuid() != 0:
        return None
    raw = os.environ.get("FASBENCH_SANDBOX_UID", "").strip()
    if raw:
        if not raw.isdigit() or int(raw) == 0:
            raise SandboxError(f"FASBENCH_SANDBOX_UID={raw!r}: give the number of an unprivileged user (not 0)")
        uid = int(raw)
        try:
            return uid, pwd.getpwuid(uid).pw_gid
        except KeyError:
            return uid, uid
    try:
        p = pwd.getpwnam("nobody")
        return p.pw_uid, p.pw_gid
    except KeyError:
        return 65534, 65534


def _system_mounts() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    etc = [f"/etc/{n}" for n in ETC] + sorted(glob.glob("/etc/python3*"))
    args += ["--perms", "0755", "--dir", "/etc"]  # else made with the mode of the first bind's parent's copy: 0700
    for p in etc:
        if os.path.exists(p):
            args += ["--ro-bind", p, p]
    return args


def wrapper_args(env: dict[str, str], limits: SandboxLimits = DEFAULT_LIMITS) -> list[str]:
    """bwrap's arguments before the root's and the extra paths' binds."""
    if sandbox_ids() is not None:  # as root: no user namespace; setpriv drops to the sandbox's user
        args = [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_SETPCAP",
        ]
    else:
        args = ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    args += ["--die-with-parent", "--new-session", "--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    # /proc read-only: kernel settings under /proc/sys are checked by file mode alone
    return (
        args
        + _system_mounts()
        + [
            "--perms",
            "1777",
            "--size",
            str(limits.tmp_bytes),
            "--tmpfs",
            "/tmp",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--remount-ro",
            "/proc",
        ]
    )


def _covered(path: str) -> bool:
    return path in ("/", "/tmp") or any(path == d or path.startswith(d + "/") for d in SYSTEM_DIRS)


def _bind_args(path: str, writable: bool) -> list[str]:
    """``path`` bound at its own place, its parents made traversable (bwrap copies a missing parent's mode
    from the host: a 0700 home would hide everything under it from the sandbox's user)."""
    args: list[str] = []
    parts = Path(path).parts
    for i in range(2, len(parts)):
        parent = str(Path(*parts[:i]))
        if not _covered(parent):
            args += ["--perms", "0755", "--dir", parent]
    return args + ["--bind" if writable else "--ro-bind", path, path]


def _checked_path(path: str | os.PathLike) -> str:
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise SandboxError(f"the sandbox's root {path} is not a directory")
    if _covered(real) or real.startswith(("/proc", "/dev", "/sys", "/etc")):
        raise SandboxError(f"the sandbox's root {real} is a system directory")
    return real


def _tasks_of(uid: int) -> int:
    """Tasks (processes and threads: what RLIMIT_NPROC counts) whose real user is ``uid``."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                status = f.read(4096).decode("ascii", "replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            n += int(fields.get("Threads", "1").strip() or 1)
    return n


def _rlimits(limits: SandboxLimits, timeout: float, uid: int) -> list[tuple[int, int]]:
    cpu = limits.cpu_s if limits.cpu_s is not None else max(1, math.ceil(timeout)) + 1
    out = []
    for res, want in (
        (resource.RLIMIT_NPROC, _tasks_of(uid) + limits.processes),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, limits.address_space),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_CORE, 0),
    ):
        _, cap = resource.getrlimit(res)
        want = want if cap == resource.RLIM_INFINITY else min(want, cap)
        out.append((res, want))
    return out


def sandbox_argv(
    executable: str,
    root: str,
    argv: Sequence[str],
    env: dict[str, str],
    *,
    writable: bool = True,
    ro_paths: Sequence[str] = (),
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> list[str]:
    """The whole command line: bwrap, its mounts, then ``argv`` run in ``root`` as the sandbox's user."""
    args = [executable, *wrapper_args(env, limits)]
    for p in dict.fromkeys(os.path.realpath(p) for p in ro_paths):
        if os.path.exists(p) and not _covered(p):
            args += _bind_args(p, writable=False)
    args += _bind_args(root, writable)
    ids = sandbox_ids()
    inner = ["/bin/bash", "-c", ENTER, root, *argv]
    if ids is None:
        return [*args, *inner]
    return [
        *args,
        SETPRIV,
        f"--reuid={ids[0]}",
        f"--regid={ids[1]}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        *inner,
    ]


def run_sandboxed(
    executable: str,
    root: str | os.PathLike,
    argv: Sequence[str],
    env: dict[str, str],
    timeout: float,
    max_output: int = MAX_OUTPUT_BYTES,
    *,
    writable: bool = True,
    ro_paths: Sequence[str] = (),
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> dict:
    """Run ``argv`` in the sandbox of ``root`` (its working directory); mini-swe-agent's output dict
    (output: stdout and stderr together, returncode, exception_info). bwrap itself starts with ``env``
    (the command's whole environment); stdin is ``/dev/null``. Past ``timeout`` seconds or
    ``max_output`` bytes of output bwrap is killed, and with it every process of the namespace (what
    was read is kept). A writable root loses its set-uid and set-gid bits after the command."""
    try:
        root = _checked_path(root)
        cmd = sandbox_argv(executable, root, argv, env, writable=writable, ro_paths=ro_paths, limits=limits)
        ids = sandbox_ids()
        rl = _rlimits(limits, timeout, ids[0] if ids else os.getuid())
    except SandboxError as e:
        return _failed(e)

    def preexec() -> None:  # between fork and exec: setrlimit only (no import, no allocation worth naming)
        for res, v in rl:
            resource.setrlimit(res, (v, v))

    try:
        proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=preexec
        )
    except (OSError, subprocess.SubprocessError) as e:
        return _failed(e)
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
    if writable:
        strip_setid(root)
    out = bytes(buf[:max_output]).decode("utf-8", errors="replace")
    if not stop:
        return {"output": out, "returncode": rc, "exception_info": ""}
    return {
        "output": out,
        "returncode": -1,
        "exception_info": f"An error occurred while executing the command: {stop}",
        "extra": {"exception_type": "TimeoutExpired" if "timed out" in stop else "OutputLimit", "exception": stop},
    }


def _failed(e: BaseException) -> dict:
    return {
        "output": "",
        "returncode": -1,
        "exception_info": f"An error occurred while executing the command: {e}",
        "extra": {"exception_type": type(e).__name__, "exception": str(e)},
    }


def execute_sandboxed(
    executable: str,
    root: str | os.PathLike,
    command: str,
    env: dict[str, str],
    timeout: float,
    max_output: int = MAX_OUTPUT_BYTES,
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> dict:
    """``/bin/bash -c command`` in the sandbox of the writable ``root`` (:func:`run_sandboxed`)."""
    return run_sandboxed(executable, root, ["/bin/bash", "-c", command], env, timeout, max_output, limits=limits)


def give_to_sandbox(root: str | os.PathLike) -> None:
    """Make ``root`` (a copy of fasbench's own making) the sandbox's: owned by its user (when fasbench is
    root), mode 0700, symbolic links not followed."""
    ids = sandbox_ids()
    os.chmod(root, 0o700)
    if ids is None:
        return
    os.chown(root, *ids)
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            os.chown(os.path.join(d, n), *ids, follow_symlinks=False)


def strip_setid(root: str | os.PathLike) -> int:
    """Clear every set-uid and set-gid bit under ``root``; how many files had one. Race-safe against a
    process of the sandbox still dying: the walk holds directory fds (``os.fwalk``, links not followed)
    and each file is opened ``O_NOFOLLOW | O_NONBLOCK`` at its folder, checked again and changed through
    its fd (``fchmod``), so a name swapped for a link or a FIFO meanwhile changes nothing outside."""
    setid = stat.S_ISUID | stat.S_ISGID
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    n = 0

    def clear(name: str, dir_fd: int | None) -> int:
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError:
            return 0  # a link (ELOOP), gone, or not openable: nothing to change
        try:
            st = os.fstat(fd)
            if st.st_mode & setid and (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~setid)
                return 1
            return 0
        finally:
            os.close(fd)

    n += clear(os.fspath(root), None)
    for _, dirs, files, dfd in os.fwalk(root, follow_symlinks=False):
        for name in dirs + files:
            try:
                st = os.lstat(name, dir_fd=dfd)
            except OSError:
                continue
            if st.st_mode & setid and (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                n += clear(name, dfd)
    return n


def check_sandbox() -> str:
    """bwrap's path once it has run a command in the sandbox; SandboxError (one line) otherwise."""
    exe = bwrap_executable()
    if exe is None:
        raise SandboxError(
            "untrusted code (the live main agent's commands, perturb's check) runs in bubblewrap, "
            "and 'bwrap' is not installed "
            f"(or not on PATH): {INSTALL_HINT} (Debian/Ubuntu; on other systems the "
            "distribution's bubblewrap package)"
        )
    try:
        usage = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S).stdout
    except (OSError, subprocess.SubprocessError) as e:
        usage = str(e)
    missing = [o for o in NEEDED_OPTIONS if o not in usage]
    if missing and "--bind" in usage:  # a bwrap that lists its options (else the probe below says what fails)
        raise SandboxError(
            f"bubblewrap ({exe}) has no {missing[0]} option (a bounded /tmp needs bubblewrap 0.8 "
            f"or later): {INSTALL_HINT} from a newer release"
        )
    if sandbox_ids() is not None and not os.access(SETPRIV, os.X_OK):
        raise SandboxError(
            f"running as root, the sandbox drops to an unprivileged user with {SETPRIV} "
            "(util-linux), which is missing: apt-get install util-linux"
        )
    with tempfile.TemporaryDirectory(prefix="fasbench-bwrap-") as d:
        give_to_sandbox(d)
        r = execute_sandboxed(exe, d, "echo ok > probe && cat probe", sandbox_env(), STARTUP_TIMEOUT_S)
    ok = r["returncode"] == 0 and r["output"].strip() == "ok"
    why = r["exception_info"] or (r["output"].strip().splitlines() or [f"exit status {r['returncode']}"])[-1]
    if not ok:
        raise SandboxError(
            f"bubblewrap ({exe}) cannot create its sandbox here ({why[:200]}); it needs user "
            "namespaces (kernel.unprivileged_userns_clone=1, or a container started with them) "
            f"or root, and {INSTALL_HINT} where it is missing"
        )
    return exe
