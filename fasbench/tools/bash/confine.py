"""The second wall: OS-level confinement of every tool subprocess (Linux).

:func:`preexec` returns the function run in the child between ``fork`` and ``exec`` (the child
is already the leader of its own session and process group, ``start_new_session=True``):

1. **Resource limits** (``setrlimit``): CPU seconds, address space, file size 0 (no byte can be
   written to a regular file), core dumps 0. (Not ``RLIMIT_NPROC``: it counts the threads of
   every process of the user, so it would stop ripgrep's threads, and root is exempt; the process
   count is the seccomp filter's job.)
2. **seccomp filter** (x86-64 and aarch64): the command and everything it runs cannot leave its
   process group (``setsid``, ``setpgid`` fail), cannot start processes (``fork``, ``vfork``,
   ``clone`` without ``CLONE_THREAD`` fail; threads still work; ``clone3`` answers ENOSYS so the
   C library falls back to ``clone``), cannot trace or write other processes' memory, and cannot
   make namespaces, mounts or BPF programs. So killing the process group at the deadline kills
   the whole command, and a ``setsid`` grandchild cannot exist.
3. **Landlock** (Linux >= 5.13 with Landlock enabled): the file system is read-only, and only the
   workspace root (read, no execute), the system's program and library directories, a few files
   of ``/etc`` the C library reads, ``/dev/null`` and the ripgrep binary are visible at all;
   no TCP connection or bind (Landlock ABI >= 4); no signals to or abstract sockets of processes
   outside (ABI >= 6).

Nothing the workspace contains widens a wall: the allow-list is the root and fasbench's tool
binaries (:func:`git_dir` names the only repository git may use). Where the seccomp filter is not
in force, every command runs under :data:`REAPER`, so a ``setsid`` child still dies with the call.

Each part that the kernel does not offer is skipped; :func:`status` says which parts are in
force (the tests skip what is missing). The first wall (the bash checker) does
not depend on any of them.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import resource
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# ---------------------------------------------------------------- libc

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_restrict = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_int, ctypes.c_uint32)(("syscall", _libc))
_prctl = _libc.prctl
_prctl.restype = ctypes.c_int
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# ---------------------------------------------------------------- seccomp

_ARCH = {
    # machine: (AUDIT_ARCH, syscall numbers)
    "x86_64": (0xC000003E, dict(
        setsid=112, setpgid=109, fork=57, vfork=58, clone=56, clone3=435, ptrace=101, process_vm_readv=310,
        process_vm_writev=311, unshare=272, setns=308, mount=165, umount2=166, pivot_root=155, chroot=161,
        bpf=321, kexec_load=246, init_module=175, finit_module=313, keyctl=250, add_key=248,
        request_key=249, perf_event_open=298, userfaultfd=323)),
    "aarch64": (0xC00000B7, dict(
        setsid=157, setpgid=154, clone=220, clone3=435, ptrace=117, process_vm_readv=270,
        process_vm_writev=271, unshare=97, setns=268, mount=40, umount2=39, pivot_root=41, chroot=51,
        bpf=280, kexec_load=104, init_module=105, finit_module=273, keyctl=219, add_key=217,
        request_key=218, perf_event_open=241, userfaultfd=282)),
}  # fmt: skip
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
CLONE_THREAD = 0x00010000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _bpf_program() -> _SockFprog | None:
    arch = _ARCH.get(platform.machine())
    if arch is None:
        return None
    audit, nr = arch
    LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
    deny = [n for k, n in nr.items() if k not in ("clone", "clone3")]
    prog: list[tuple[int, int, int, int]] = [
        (LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (JEQ, 1, 0, audit),
        (RET, 0, 0, _RET_KILL_PROCESS),  # another ABI (i386, x32 through int 0x80): no
        (LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if audit == 0xC000003E:
        prog += [(0x35, 0, 1, 0x40000000), (RET, 0, 0, _RET_KILL_PROCESS)]  # JGE x32 syscalls
    for n in deny:
        prog += [(JEQ, 0, 1, n), (RET, 0, 0, _RET_ERRNO | errno.EPERM)]
    prog += [(JEQ, 0, 1, nr["clone3"]), (RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    prog += [
        (JEQ, 0, 3, nr["clone"]),
        (LD_W_ABS, 0, 0, 16),  # args[0] low 32 bits: the clone flags
        (JSET, 1, 0, CLONE_THREAD),
        (RET, 0, 0, _RET_ERRNO | errno.EAGAIN),  # a new process: no
        (RET, 0, 0, _RET_ALLOW),
    ]
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    fprog._keep = arr  # the array must live as long as the program
    return fprog


# ---------------------------------------------------------------- landlock

_LL_CREATE, _LL_ADD, _LL_RESTRICT = 444, 445, 446
_FS_EXECUTE, _FS_WRITE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_BITS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV
_NET_ALL = 0b11  # bind_tcp, connect_tcp (ABI 4)
_SCOPE_ALL = 0b11  # abstract unix sockets, signals (ABI 6)

#: What the confined command may see besides the workspace (read; programs also execute).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd",
             "/etc/group", "/etc/nsswitch.conf", "/etc/magic", "/etc/magic.mime")  # fmt: skip


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is not available."""
    try:
        v = _syscall(ctypes.c_long(_LL_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except Exception:  # pragma: no cover - no syscall() in this libc
        return 0
    return max(0, int(v))


def _ruleset(read_dirs: list[str], exec_paths: list[str]) -> int | None:
    """A Landlock ruleset fd: everything handled, read (no execute) under ``read_dirs``,
    read+execute under the system dirs and ``exec_paths``, write only to /dev/null."""
    abi = landlock_abi()
    if abi < 1:
        return None
    fs = _FS_BITS.get(abi, _FS_BITS[5])
    attr = _RulesetAttr(fs, _NET_ALL if abi >= 4 else 0, _SCOPE_ALL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    rfd = _syscall(ctypes.c_long(_LL_CREATE), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if rfd < 0:
        return None
    read = _FS_READ_FILE | _FS_READ_DIR
    rules = [(p, read | _FS_EXECUTE) for p in (*SYSTEM_DIRS, *exec_paths)]
    rules += [(p, read) for p in (*ETC_FILES, *read_dirs)]
    rules += [("/dev/null", _FS_READ_FILE | _FS_WRITE | (_FS_TRUNCATE if abi >= 3 else 0)),
              ("/dev/urandom", _FS_READ_FILE), ("/dev/zero", _FS_READ_FILE)]  # fmt: skip
    for path, rights in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not os.path.isdir(path):
                rights &= _FILE_RIGHTS
            rights &= fs
            rule = _PathBeneath(rights, fd)
            _syscall(ctypes.c_long(_LL_ADD), ctypes.c_int(rfd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)
    return int(rfd)


# ---------------------------------------------------------------- git


def git_dir(root: Path) -> Path | None:
    """The workspace's own git directory, ``<root>/.git``, when git may run on it: a real
    directory (not a symlink, not a ``gitdir:`` file), with no ``commondir`` and no object
    alternates (each would make git read another repository). None otherwise: git then runs
    with ``GIT_DIR`` naming nothing, and the bash tool refuses it. Nothing the workspace
    contains widens a wall: a ``.git`` file is never followed, by git or by Landlock."""
    dot = Path(root) / ".git"
    if dot.is_symlink() or not dot.is_dir():
        return None
    for p in ("commondir", "objects/info/alternates", "objects/info/http-alternates"):
        if os.path.lexists(dot / p):
            return None
    return dot


# ---------------------------------------------------------------- the reaper

#: Where the seccomp filter is not in force (FASBENCH_CONFINE=off, another architecture), a child
#: could fork and ``setsid`` out of the process group that run_pipeline kills. Each command then
#: runs under this reaper (the same interpreter, ``-I -S``, stdlib only): a child subreaper
#: (``PR_SET_CHILD_SUBREAPER``), so every orphan of the command, in any session, becomes its child;
#: when the command exits, or on SIGTERM (run_pipeline's deadline or output cap), it SIGKILLs its
#: children until it has none (the kernel says so: ``waitpid`` raises ChildProcessError), then
#: exits with the command's status. Costs one interpreter start per command (measured 60 ms on a busy
#: 2-core machine: `cat` 17 ms with seccomp, 78 ms under the reaper).
REAPER = r"""
import ctypes, os, signal, sys, time
class Stop(Exception): pass
def stop(*_): raise Stop
signal.signal(signal.SIGTERM, stop)
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
me = os.getpid()
try:  # opened before Landlock hides /proc
    kids = os.open("/proc/%d/task/%d/children" % (me, me), os.O_RDONLY)
except OSError:
    kids = None
rfd = int(sys.argv[1])
if rfd >= 0:  # the Landlock ruleset: restricted here, after the children file is open
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(446), ctypes.c_int(rfd), ctypes.c_uint32(0)) != 0:
        os._exit(126)
    os.close(rfd)
argv = sys.argv[2:]
code = -9
try:
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            os.write(2, ("could not start %s: %s\n" % (argv[0], e.strerror)).encode())
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the command alone holds the pipes
    while True:
        got, st = os.waitpid(-1, 0)
        if got == pid:
            code = os.waitstatus_to_exitcode(st)
            break
except Stop:
    pass
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def children():
    if kids is not None:
        os.lseek(kids, 0, 0)
        data = b""
        while chunk := os.read(kids, 65536):
            data += chunk
        return [int(x) for x in data.split()]
    else:
        out = []
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % d) as f:
                    if d.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
        return out
while True:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        break  # no child left, running or not
    for k in children():
        try:
            os.kill(k, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.002)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(me, -code)
os._exit(code & 0xFF)
"""


def reaper_python() -> str:
    """The interpreter that runs :data:`REAPER` (its real path: no venv lookup)."""
    return os.path.realpath(sys.executable)


def reaper_paths() -> list[str]:
    """What the reaper's interpreter reads and runs (given to Landlock when both apply)."""
    out = [reaper_python(), sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")]
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and sysconfig.get_config_var("LIBDIR"):
        out.append(sysconfig.get_config_var("LIBDIR"))
    return [p for p in dict.fromkeys(out) if p]


# ---------------------------------------------------------------- the child


@dataclass
class ChildLimits:
    """The rlimits of one call's child processes (``harness.Limits`` are an episode's)."""

    cpu_s: int
    address_space: int
    file_size: int = 0


class Confinement:
    """What to apply in one call's children; build it in the parent, pass ``preexec`` to Popen,
    call ``close`` after the processes started."""

    def __init__(
        self, root: Path, limits: ChildLimits, exec_paths: list[str], landlock: bool = True, seccomp: bool = True
    ):
        self.limits = limits
        self.fprog = _bpf_program() if seccomp else None
        #: without the seccomp filter a child can fork and setsid: every command runs under REAPER
        self.reaper = self.fprog is None
        if self.reaper:
            exec_paths = [*exec_paths, *reaper_paths()]
        # the root and fasbench's own binaries, never a path read from the workspace
        self.rfd = _ruleset([str(root)], exec_paths) if landlock else None

        self.rlimits = []  # (resource, soft, hard), clamped to what this process may set
        for res, want in ((resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_FSIZE, limits.file_size),
                          (resource.RLIMIT_CORE, 0), (resource.RLIMIT_AS, limits.address_space)):  # fmt: skip
            _, cap = resource.getrlimit(res)
            clamp = (lambda x: x) if cap == resource.RLIM_INFINITY else (lambda x, cap=cap: min(x, cap))
            # CPU: SIGXCPU at the soft limit, SIGKILL one second later
            self.rlimits.append((res, clamp(want), clamp(want + 1 if res == resource.RLIMIT_CPU else want)))
        self.addr = ctypes.addressof(self.fprog) if self.fprog is not None else 0

    def preexec(self) -> None:
        """Runs in the child between fork and exec (it calls only these syscalls; the address
        space limit comes last so that nothing here needs new memory under it). Under the
        reaper, the reaper applies Landlock itself (it first opens its /proc children file)."""
        _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if self.rfd is not None and not self.reaper and _restrict(_LL_RESTRICT, self.rfd, 0) != 0:
            os._exit(126)  # probed in the parent (confine_parts): not expected
        if self.addr and _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self.addr, 0, 0) != 0:
            os._exit(126)
        for res, soft, hard in self.rlimits:
            resource.setrlimit(res, (soft, hard))

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` as it is started: under :data:`REAPER` where seccomp is not in force."""
        if not self.reaper:
            return list(argv)
        return [reaper_python(), "-I", "-S", "-c", REAPER, str(-1 if self.rfd is None else self.rfd), *argv]

    def pass_fds(self) -> tuple[int, ...]:
        """The fds the started process keeps: the Landlock ruleset, for the reaper to apply."""
        return (self.rfd,) if self.reaper and self.rfd is not None else ()

    def close(self) -> None:
        if self.rfd is not None:
            os.close(self.rfd)
            self.rfd = None


def _works(**parts: bool) -> bool:
    """Whether a child confined with ``parts`` runs a program (``true``) here."""
    conf = Confinement(Path("/"), ChildLimits(5, 1 << 30), [], **parts)
    try:
        return subprocess.run(["true"], preexec_fn=conf.preexec, start_new_session=True,
                              timeout=10).returncode == 0  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        conf.close()


@functools.lru_cache(maxsize=1)
def confine_parts() -> dict[str, bool]:
    """The parts of the second wall this machine can enforce (probed once per process):
    ``{"landlock": ..., "seccomp": ...}``; FASBENCH_CONFINE=off turns both off (for
    measuring what the wall costs)."""
    if os.environ.get("FASBENCH_CONFINE", "").lower() in ("0", "off", "no"):
        return {"landlock": False, "seccomp": False}
    parts = {"landlock": landlock_abi() >= 1, "seccomp": platform.machine() in _ARCH}
    for k in parts:
        if parts[k] and not _works(**{k: True, **{o: False for o in parts if o != k}}):
            parts[k] = False
    return parts


def status() -> dict[str, bool | int]:
    """Which parts of the second wall this machine enforces."""
    parts = confine_parts()
    return {
        "process_group": True,
        "rlimits": True,
        "seccomp": parts["seccomp"],
        "landlock_abi": landlock_abi() if parts["landlock"] else 0,
    }
