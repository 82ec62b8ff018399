"""Issue 25's acceptance, tried by a red team with attacks the other suites do not have: a lying
model's argument values (NaN, infinities, NUL, over-long names, JSON nested past the recursion
limit) and a repository whose files are replaced while a call runs. Each must end in a named,
one-line error observation (never a "failed unexpectedly" exception text), leak nothing, write
nothing and not hang; with both walls and with the first wall alone (``FASBENCH_CONFINE=off``)."""

from __future__ import annotations

import os
import threading

import pytest
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import make_toolset
from fasbench.tools.bash import pipeline as sandbox


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("red")
    make_repo(b)
    return b


@pytest.fixture(params=["both walls", "first wall alone"])
def walls(request, monkeypatch):
    if request.param == "first wall alone":
        monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
        monkeypatch.setenv("FASBENCH_CONFINE", "off")
    return request.param


NAN, INF = float("nan"), float("inf")
LONG = "x" * 5000  # longer than NAME_MAX and PATH_MAX

HOSTILE_CALLS = [
    ("fastcontext", "Grep", {"pattern": "Login", "-A": NAN}),
    ("fastcontext", "Grep", {"pattern": "Login", "-B": INF}),
    ("fastcontext", "Grep", {"pattern": "Login", "-C": -INF}),
    ("fastcontext", "Grep", {"pattern": "Login", "head_limit": INF}),
    ("fastcontext", "Grep", {"pattern": "\x00"}),
    ("fastcontext", "Grep", {"pattern": "Login", "glob": "\x00"}),
    ("fastcontext", "Grep", {"pattern": "Login", "type": "\x00"}),
    ("fastcontext", "Grep", {"pattern": "Login", "path": LONG}),
    ("fastcontext", "Glob", {"directory": ".", "pattern": "\x00"}),
    ("fastcontext", "Glob", {"directory": LONG, "pattern": "*"}),
    ("fastcontext", "Read", {"path": LONG}),
    ("relace", "view_file", {"path": LONG, "view_range": [1, 10]}),
    ("relace", "view_directory", {"path": LONG, "include_hidden": False}),
    (
        "relace",
        "grep_search",
        {"query": "\x00", "case_sensitive": True, "exclude_pattern": None, "include_pattern": None},
    ),
    (
        "relace",
        "grep_search",
        {"query": "Login", "case_sensitive": True, "exclude_pattern": None, "include_pattern": "\x00"},
    ),
    ("relace", "view_file", "[" * 100_000 + "]" * 100_000),  # valid JSON past Python's recursion limit
]


@pytest.mark.parametrize(
    "toolset,name,args", HOSTILE_CALLS, ids=[f"{t}-{n}-{i}" for i, (t, n, _) in enumerate(HOSTILE_CALLS)]
)
def test_hostile_argument_values_get_a_named_error(base, walls, toolset, name, args):
    ts = make_toolset(toolset, base / "repo")
    before = snapshot(base)
    out, err = ts.call(name, args)
    assert err or toolset == "fastcontext", out  # the released Read and Glob answer a missing path as text
    assert "failed unexpectedly" not in out and "Traceback" not in out, out
    assert len(out.splitlines()) == 1, out
    assert SECRET not in out
    assert snapshot(base) == before


def _flipper(root, outside, fifo: bool):
    """A thread replacing ``root/x`` by turns with a regular file and a symlink out (or a FIFO)."""
    stop = threading.Event()

    def run():
        while not stop.is_set():
            (root / "x.tmp").write_text("plain\n")
            os.replace(root / "x.tmp", root / "x")
            if fifo:
                os.mkfifo(root / "x.tmp")
            else:
                os.symlink(outside, root / "x.tmp")
            os.replace(root / "x.tmp", root / "x")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return stop, t


SWAP_RACES = [  # (tool set, tool, arguments, calls, a FIFO swapped in instead of a symlink out)
    ("relace", "bash", {"command": "cat < x"}, 300, False),
    ("relace", "bash", {"command": "cat < x"}, 300, True),
    ("fastcontext", "Read", {"path": "x"}, 1000, False),
]


@pytest.mark.parametrize(
    "toolset,tool,args,n,fifo", SWAP_RACES, ids=["stdin symlink out", "stdin fifo", "release Read"]
)
def test_file_replaced_mid_call_is_not_followed_and_never_blocks(tmp_path, walls, toolset, tool, args, n, fifo):
    """A file the harness opens in its own process (no Landlock there), swapped for a symlink out (or a
    FIFO) between the check and the open: ``cat < x`` (the checker resolves ``x``, the harness opens it
    for the command's standard input) read the outside file (3 leaks in 100 calls) and blocked for ever
    on a FIFO; the release's ``Read`` opened the checked path with ``open()``."""
    root = tmp_path / "repo"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    ts = make_toolset(toolset, root)
    stop, flipper = _flipper(root, secret, fifo)
    outs: list[str] = []

    def calls():
        for _ in range(n):
            outs.append(ts.call(tool, args)[0])

    worker = threading.Thread(target=calls, daemon=True)
    worker.start()
    worker.join(120)  # hang guard: 300 bash calls take ~5 s, 1000 Reads ~10 s
    stop.set()
    flipper.join(10)
    assert not worker.is_alive(), f"{tool} blocked after {len(outs)} calls"
    assert not any(SECRET in o for o in outs), [o for o in outs if SECRET in o][:1]
    (root / "x").unlink()
    (root / "x").write_text("plain\n")
    out, err = ts.call(tool, args)
    assert "plain" in out and not err, out
    if tool == "bash":
        assert out == "plain\n"


@pytest.mark.parametrize("bounds", [[1, INF], [INF, 1], [NAN, 2], [None, None], ["1", "2"]])
def test_judge_contents_of_a_range_that_is_not_two_integers(base, bounds):
    """A report read from a file (a trace, ``--report``) may hold ``1e999`` (infinity in Python's json),
    NaN or null as a line bound; the judge's contents give the release's read error for that citation
    (``int(inf)`` was an OverflowError out of ``citation_contents``)."""
    from fasbench.scoring.judge import UNREADABLE, citation_contents

    out = citation_contents({"src/pkg/auth.py": [bounds], "link_out_file": [[1, 2]]}, base / "repo")
    assert out.count("```") == 4 and UNREADABLE in out and SECRET not in out, out


def test_view_directory_subdirectory_replaced_by_a_symlink_out_is_not_entered(tmp_path, walls):
    """view_directory lists in the harness's own process (no Landlock there): a subdirectory swapped
    for a symlink to an outside directory after it was listed was then entered by path, and the
    outside names came back (30 in 3000 calls)."""
    root, out = tmp_path / "repo", tmp_path / "out"
    (root / "d").mkdir(parents=True)
    out.mkdir()
    (out / f"{SECRET}-name").write_text("x")
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            os.mkdir(root / "d" / "sub")
            os.rmdir(root / "d" / "sub")
            os.symlink(out, root / "d" / "sub")
            os.unlink(root / "d" / "sub")

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    ts = make_toolset("relace", root)
    try:
        outs = [ts.call("view_directory", {"path": "d", "include_hidden": False})[0] for _ in range(3000)]
    finally:
        stop.set()
        t.join(10)
    assert not any(SECRET in o for o in outs), [o for o in outs if SECRET in o][:1]
    (root / "d" / "sub").mkdir()
    (root / "d" / "sub" / "a.py").write_text("x\n")
    assert ts.call("view_directory", {"path": "d", "include_hidden": False}) == ("sub/\nsub/a.py", False)
