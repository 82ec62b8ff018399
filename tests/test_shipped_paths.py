"""Shipped data holds no path of the machine that built it (issue 14): the offline manifest stores
corpus roots relative to the corpora cache and resolves them at load."""

import gzip
import json
import re
from pathlib import Path

import pytest

from fasbench.base.paths import cache_dir, data_dir, repo_root
from fasbench.data import offline_manifest
from fasbench.data.corpus import portable_root, resolve_root, root_dir

# fasbench's own cache layout, wherever the cache lives (the manifest used to hold
# /work/main/.cache/corpora/sdist/...)
CACHE_LAYOUT = re.compile(rb"/\.cache/corpora/|/corpora/(?:sdist|git)/")


def _content(p: Path) -> bytes:
    b = p.read_bytes()
    return gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b


def test_no_shipped_file_holds_a_machine_path():
    """Every file under data/ (gz decompressed): no path of this checkout or of its cache, nothing
    in fasbench's cache layout. Third-party texts (issue reports, trajectories) may name their
    authors' home folders; those are data, not paths of the machine that built the files."""
    needles = {str(repo_root()).encode(), str(cache_dir()).encode(), str(Path("/work/main")).encode()}
    bad = []
    for p in sorted(data_dir().rglob("*")):
        if not p.is_file():
            continue
        b = _content(p)
        hits = [n.decode() for n in needles if n in b] + [m.decode() for m in CACHE_LAYOUT.findall(b)[:1]]
        if hits:
            bad.append(f"{p.relative_to(data_dir())}: {hits}")
    assert not bad, "\n".join(bad)


def test_task_files_store_no_absolute_roots():
    for p in sorted((data_dir() / "tasks").glob("*.jsonl.gz")):
        for line in _content(p).decode().splitlines():
            root = json.loads(line).get("root")
            assert root is None or not Path(root).is_absolute(), f"{p.name}: root {root!r}"


def test_manifest_roots_resolve_under_this_machines_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    man = offline_manifest()
    located = [r for r in man.values() if r["located"]]
    assert located and all(r["root"].startswith(str(tmp_path / "cache" / "corpora") + "/") for r in located)
    assert all(r["root"] is None for r in man.values() if not r["located"])


def test_portable_root_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "c"))
    tree = root_dir() / "sdist" / "pkg-1.0"
    tree.mkdir(parents=True)
    assert portable_root(tree) == "sdist/pkg-1.0" and resolve_root("sdist/pkg-1.0") == str(tree)
    assert portable_root(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")  # outside the cache: kept
    assert resolve_root(str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")
    assert portable_root(None) is None and resolve_root(None) is None


@pytest.mark.parametrize("name", ["offline_manifest.jsonl.gz"])
def test_manifest_file_is_relative(name):
    rows = [json.loads(x) for x in _content(data_dir() / "tasks" / name).decode().splitlines()]
    assert sum(1 for r in rows if r["root"]) > 100
    assert all(r["root"] is None or r["root"].startswith("sdist/") for r in rows)
