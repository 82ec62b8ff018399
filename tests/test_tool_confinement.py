"""The second wall (fasbench/tools/bash/confine.py), tested under the first: commands the bash checker
would never accept are run directly through ``run_pipeline`` to show what the OS confinement
alone stops. Parts the machine does not offer are skipped with the reason."""

from __future__ import annotations

import os
import time

import pytest
from procs_fixture import procs_with
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import ToolLimits
from fasbench.tools.base import Workspace
from fasbench.tools.bash import pipeline as sandbox
from fasbench.tools.bash.confine import status
from fasbench.tools.bash.pipeline import Stage, run_pipeline

ST = status()
needs_seccomp = pytest.mark.skipif(not ST["seccomp"], reason="no seccomp filter on this machine/architecture")
needs_landlock = pytest.mark.skipif(not ST["landlock_abi"], reason="Landlock is not available in this kernel")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("confine")
    make_repo(b)
    return b


@pytest.fixture()
def ws(base):
    return Workspace(base / "repo", ToolLimits(timeout_s=2))


@needs_seccomp
def test_a_setsid_grandchild_does_not_outlive_the_call(ws, reap):
    reap.append("sleep 61.25")
    t = time.monotonic()
    r = run_pipeline(ws, [Stage(["sh", "-c", "setsid sleep 61.25 & sleep 30"])], timeout=1)
    assert r.returncode != 0 and time.monotonic() - t < 5  # the shell cannot even fork
    time.sleep(0.3)
    assert procs_with("sleep 61.25") == []


def test_a_child_left_in_the_group_is_killed_after_its_leader_exits(ws, reap, monkeypatch):
    """Without the seccomp filter the shell can fork: its background child stays in the process
    group after the shell exits, and the group is killed whole."""
    monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
    reap.append("sleep 62.25")
    r = run_pipeline(ws, [Stage(["sh", "-c", "sleep 62.25 & echo started"])], timeout=1)
    assert b"started" in r.stdout
    time.sleep(0.3)
    assert procs_with("sleep 62.25") == []


@needs_seccomp
def test_no_new_processes_but_threads_work(ws):
    r = run_pipeline(ws, [Stage(["sh", "-c", "ls >/dev/null; echo rc=$?"])])
    assert b"rc=0" not in r.stdout  # the shell could not fork ls
    from fasbench.tools.rg import rg_argv

    r = run_pipeline(ws, [Stage(rg_argv("--threads", "4", "-c", "Login", "src"))])  # rg starts threads
    assert r.returncode == 0 and b"auth.py" in r.stdout


def test_resource_limits_are_set(ws):
    r = run_pipeline(ws, [Stage(["sh", "-c", "ulimit -f; ulimit -v; ulimit -t; ulimit -c"])])
    fsize, vmem, cpu, core = r.stdout.decode().split()
    assert fsize == "0" and core == "0"
    assert int(vmem) * 1024 == ws.limits.max_memory_bytes
    assert int(cpu) == int(ws.limits.timeout_s * 4) + 1


@needs_landlock
def test_landlock_read_only_view_of_the_root(base, ws):
    before = snapshot(base)
    secret = str(base / "outside" / "secret.txt")
    for argv in (["cat", secret], ["cat", "link_out_file"], ["ls", str(base / "outside")], ["cat", "/etc/hostname"],
                 ["head", "-c10", "/proc/self/environ"]):  # fmt: skip
        r = run_pipeline(ws, [Stage(argv)])
        assert r.returncode != 0 and SECRET.encode() not in r.stdout, (argv, r)
        assert b"Permission denied" in r.stderr or b"No such file" in r.stderr, (argv, r.stderr)
    for argv in (["touch", "new.txt"], ["mkdir", "d"], ["cp", "README.md", "x.md"], ["rm", "README.md"],
                 ["cp", "README.md", str(base / "outside" / "x")], ["touch", "/tmp/fasbench-landlock-x"]):  # fmt: skip
        r = run_pipeline(ws, [Stage(argv)])
        assert r.returncode != 0, argv
    assert not os.path.exists("/tmp/fasbench-landlock-x")
    assert snapshot(base) == before
    r = run_pipeline(ws, [Stage(["cat", "README.md"])])
    assert r.returncode == 0 and r.stdout.startswith(b"# Demo")
    r = run_pipeline(ws, [Stage(["git", "log", "--oneline"])])  # git reads its own .git inside the root
    assert r.returncode == 0 and b"initial" in r.stdout


def test_status_names_each_part():
    assert set(ST) == {"process_group", "rlimits", "seccomp", "landlock_abi"}
