"""Hostile sdists through the real corpus build (fasbench.data.corpora.with_corpora, offline mode): real
archives crafted here (tar.gz with ../ slip, an absolute path, symlink and hard link out, a device, a
FIFO, a decompression bomb; a zip slip and a zip bomb; a file that is no archive) are put where the
build finds a downloaded sdist (``<cache>/corpora/downloads/<name>-<release>/``, the cache the build
fills itself), so nothing is fetched. Each is refused with a one-line ``bad-archive`` reason in the
skip list, nothing half-built is left in the cache, and the build goes on to the next task."""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from fasbench.data import corpus
from fasbench.data.corpora import with_corpora
from fasbench.records import Gold, Task, iter_jsonl

MOD = "def f():\n    return 1\n# end\n"
PATCH = (
    "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
    "@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return 2\n # end\n"
)


class Zeros(io.RawIOBase):
    """``n`` zero bytes, read lazily (a 200 MB member without 200 MB in memory)."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def _info(name, **kw):
    m = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(m, k, v)
    return m


def _tar(path: Path, top: str, members: list) -> None:
    with tarfile.open(path, "w:gz") as t:
        t.addfile(_info(f"{top}/pkg/mod.py", size=len(MOD)), io.BytesIO(MOD.encode()))
        for m, data in members:
            t.addfile(m, data)


def _zip(path: Path, top: str, extra: dict) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{top}/pkg/mod.py", MOD)
        for name, data in extra.items():
            z.writestr(name, data)


def _zlink(name: str) -> zipfile.ZipInfo:
    z = zipfile.ZipInfo(name)
    z.external_attr = (stat.S_IFLNK | 0o777) << 16
    return z


BAD = {  # case -> (archive suffix, builder(path, top), the reason's words)
    "slip": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/../../evil.py", size=1), io.BytesIO(b"x"))]),
        "escapes the tree (..)",
    ),
    "absolute": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info("/tmp/fasbench-abs-evil", size=1), io.BytesIO(b"x"))]),
        "has an absolute path",
    ),
    "symlink-out": (
        ".tar.gz",
        lambda p, top: _tar(
            p, top, [(_info(f"{top}/out", type=tarfile.SYMTYPE, linkname="../../../../etc/passwd"), None)]
        ),
        "links outside the tree",
    ),
    "symlink-abs": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/out", type=tarfile.SYMTYPE, linkname="/etc/passwd"), None)]),
        "is a link to an absolute path",
    ),
    "hardlink-out": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/hl", type=tarfile.LNKTYPE, linkname="/etc/passwd"), None)]),
        "is a link to an absolute path",
    ),
    "device": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3), None)]),
        "is a device or FIFO",
    ),
    "fifo": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/fifo", type=tarfile.FIFOTYPE), None)]),
        "is a device or FIFO",
    ),
    "tar-bomb": (
        ".tar.gz",
        lambda p, top: _tar(p, top, [(_info(f"{top}/zeros", size=200 << 20), Zeros(200 << 20))]),
        "is 209715200 bytes, over the limit of 10485760",
    ),
    "not-an-archive": (
        ".tar.gz",
        lambda p, top: p.write_text("<!DOCTYPE html><html>404 Not Found</html>\n"),
        "not a readable tar archive",
    ),
    "zip-slip": (".zip", lambda p, top: _zip(p, top, {"../../evil.py": "x"}), "escapes the tree (..)"),
    "zip-symlink": (
        ".zip",
        lambda p, top: _zip(p, top, {_zlink(f"{top}/out"): "/etc/passwd"}),
        "is a link or a special file",
    ),
    "zip-bomb": (
        ".zip",
        lambda p, top: _zip(p, top, {f"{top}/zeros": bytes(200 << 20)}),
        "is 209715200 bytes, over the limit of 10485760",
    ),
}


def _task(i: int, repo_short: str, version: str) -> Task:
    return Task(
        id=f"t{i}",
        query="q",
        repo=f"o/{repo_short}",
        version=version,
        gold=Gold(edited={"pkg/mod.py": [[1, 3]]}),
        meta={"patch": PATCH},
    )


def test_hostile_sdists_are_skipped_with_a_reason_and_the_build_goes_on(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FASBENCH_CACHE", str(cache))
    monkeypatch.setattr("fasbench.data.archive.MAX_MEMBER_BYTES", 10 << 20)  # low, so the test writes MBs, not GBs
    picks = sorted(corpus.picks().items())[: len(BAD) + 1]
    tasks, wants = [], {}
    for i, ((case, (ext, build, want)), ((repo_short, version), (name, release))) in enumerate(
        zip([*BAD.items(), ("good", (".tar.gz", lambda p, top: _tar(p, top, []), None))], picks)
    ):
        dl = cache / "corpora" / "downloads" / f"{name.lower()}-{release}"
        dl.mkdir(parents=True)
        build(dl / f"{name}-{release}{ext}", f"{name}-{release}")
        t = _task(i, repo_short, version)
        tasks.append(t)
        wants[t.id] = (case, want, f"{name.lower()}-{release}")
    skipped = tmp_path / "skipped.jsonl"
    got = with_corpora(tasks, mode="offline", use_manifest=False, skipped=skipped, progress=False)
    # the good task, after every bad one, has its corpus
    assert [t.id for t in got.tasks] == [tasks[-1].id]
    assert (Path(got.tasks[0].root) / "pkg/mod.py").read_text() == MOD
    rows = {r["task_id"]: r for r in got.skipped}
    assert set(rows) == {t.id for t in tasks[:-1]}
    for tid, (case, want, key) in wants.items():
        if want is None:
            continue
        r = rows[tid]
        assert r["reason"] == "bad-archive" and want in r["detail"], (case, r)
        assert "\n" not in r["detail"] and "Traceback" not in r["detail"] and str(tmp_path) not in r["detail"], (
            case,
            r,
        )
        sdist = cache / "corpora" / "sdist"
        assert not (sdist / key).exists(), case  # nothing half-built
        assert not list(sdist.glob(f"{key}.tmp*")), case
        assert json.loads((sdist / f"{key}.json").read_text())["reason"] == "bad-archive"
    assert [r["reason"] for r in iter_jsonl(skipped)] == ["bad-archive"] * len(BAD)
    assert not Path("/tmp/fasbench-abs-evil").exists() and not (cache / "corpora" / "evil.py").exists()
    # a rerun refuses the same files again from their recorded reason, without unpacking them
    again = with_corpora(tasks, mode="offline", use_manifest=False, progress=False)
    assert [r["detail"] for r in again.skipped] == [r["detail"] for r in got.skipped]


@pytest.mark.parametrize(
    "limit,want", [("MAX_UNPACKED_BYTES", "unpacks to more than 1000 bytes"), ("MAX_MEMBERS", "more than 1000 members")]
)
def test_total_size_and_member_count_are_bounded(tmp_path, monkeypatch, limit, want):
    from fasbench.data.archive import ArchiveError, unpack

    monkeypatch.setattr(f"fasbench.data.archive.{limit}", 1000)
    arc = tmp_path / "many-1.0.tar.gz"
    _tar(arc, "many-1.0", [(_info(f"many-1.0/f{i}", size=10), io.BytesIO(b"0123456789")) for i in range(1500)])
    with pytest.raises(ArchiveError, match=want):
        unpack(arc, tmp_path / "tree")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many-1.0.tar.gz"]  # nothing half-built
