"""The one containment rule for every file fasbench reads on a model's or a task's behalf.

A path a model, a report, a trace, a gold or a task names is read only through this module: the
tools (``fasbench.tools.bash.pipeline.resolve``), the judge's cited contents, the hand-off's cited code,
line counts of scoring with a root (``fasbench.base.lines``), the replay overlay, the best-of-N
verifier, the entity and SWE-Explore columns. The rules, the tools' own:

- **spelling** (:func:`relative`): the path as a model writes it (``src/a.py``, ``/src/a.py``,
  ``./src/a.py``, ``/repo/src/a.py`` when the root has no ``repo`` folder, or the absolute root
  path) names a path under the root;
- **inside** (:func:`real_path`): its ``os.path.realpath`` stays under the root's real path (``..``
  and symlinks may not leave it); else :class:`OutsideRoot`, before anything is opened or its
  existence tested, so that a refusal says nothing about the file system outside;
- **regular files only** (:func:`open_file`): a FIFO, device, socket or directory is refused
  (:class:`NotARegularFile`) by ``os.stat`` before the open and by ``fstat`` of the opened file
  (opened ``O_NONBLOCK | O_NOFOLLOW``: a FIFO swapped in never blocks, a symlink swapped in for the
  last component is refused), and the opened file's own path (``/proc/self/fd``) must still lie
  under the root;
- **bounded reads** (:func:`read_bytes`, :func:`iter_lines`, :func:`count_lines`): at most
  ``max_bytes`` bytes of a file (:data:`MAX_READ_BYTES` by default) and at most ``max_line_bytes``
  bytes kept of any line; a 2 GB sparse file costs one cap of reading, never its size in memory.

Every refusal is a :class:`PathRefused` (one line, ``str(e)``), which callers turn into their own
text (the judge's released ``Error: the file does not exist.`` / ``Error: failed to read the file.``).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from functools import lru_cache
from typing import BinaryIO

MAX_READ_BYTES = 64 << 20  # bytes one read of a file may take (as the tools' Limits.max_read_bytes)
_CHUNK = 1 << 20
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symlink",
}
_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class PathRefused(ValueError):
    """A path that is not read: ``path`` as given, ``why`` in words (``str(e)`` is one line)."""

    def __init__(self, path: object, why: str):
        self.path, self.why = path, why
        super().__init__(f"{path!r}: {why}")


class OutsideRoot(PathRefused):
    """The path (spelled with ``..``, absolute, or through a symlink) leaves the root."""


class NotARegularFile(PathRefused):
    """A FIFO, device, socket or directory."""


class NoSuchFile(PathRefused):
    """Nothing by that name under the root."""


class Unreadable(PathRefused):
    """The file exists inside the root but reading it failed (permissions, I/O)."""


def root_path(root: str | os.PathLike) -> str:
    """The root's real path (symlinks resolved; cached for the process: roots are fixed)."""
    return _root_path(os.fspath(root))


@lru_cache(maxsize=256)
def _root_path(root: str) -> str:
    return os.path.realpath(root)


def is_inside(root: str | os.PathLike, real: str | os.PathLike) -> bool:
    """Whether real path ``real`` is ``root`` or lies under it (both already real paths)."""
    real, rs = os.fspath(real), os.fspath(root)
    return real == rs or real.startswith(rs.rstrip("/") + "/")


def relative(root: str | os.PathLike, path: str) -> str:
    """The root-relative part of a path spelled in any accepted way (the tools' spelling)."""
    p = path.strip()
    rs = os.fspath(root)
    if p == rs or p.startswith(rs + "/"):
        return p[len(rs) :].lstrip("/")
    if (p == "/repo" or p.startswith("/repo/")) and not os.path.isdir(os.path.join(rs, "repo")):
        p = p[len("/repo") :]
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/")


