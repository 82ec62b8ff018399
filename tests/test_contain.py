"""fasbench.base.contain: the one containment rule and its bounded readers (issue 25)."""

from __future__ import annotations

import io
import os

import pytest

from fasbench.base import contain
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.pipeline import resolve


@pytest.fixture()
def root(tmp_path):
    r = tmp_path / "ws"
    (r / "src").mkdir(parents=True)
    (r / "src" / "a.py").write_text("one\ntwo\nthree")
    (tmp_path / "secret.txt").write_text("s\n")
    os.symlink(tmp_path / "secret.txt", r / "out_link")
    os.symlink(r / "src" / "a.py", r / "in_link")
    os.mkfifo(r / "fifo")
    return r


def test_spellings_map_as_the_tools_do(root):
    for p in ("src/a.py", "/src/a.py", "./src/a.py", "/repo/src/a.py", f"{root}/src/a.py", "in_link"):
        assert contain.real_path(root, p) == str(root / "src" / "a.py"), p
        assert contain.read_bytes(root, p) == (b"one\ntwo\nthree", False)
        assert str(resolve(Workspace(root), p)) == str(root / "src" / "a.py")


def test_named_refusals(root, tmp_path):
    with pytest.raises(contain.NoSuchFile):  # an absolute path names a path under the root, as in the tools
        contain.open_file(root, str(tmp_path / "secret.txt"))
    for p in (
        "../secret.txt",
        "/repo/../secret.txt",
        "out_link",
        "../ws/../secret.txt",
        "../../../../etc/passwd",
        "../nonexistent/anything",
    ):
        with pytest.raises(contain.OutsideRoot):
            contain.open_file(root, p)
        with pytest.raises(ToolError, match="outside the workspace"):  # the tools keep their message
            resolve(Workspace(root), p)
    with pytest.raises(contain.NotARegularFile, match="a FIFO"):
        contain.open_file(root, "fifo")
    with pytest.raises(contain.NotARegularFile, match="a directory"):
        contain.open_file(root, "src")
    with pytest.raises(contain.NoSuchFile):
        contain.open_file(root, "src/missing.py")
    with pytest.raises(contain.PathRefused, match="NUL"):
        contain.open_file(root, "src/a.py\x00")
    assert contain.file_key(root, "fifo") is None and contain.file_key(root, "out_link") is None
    assert str(contain.OutsideRoot("../x", "outside")).count("\n") == 0


def test_bounded_reads(root):
    (root / "big.txt").write_bytes(b"x" * 5000 + b"\nend\n")
    assert contain.read_bytes(root, "big.txt", 100) == (b"x" * 100, True)
    assert contain.count_lines(root, "big.txt") == 2 and contain.count_lines(root, "big.txt", 100) is None
    assert list(contain.iter_lines(root, "big.txt", max_line_bytes=4)) == [b"xxxx", b"end\n"]
    r = contain.LineReader(io.BytesIO(b"a\n" * 100), 10, max_bytes=20)
    assert len(list(r)) == 10 and r.exhausted
    for data in (b"", b"a\nbb\n", b"a\nbb", b"\n\n", b"abc\ndefghijklmnop"):
        for keep in (1, 3, 100):
            assert list(contain.LineReader(io.BytesIO(data), keep)) == [ln[:keep] for ln in data.splitlines(True)]
    lr = contain.LineReader(io.BytesIO(b"1\n2\n3\n4"))
    assert next(lr) == b"1\n" and lr.count_rest() == 3
