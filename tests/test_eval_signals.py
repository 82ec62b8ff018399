"""`fasbench eval --backend process` under signals, with real processes (issue 14): Ctrl-C stops
promptly without running the queued episodes and keeps what finished (a rerun resumes); after a
SIGKILL of the run no fork server or worker lives on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import iter_jsonl, write_tasks

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process table from /proc")

N_TASKS = 60


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("sig")
    base = toy_tasks(make_corpus(d / "toy"))
    f = d / "tasks.jsonl"
    write_tasks(f, [replace(base[i % len(base)], id=f"s-{i}") for i in range(N_TASKS)])
    return f


def session_pids(sid: int) -> set[int]:
    """Live (not zombie) processes of session ``sid``."""
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            out.add(int(name))
    return out


def start(task_file, out, env_dir):
    cmd = [
        sys.executable,
        "-m",
        "fasbench.cli",
        "eval",
        "--tasks",
        str(task_file),
        "--policy",
        "heuristic:turns=3",
        "--out",
        str(out),
        "--workers",
        "2",
        "--backend",
        "process",
    ]
    env = {**os.environ, "FASBENCH_CACHE": str(env_dir / "cache")}
    p = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    return cmd, env, p


def wait_lines(path, n, p, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        if p.poll() is not None:
            raise AssertionError(f"the run ended early: {p.stderr.read()[-2000:]}")
        time.sleep(0.02)
    raise AssertionError("no traces appeared")


@pytest.mark.slow
def test_sigint_stops_promptly_and_resumes(task_file, tmp_path):
    out = tmp_path / "run"
    cmd, env, p = start(task_file, out, tmp_path)
    try:
        traces = out / "traces.jsonl"
        wait_lines(traces, 3, p)
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        _, err = p.communicate(timeout=120)
        n = traces.read_bytes().count(b"\n")
        assert p.returncode == 130, err[-2000:]
        assert "Traceback" not in err and "interrupted" in err
        assert 3 <= n < N_TASKS - 10, f"{n} of {N_TASKS} episodes ran: the queue was not cancelled"
        deadline = time.time() + 30
        while session_pids(p.pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not session_pids(p.pid), "workers outlived the interrupted run"
    finally:
        if session_pids(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    ids = [d["task_id"] for d in iter_jsonl(out / "traces.jsonl")]
    assert sorted(ids) == sorted(f"s-{i}" for i in range(N_TASKS))  # resumed: none lost, none twice


@pytest.mark.slow
def test_sigkill_leaves_no_worker_behind(task_file, tmp_path):
    out = tmp_path / "run"
    _, _, p = start(task_file, out, tmp_path)
    try:
        wait_lines(out / "traces.jsonl", 1, p)
        helpers = session_pids(p.pid) - {p.pid}
        assert len(helpers) >= 3, f"expected a fork server and 2 workers, found {helpers}"
        os.kill(p.pid, signal.SIGKILL)  # only the run's own process: it cannot clean up
        p.wait(timeout=30)
        deadline = time.time() + 30
        while session_pids(p.pid) and time.time() < deadline:
            time.sleep(0.1)
        left = session_pids(p.pid)
        assert not left, f"processes outlived the killed run: {left}"
    finally:
        if session_pids(p.pid):
            os.killpg(p.pid, signal.SIGKILL)
