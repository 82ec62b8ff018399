"""The workspace sandbox: path resolution, text file reading, subprocess running.

- :func:`resolve` (the rule of :mod:`fasbench.base.contain`, shared with every other reader of model- or
  task-named paths) turns a path as a model writes it (``src/a.py``, ``/src/a.py``, ``./src/a.py``,
  ``/repo/src/a.py``, or the absolute root path) into a real path inside the root; ``..``
  escapes and symlinks leading out of the root are refused.
- :func:`read_lines` streams the requested lines of a text file with notes for binary,
  non-UTF-8, huge files and very long lines.
- :func:`run_pipeline` runs argv lists (no shell) chained with pipes, with a time limit, an
  output cap, and a stripped environment (:func:`tool_env`).

The read-only ``bash`` checker lives in :mod:`fasbench.tools.bash.readonly`.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fasbench.base import gitsafe
from fasbench.base.contain import PathRefused, open_file, real_path, relative
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.confine import ChildLimits, Confinement, confine_parts, git_dir
from fasbench.tools.rg import rg_binary

MAX_LINE_CHARS = 2000  # longer lines are cut in file views, with a marker


# ---------------------------------------------------------------- paths

relative_spelling = relative  # the one spelling rule (fasbench.base.contain), under its old name here


def resolve(ws: Workspace, path: str, *, must_exist: bool = True, kind: str = "any") -> Path:
    """The real path of ``path`` inside the workspace; ToolError when it escapes the root, does
    not exist (when ``must_exist``), or is not of ``kind`` ("file", "dir" or "any")."""
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise ToolError("path contains a NUL character")
    try:
        real = Path(real_path(ws.root, path))  # the one containment rule (fasbench.base.contain)
    except PathRefused:
        raise ToolError(
            f"path {path!r} is outside the workspace (paths are relative to the repository root; "
            "'..' and symlinks may not leave it)"
        ) from None
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as e:  # ENAMETOOLONG, ELOOP, EACCES: one line, never the exception
        raise ToolError(f"path {path!r} cannot be used: {e.strerror or e}") from None
    if must_exist and st is None:
        raise ToolError(f"path {path!r} does not exist in the workspace")
    if kind == "file" and st is not None and stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path!r} is a directory, not a file")
    if kind == "file" and st is not None and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{path!r} is not a regular file")
    if kind == "dir" and st is not None and not stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path!r} is a file, not a directory")
    return real


def display(ws: Workspace, real: Path) -> str:
    """The root-relative spelling of a real path (``.`` for the root)."""
    rel = os.path.relpath(real, ws.root)
    return "." if rel == "." else rel


# ---------------------------------------------------------------- reading files


@dataclass
class Lines:
    """Some lines of a file: ``lines`` are (number, text) pairs."""

    lines: list[tuple[int, str]]
    total: int  # lines in the whole file
    notes: list[str]
    stopped_at: int | None = None  # last line shown when the output budget ran out


def read_lines(ws: Workspace, real: Path, start: int, end: int, label: str) -> Lines:
    """Lines ``start..end`` (1-based inclusive; end -1 = to the end) of a text file, streamed
    so that a huge file is never held in memory, cut when the shown text would exceed the
    output limit. Bounded: at most ``4 * MAX_LINE_CHARS + 4`` bytes of any line are kept (the
    rest is read past in chunks), at most ``max_read_bytes`` bytes are read in all (skipping,
    showing and counting lines) within the call's time limit; past that, the total is a lower
    bound, with a note. Binary files (a NUL byte in the first 8 KiB) raise ToolError."""
    size = real.stat().st_size
    notes: list[str] = []
    keep = MAX_LINE_CHARS * 4 + 4  # enough bytes for MAX_LINE_CHARS + 1 characters
    cap = ws.limits.max_read_bytes
    deadline = time.monotonic() + ws.limits.timeout_s
    read = 0
    exhausted = False

    def take(f, limit: int) -> bytes:
        nonlocal read, exhausted
        if read >= cap or time.monotonic() > deadline:
            exhausted = True
            return b""
        got = f.readline(min(limit, cap - read)) if limit else f.read(min(1 << 20, cap - read))
        read += len(got)
        return got

    try:  # opened through the containment rule: a FIFO or a symlink swapped in since resolve() is refused
        raw = open_file(ws.root, str(real))
    except PathRefused as e:
        raise ToolError(f"{label}: {e.why}") from None
    with io.BufferedReader(raw) as f:
        if b"\x00" in f.read(8192):
            raise ToolError(f"{label} is a binary file ({size} bytes); it cannot be shown as text")
        f.seek(0)
        if size > ws.limits.max_file_bytes:
            notes.append(f"[note: {label} is a large file ({size / 1e6:.1f} MB); only the requested lines were read]")
        out: list[tuple[int, str]] = []
        budget = max(100, ws.limits.max_output_chars - 400)  # room for the notes
        used = n = 0
        bad_utf8 = long_lines = False
        stopped_at = None
        while head := take(f, keep):
            tail = head
            while not tail.endswith(b"\n") and (tail := take(f, 1 << 20)):
                pass  # the rest of a long line: read past, not kept
            n += 1
            if n < start:
                continue
            if end != -1 and n > end:
                break
            raw = head.rstrip(b"\n").rstrip(b"\r")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                bad_utf8 = bad_utf8 or "\ufffd" in text[:MAX_LINE_CHARS]
            if len(text) > MAX_LINE_CHARS:
                text, long_lines = text[:MAX_LINE_CHARS] + " …[line cut]", True
            used += len(text) + 8
            if used > budget and out:
                stopped_at = out[-1][0]
                break
            out.append((n, text))
        # the lines not taken: counted in chunks, not decoded, within the same byte budget
        total, last = n, b""
        while chunk := take(f, 0):
            total += chunk.count(b"\n")
            last = chunk[-1:]
        if last and last != b"\n" and not exhausted:
            total += 1
    if exhausted and n < start:
        raise ToolError(
            f"line {start} of {label} lies beyond the first {cap / 2**20:g} MiB, which is as far as one view "
            f"reads (the file has at least {total} lines); search it with grep instead"
        )
    if exhausted:
        notes.append(
            f"[note: one view reads at most {cap / 2**20:g} MiB of a file; {label} has at least {total} lines]"
        )
    if bad_utf8:
        notes.append(f"[note: {label} is not valid UTF-8; undecodable bytes are shown as \ufffd]")
    if long_lines:
        notes.append(f"[note: lines longer than {MAX_LINE_CHARS} characters were cut]")
    return Lines(out, total, notes, stopped_at)


# ---------------------------------------------------------------- subprocesses

_ENV_PATH = "/usr/local/bin:/usr/bin:/bin"


def tool_env(ws: Workspace) -> dict[str, str]:
    """A stripped environment for tool subprocesses: no user config (git, ripgrep), no pager,
    no network prompts, UTF-8 locale, and git fixed to the workspace's own repository:
    ``GIT_DIR=<root>/.git`` and ``GIT_WORK_TREE=<root>`` when that is a real directory
    (:func:`fasbench.tools.bash.confine.git_dir`), else a ``GIT_DIR`` that names nothing, so no git
    discovers or follows a repository the workspace points to (a ``.git`` file,
    ``core.worktree``, a parent directory). The git part is the one git wall's
    (:func:`fasbench.base.gitsafe.environ`: :data:`fasbench.base.gitsafe.OVERRIDES` above every config file,
    no system or global config, local transport only)."""
    path = os.path.dirname(rg_binary()) + ":" + _ENV_PATH
    gd = git_dir(ws.root)
    return {
        **gitsafe.environ(gd if gd is not None else gitsafe.NO_REPOSITORY, ws.root, protocols=("file",)),
        "PATH": path,
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "MALLOC_ARENA_MAX": "2",  # fewer 64 MiB arena reservations under the address-space limit
    }


@dataclass
class Stage:
    """One process of a pipeline. Streams: "out" (to the next stage / the result), "err" (the
    collected stderr, shown after the output), "null" (discarded)."""

    argv: list[str]
    stdin_path: Path | None = None
    stdout: str = "out"
    stderr: str = "err"
    env: dict[str, str] | None = None  # set on top of tool_env for this stage


@dataclass
class ProcResult:
    stdout: bytes
    stderr: bytes
    returncode: int | None  # of the last stage; None when killed
    timed_out: bool = False
    cut: bool = False  # stopped early at max_bytes / max_lines (of stdout or stderr)


def _kill(procs: list[subprocess.Popen]) -> None:
    """SIGKILL every stage's whole process group, also when the stage itself has exited
    (a child it left behind is still in the group; the group id is not reused while it exists).
    A stage under the reaper (no seccomp filter, :data:`fasbench.tools.bash.confine.REAPER`) gets
    SIGTERM instead: the reaper then kills every process the command left, in any session."""
    for p in procs:
        try:
            if getattr(p, "reaper", False):
                if p.returncode is None:
                    os.kill(p.pid, signal.SIGTERM)
            else:
                os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def confinement(ws: Workspace) -> Confinement:
    """The second wall for one call's subprocesses (see :mod:`fasbench.tools.bash.confine`)."""
    lim = ws.limits
    cpu = lim.max_cpu_s or max(2, int(lim.timeout_s * 4) + 1)
    return Confinement(ws.root, ChildLimits(cpu, lim.max_memory_bytes), [rg_binary()], **confine_parts())