def real_path(root: str | os.PathLike, path: str) -> str:
    """The real path of ``path`` under ``root``; :class:`OutsideRoot` when it leaves it (tested
    before any existence check), :class:`PathRefused` for a path that is not a string or holds NUL."""
    if not isinstance(path, str):
        raise PathRefused(path, f"a path must be a string, not {type(path).__name__}")
    if "\x00" in path:
        raise PathRefused(path, "the path contains a NUL character")
    base = root_path(root)
    real = os.path.realpath(os.path.join(base, relative(base, path)))
    if not is_inside(base, real):
        raise OutsideRoot(path, "outside the repository ('..', absolute paths and symlinks may not leave it)")
    return real


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


def open_file(root: str | os.PathLike, path: str) -> BinaryIO:
    """The regular file ``path`` under ``root``, opened for binary reading (close it; a ``with``
    block does). Raises :class:`OutsideRoot`, :class:`NoSuchFile`, :class:`NotARegularFile` or
    :class:`Unreadable`; never blocks (a FIFO is refused, not opened for a writer)."""
    real = real_path(root, path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise NoSuchFile(path, "no such file in the repository") from None
    except OSError as e:
        raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(path, f"not a regular file ({_kind(st.st_mode)})")
    try:
        fd = os.open(real, _FLAGS)
    except FileNotFoundError:
        raise NoSuchFile(path, "no such file in the repository") from None
    except OSError as e:  # ELOOP: the last component became a symlink after the check
        raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, f"not a regular file ({_kind(st.st_mode)})")
        try:  # the file actually opened, whatever was swapped in along the path meanwhile
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            opened = None
        if opened is not None and opened.startswith("/") and not is_inside(root_path(root), opened):
            raise OutsideRoot(path, "outside the repository (the path changed while it was opened)")
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(root: str | os.PathLike, path: str, max_bytes: int = MAX_READ_BYTES) -> tuple[bytes, bool]:
    """The first ``max_bytes`` bytes of the file and whether it holds more (read in chunks, so a huge
    sparse file costs ``max_bytes``, not its size)."""
    with open_file(root, path) as f:
        parts, n = [], 0
        try:
            while n <= max_bytes and (chunk := f.read(min(_CHUNK, max_bytes + 1 - n))):
                parts.append(chunk)
                n += len(chunk)
        except OSError as e:
            raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None
    data = b"".join(parts)
    return data[:max_bytes], len(data) > max_bytes


class LineReader:
    """Lines of an open binary file, bounded: each line's first ``max_line_bytes`` bytes (the rest
    is read past in chunks, not kept), at most ``max_bytes`` read in all (then ``exhausted``)."""

    def __init__(self, f: BinaryIO, max_line_bytes: int = 1 << 16, max_bytes: int = MAX_READ_BYTES):
        self.f, self.keep, self.cap = f, max(1, max_line_bytes), max_bytes
        self.read = 0
        self.exhausted = False
        self._buf, self._pos = b"", 0
        self._eof = False

    def _fill(self) -> bool:
        if self._eof:
            return False
        if self.read >= self.cap:
            self.exhausted = True
            return False
        chunk = self.f.read(min(_CHUNK, self.cap - self.read))
        if not chunk:
            self._eof = True
            return False
        self.read += len(chunk)
        self._buf, self._pos = chunk, 0
        return True

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        """The next line, its newline kept when it ends with one and was not cut."""
        parts, kept, cut = [], 0, False
        while True:
            i = self._buf.find(b"\n", self._pos)
            end = len(self._buf) if i < 0 else i + 1
            if not cut and end > self._pos:
                take = min(end - self._pos, self.keep - kept)
                parts.append(self._buf[self._pos : self._pos + take])
                kept += take
                cut = take < end - self._pos
            self._pos = end
            if i >= 0:
                return b"".join(parts)
            if not self._fill():
                if parts:
                    return b"".join(parts)
                raise StopIteration

    def count_rest(self) -> int:
        """Lines left after the last one returned (a last line without a newline counts), counted in
        chunks within the same byte cap (a lower bound when ``exhausted``)."""
        n, last = 0, b""
        while True:
            rest = self._buf[self._pos :]
            self._pos = len(self._buf)
            if rest:
                n += rest.count(b"\n")
                last = rest[-1:]
            if not self._fill():
                return n + (bool(last) and last != b"\n")


