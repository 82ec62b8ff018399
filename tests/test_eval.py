"""`fasbench eval`: parallel episodes, summary columns, intervals, paired bootstrap, and resume
after a real kill (no lost or duplicated episode)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import polars as pl
import pytest
from eval_fixtures import toy_copies

from fasbench.evaluation.evaluate import aggregate, compare, run_eval, summarize
from fasbench.harness import Limits
from fasbench.records import iter_jsonl, write_tasks

# Every test gets a FASBENCH_CACHE of its own (conftest.py): no run is resumed from another test's.
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return toy_copies(tmp_path_factory.mktemp("toy"), 10)


def test_run_eval_summary_and_intervals(tasks, tmp_path):
    df = run_eval(
        tasks,
        "heuristic:turns=3",
        "relace",
        tmp_path / "h",
        Limits(max_turns=6),
        workers=2,
        backend="process",
        progress=False,
    )
    assert df.height == len(tasks) and sorted(df["task_id"]) == sorted(t.id for t in tasks)
    for col in (
        "reward_relace_f2",
        "reward_relace_f2__turn_penalty",
        "reward_relace_hybrid",
        "reward_fastcontext",
        "reward_f0_5",
        "file_precision",
        "file_recall",
        "file_f1",
        "file_f2",
        "line_precision",
        "line_recall",
        "line_f1",
        "line_f2",
        "all_gold_at_1",
        "all_gold_at_5",
        "recall_at_5",
        "turns",
        "calls_per_turn",
        "wall_s",
        "model_s",
        "tool_s",
        "prompt_tokens",
        "completion_tokens",
    ):
        assert col in df.columns, col
    assert pl.read_parquet(tmp_path / "h" / "summary.parquet").height == len(tasks)
    assert df["file_f2"].mean() > 0.7 and (df["tool_s"] > 0).all()
    agg = aggregate(df, ["file_f2", "turns"])
    r = agg.row(0, named=True)
    assert r["n"] == len(tasks) and r["file_f2_lo"] <= r["file_f2"] <= r["file_f2_hi"]
    b = run_eval(tasks, "bm25:k=3", "relace", tmp_path / "b", workers=2, progress=False)
    c = compare(df, b, "file_f2")
    assert c["n"] == len(tasks) and c["lo"] <= c["diff"] <= c["hi"]


def test_config_mismatch_is_refused(tasks, tmp_path):
    run_eval(tasks[:1], "heuristic", "relace", tmp_path / "r", workers=1, progress=False)
    with pytest.raises(ValueError, match="another configuration"):
        run_eval(tasks[:1], "heuristic", "fastcontext", tmp_path / "r", workers=1, progress=False)
    with pytest.raises(ValueError, match="unknown tool set"):
        run_eval(tasks[:1], "heuristic", "nope", tmp_path / "x", workers=1, progress=False)


@pytest.mark.slow
def test_resume_after_kill(tasks, tmp_path):
    many = [replace(tasks[i % len(tasks)], id=f"k-{i}") for i in range(24)]
    tf = tmp_path / "tasks.jsonl"
    write_tasks(tf, many)
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "fasbench.cli",
        "eval",
        "--tasks",
        str(tf),
        "--policy",
        "heuristic:turns=3",
        "--out",
        str(out),
        "--workers",
        "1",
        "--backend",
        "serial",
    ]
    env = {**os.environ, "FASBENCH_CACHE": str(tmp_path / "cache")}
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    traces = out / "traces.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline:
        if traces.exists() and traces.read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    n_before = traces.read_bytes().count(b"\n")
    assert 3 <= n_before < len(many), "the run must be killed mid-way"
    with open(traces, "a") as f:  # a line torn by the kill
        f.write('{"task_id": "k-999", "policy": "heur')
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    ids = [d["task_id"] for d in iter_jsonl(traces)]
    assert sorted(ids) == sorted(t.id for t in many)  # none lost, none duplicated
    assert pl.read_parquet(out / "summary.parquet").height == len(many)


def test_cli_errors(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "eval",
            "--tasks",
            "nope.jsonl",
            "--policy",
            "heuristic",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "file nope.jsonl does not exist" in r.stderr and len(r.stderr.splitlines()) == 1


def test_summarize_ignores_duplicates(tasks, tmp_path):
    run_eval(tasks[:2], "heuristic", "relace", tmp_path / "d", workers=1, progress=False)
    lines = (tmp_path / "d" / "traces.jsonl").read_text().splitlines()
    (tmp_path / "d" / "traces.jsonl").write_text("\n".join(lines + lines[:1]) + "\n")
    with pytest.warns(UserWarning, match="duplicate"):
        df = summarize(tasks[:2], tmp_path / "d" / "traces.jsonl")
    assert df.height == 2
    assert json.loads(lines[0])["task_id"] in df["task_id"].to_list()


def test_summary_reports_index_time_beside_search_time_and_never_none(tasks, tmp_path):
    """bm25's index building/loading (policy.prepare) is timed apart as prepare_s and shown beside wall_s;
    a policy that prepares nothing has none; a field a run did not record reads 'unknown', never None."""
    from fasbench.evaluation.cli import summary_text

    b = run_eval(tasks[:3], "bm25:k=3", "relace", tmp_path / "b", workers=1, progress=False)
    assert b["prepare_s"].null_count() == 0 and (b["prepare_s"] >= 0).all()
    text = summary_text(b, tmp_path / "b")
    names = [line.split()[0] for line in text.splitlines() if line.strip()]
    assert names[names.index("wall_s") + 1] == "prepare_s" and "prepare_s:" in text
    h = run_eval(tasks[:1], "heuristic", "relace", tmp_path / "h", workers=1, progress=False)
    assert h["prepare_s"].null_count() == h.height and "prepare_s" not in summary_text(h, tmp_path / "h")
    meta = json.loads((tmp_path / "h" / "run.json").read_text())
    (tmp_path / "h" / "run.json").write_text(json.dumps({k: meta[k] for k in ("policy", "toolset")}))
    old = summary_text(h, tmp_path / "h")
    assert "None" not in old and "code unknown" in old
