"""Unpack a source archive (an sdist: tar.gz, tgz, tar.bz2 or zip) within bounds, or refuse it with one line.

The archive comes from a package index, so it is read as hostile: every member is checked before
it is written (name, type, declared size), a zip member is counted again as it inflates, and the
tree is built in a scratch folder beside its target that is removed whatever happens
(``fasbench.base.paths.building``), so that a refused or interrupted archive leaves nothing half-built.
``fasbench.data.corpus`` turns an :class:`ArchiveError` into the ``bad-archive`` drop reason.
"""

from __future__ import annotations

import gzip
import lzma
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path

from fasbench.base.paths import building, replace_dir

# the bounds (the largest sdist of the shipped picks unpacks to ~60 MB in ~6k files)
MAX_UNPACKED_BYTES = 2 << 30  # all members together
MAX_MEMBER_BYTES = 512 << 20  # one member
MAX_MEMBERS = 200_000  # files, folders and links


class ArchiveError(ValueError):
    """The archive is refused; the message names the archive and why, on one line."""


class _Budget:
    """The unpacking bounds of one archive; ``add`` refuses the member that passes one."""

    def __init__(self, archive: Path):
        self.archive, self.members, self.bytes = archive.name, 0, 0

    def refuse(self, why: str) -> ArchiveError:
        return ArchiveError(f"{self.archive}: {why}")

    def add(self, name: str, size: int) -> None:
        self.members += 1
        self.bytes += max(0, size)
        if self.members > MAX_MEMBERS:
            raise self.refuse(f"more than {MAX_MEMBERS} members")
        if size > MAX_MEMBER_BYTES:
            raise self.refuse(f"member {name!r} is {size} bytes, over the limit of {MAX_MEMBER_BYTES}")
        if self.bytes > MAX_UNPACKED_BYTES:
            raise self.refuse(f"unpacks to more than {MAX_UNPACKED_BYTES} bytes (at member {name!r})")

    def check_name(self, name: str) -> None:
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
            raise self.refuse(f"member {name!r} has an absolute path")
        if ".." in parts:
            raise self.refuse(f"member {name!r} escapes the tree (..)")


_FILTER_WHY = {
    "AbsoluteLinkError": "is a link to an absolute path",
    "LinkOutsideDestinationError": "links outside the tree",
    "OutsideDestinationError": "escapes the tree",
    "SpecialFileError": "is a device or FIFO",
    "AbsolutePathError": "has an absolute path",
}


def _untar(archive: Path, tmp: Path, budget: _Budget) -> None:
    with tarfile.open(archive) as t:
        for m in t:  # streamed: each member is checked before it is written
            budget.check_name(m.name)
            budget.add(m.name, m.size if m.isreg() else 0)
            try:
                t.extract(m, tmp, filter="data")
            except tarfile.FilterError as e:
                why = _FILTER_WHY.get(type(e).__name__, type(e).__name__)
                raise budget.refuse(f"member {m.name!r} {why}") from None


def _unzip(archive: Path, tmp: Path, budget: _Budget) -> None:
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            budget.check_name(info.filename)
            if stat.S_IFMT(info.external_attr >> 16) not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise budget.refuse(f"member {info.filename!r} is a link or a special file")
            budget.add(info.filename, info.file_size)
            out = tmp / info.filename
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as r, open(out, "wb") as w:  # counted as it is inflated: a lying size stops here
                n = 0
                while chunk := r.read(1 << 20):
                    n += len(chunk)
                    if n > info.file_size:
                        raise budget.refuse(
                            f"member {info.filename!r} inflates past its declared {info.file_size} bytes"
                        )
                    w.write(chunk)


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack the archive into ``dest`` (built aside, moved into place only when whole). Refused with
    an ``ArchiveError`` (one line): a file that is not a tar or zip archive, a member with an absolute
    path or ``..``, a link out of the tree or to an absolute path, a device or FIFO, more than
    ``MAX_MEMBERS`` members, a member over ``MAX_MEMBER_BYTES`` or a total over ``MAX_UNPACKED_BYTES``
    (checked from each member's header before it is written, and as a zip member inflates)."""
    budget = _Budget(archive)
    with building(dest) as tmp:
        try:
            (_unzip if archive.name.endswith(".zip") else _untar)(archive, tmp, budget)
        except (
            tarfile.TarError,
            zipfile.BadZipFile,
            gzip.BadGzipFile,
            EOFError,
            zlib.error,
            lzma.LZMAError,
            KeyError,
        ) as e:  # KeyError: tarfile's hard link to a member that is not there
            kind = "zip" if archive.name.endswith(".zip") else "tar"
            raise budget.refuse(
                " ".join(f"not a readable {kind} archive ({type(e).__name__}: {e})".split())[:200]
            ) from None
        tops = list(tmp.iterdir())
        replace_dir(tops[0] if len(tops) == 1 and tops[0].is_dir() else tmp, dest)
    return dest