def _drain(stream, buf: bytearray, limit: int, max_lines: int | None, state: dict, procs) -> None:
    """Read ``stream`` into ``buf`` until EOF, or until it holds more than ``limit`` bytes or
    ``max_lines`` lines (then every process is killed and ``state["cut"]`` set)."""
    nl = 0
    while True:
        chunk = stream.read1(65536)
        if not chunk:
            return
        buf.extend(chunk)
        if max_lines is not None:
            nl += chunk.count(b"\n")
            if nl > max_lines:
                break
        if len(buf) > limit:
            del buf[limit:]
            break
    state["cut"] = True
    _kill(procs)


def _open_stdin(ws: Workspace, path) -> io.RawIOBase:
    """The ``< file`` of a stage, opened in this process through :func:`fasbench.base.contain.open_file`
    (the file it names may have been swapped for a symlink out or a FIFO since the command was
    checked: refused, never followed, never blocking)."""
    try:
        return open_file(ws.root, os.path.relpath(path, real_path(ws.root, "")))
    except PathRefused as e:
        raise ToolError(f"the file of < {relative(ws.root, str(path))!r} cannot be read: {e.why}") from None


def run_pipeline(
    ws: Workspace,
    stages: list[Stage],
    *,
    max_bytes: int | None = None,
    max_lines: int | None = None,
    timeout: float | None = None,
    deadline: float | None = None,
    cwd: Path | None = None,
) -> ProcResult:
    """Run ``stages`` chained with pipes in the workspace root. Stops (killing every process
    group) after ``timeout`` seconds, or once the output passes ``max_bytes`` or ``max_lines``
    lines, or the collected stderr passes ``max_bytes`` (``cut``). No shell is involved: argv
    lists are executed directly, each stage in its own session under :func:`confinement`.
    ``cwd`` (a directory already resolved inside the workspace) defaults to the root."""
    if timeout is None:
        timeout = ws.limits.timeout_s
    deadline = min(deadline or float("inf"), time.monotonic() + timeout)
    if max_bytes is None:
        max_bytes = ws.limits.max_output_chars * 4
    for st in stages:
        if any("\x00" in a for a in st.argv):  # no program can be given one; say so instead of ValueError
            raise ToolError("NUL character in an argument (a pattern, glob or path); leave it out")
    env = tool_env(ws)
    conf = confinement(ws)
    err_r, err_w = os.pipe()  # stderr (and 1>&2) of every stage: a pipe read under a cap
    errf = os.fdopen(err_r, "rb")
    procs: list[subprocess.Popen] = []
    prev = None
    try:
        try:
            for i, st in enumerate(stages):
                last = i == len(stages) - 1
                opened = _open_stdin(ws, st.stdin_path) if st.stdin_path is not None else None
                stdin = opened or (prev if prev is not None else subprocess.DEVNULL)
                stdout = {"out": subprocess.PIPE, "null": subprocess.DEVNULL, "err": err_w}[st.stdout]
                stderr = {"err": err_w, "null": subprocess.DEVNULL, "out": subprocess.STDOUT}[st.stderr]
                if st.stderr == "out" and st.stdout == "null":
                    stderr = subprocess.DEVNULL
                try:
                    if conf.reaper and shutil.which(st.argv[0], path=env["PATH"]) is None:
                        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
                    p = subprocess.Popen(
                        conf.argv(st.argv),
                        cwd=cwd or ws.root,
                        env={**env, **(st.env or {})},
                        stdin=stdin,
                        stdout=stdout,
                        stderr=stderr,
                        start_new_session=True,
                        close_fds=True,
                        preexec_fn=conf.preexec,
                        pass_fds=conf.pass_fds(),
                    )
                    p.reaper = conf.reaper
                except (OSError, subprocess.SubprocessError) as e:
                    raise ToolError(
                        f"could not start {os.path.basename(st.argv[0])}: {getattr(e, 'strerror', None) or e}"
                    ) from e
                finally:
                    if opened is not None:
                        opened.close()
                    if prev is not None:
                        prev.close()
                        prev = None
                procs.append(p)
                prev = p.stdout if (not last and st.stdout == "out") else None
                if last and st.stdout != "out":
                    prev = None
        finally:
            os.close(err_w)
            conf.close()
        last_proc = procs[-1]
        buf, ebuf = bytearray(), bytearray()
        state = {"cut": False}
        readers = [threading.Thread(target=_drain, args=(errf, ebuf, max_bytes, None, state, procs), daemon=True)]
        if last_proc.stdout is not None:
            readers.append(
                threading.Thread(
                    target=_drain, args=(last_proc.stdout, buf, max_bytes, max_lines, state, procs), daemon=True
                )
            )
        for t in readers:
            t.start()
        for t in readers:
            t.join(max(0.0, deadline - time.monotonic()))
        timed_out = any(t.is_alive() for t in readers)
        if not timed_out:
            for p in procs:
                try:
                    p.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    break
        _kill(procs)  # also what a finished stage left behind in its group
        for t in readers:
            t.join(2)
        for p in procs:
            try:
                p.wait(timeout=5 if p.reaper else 2)
            except subprocess.TimeoutExpired:  # pragma: no cover - a reaper that does not finish
                os.killpg(p.pid, signal.SIGKILL)
        rc = None if (timed_out or state["cut"]) else last_proc.returncode
        return ProcResult(bytes(buf), bytes(ebuf), rc, timed_out=timed_out, cut=state["cut"])
    finally:
        _kill(procs)
        for p in procs:
            if p.stdout is not None:
                p.stdout.close()
        errf.close()


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