def iter_lines(
    root: str | os.PathLike, path: str, max_line_bytes: int = 1 << 16, max_bytes: int = MAX_READ_BYTES
) -> Iterator[bytes]:
    """The file's lines as bytes (see :class:`LineReader`), opened through :func:`open_file`."""
    with open_file(root, path) as f:
        try:
            yield from LineReader(f, max_line_bytes, max_bytes)
        except OSError as e:
            raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None


def count_lines(root: str | os.PathLike, path: str, max_bytes: int = MAX_READ_BYTES) -> int | None:
    """Lines of the file (a last line without a newline counts); None when it is longer than
    ``max_bytes`` (then its length is not known)."""
    n, last, read = 0, b"\n", 0
    with open_file(root, path) as f:
        try:
            while chunk := f.read(min(_CHUNK, max_bytes + 1 - read)):
                read += len(chunk)
                if read > max_bytes:
                    return None
                n += chunk.count(b"\n")
                last = chunk[-1:]
        except OSError as e:
            raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None
    return n + (last != b"\n")


def file_key(root: str | os.PathLike, path: str) -> tuple[str, int, int] | None:
    """``(real path, size, mtime_ns)`` of a regular file inside the root, for caches keyed by the
    file's state; None when it is missing, outside, or not a regular file (nothing is opened)."""
    try:
        real = real_path(root, path)
        st = os.stat(real)
    except (PathRefused, OSError):
        return None
    return (real, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """A file fasbench is given by name (a run's ``traces.jsonl`` or ``run.json``, a trajectory, a
    notebook, a tasks file), opened for binary reading only when it is a regular file: a FIFO,
    device, socket or folder is :class:`NotARegularFile` by ``stat`` before the open and ``fstat``
    after it, and the open never blocks (``O_NONBLOCK``). Symlinks are followed (the caller chose
    the path; no root applies). Missing: :class:`NoSuchFile`; else :class:`Unreadable`."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, f"not a regular file ({_kind(st.st_mode)})")
        fd = os.open(path, _FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise NoSuchFile(path, "no such file") from None
    except OSError as e:
        raise Unreadable(path, f"cannot be read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, f"not a regular file ({_kind(st.st_mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, max_bytes: int = MAX_READ_BYTES) -> tuple[bytes, bool]:
    """The first ``max_bytes`` bytes of a file given by name (:func:`open_regular`'s rules) and
    whether it holds more."""
    with open_regular(path) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise Unreadable(os.fspath(path), f"cannot be read ({e.strerror or e})") from None
    return data[:max_bytes], len(data) > max_bytes


def read_json(path: str | os.PathLike, max_bytes: int = 16 << 20, want: type = object) -> object:
    """The JSON document of a file given by name (:func:`open_regular`'s rules, at most
    ``max_bytes``), of type ``want``; one-line :class:`ValueError` naming the file and what is wrong."""
    try:
        data, more = read_regular(path, max_bytes)
        if more:
            raise ValueError(f"larger than {max_bytes} bytes")
        obj = json.loads(data)
        if not isinstance(obj, want):
            raise ValueError(f"a JSON {type(obj).__name__}, not a {want.__name__}")
        return obj
    except PathRefused as e:
        raise ValueError(f"{os.fspath(path)}: {e.why}") from None
    except (ValueError, RecursionError) as e:  # invalid JSON or UTF-8, nested too deeply, too large
        raise ValueError(f"{os.fspath(path)}: not a JSON file ({type(e).__name__}: {e})") from None
