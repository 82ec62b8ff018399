"""`fasbench trajectories analyze` skips, with a reason, every file it cannot parse (issue 14): deeply
nested JSON, wrong value types, absurd token counts, corrupt or list-valued labels, and a FIFO named
like a trajectory (which must not block the run)."""

import json
import os
import subprocess
import sys

import pytest

from fasbench.trajectories.analysis import analyze_paths


def _traj(instance, prompt_tokens=10):
    msgs = [
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})},
                }
            ],
            "extra": {"response": {"usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5}}},
        },
        {"role": "tool", "content": "o"},
    ]
    return {
        "instance_id": instance,
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"submission": ""},
        "messages": msgs,
    }


@pytest.fixture
def dataset(tmp_path):
    d = tmp_path / "set"
    (d / "trajs").mkdir(parents=True)
    (d / "trajs" / "good.traj.json").write_text(json.dumps(_traj("a__b-1")))
    return d


def _skipped(a):
    return {os.path.basename(p): r for p, r in a.files.skipped}


@pytest.mark.parametrize(
    "name,content,reason",
    [
        ("deep.traj.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("strs.traj.json", json.dumps({"messages": ["hello", 3]}), "unparsable"),
        ("huge.traj.json", json.dumps(_traj("a__b-2", prompt_tokens=10**30)), "implausible token count"),
        ("neg.traj.json", json.dumps(_traj("a__b-3", prompt_tokens=-4)), "implausible token count"),
        ("text.traj.json", json.dumps(_traj("a__b-4", prompt_tokens="many")), "implausible token count"),
    ],
)
def test_bad_file_is_skipped_with_reason(dataset, name, content, reason):
    (dataset / "trajs" / name).write_text(content)
    a = analyze_paths([dataset], progress=False)
    assert a.trajectories.height == 1 and a.files.parsed[0].endswith("good.traj.json")
    assert reason in _skipped(a)[name]
    summary = a.summary()  # the summary is built on what was kept
    assert summary["files"]["skipped"] == 1 and summary["trajectories"] == 1


@pytest.mark.parametrize("labels", ["[1, 2]", "{not json", '"resolved"'])
def test_bad_labels_are_reported_not_fatal(dataset, labels):
    (dataset / "resolved.json").write_text(labels)
    a = analyze_paths([dataset], progress=False)
    assert a.trajectories.height == 1 and a.trajectories["resolved"].to_list() == [None]
    assert "labels unreadable" in _skipped(a)["set"]


def test_bad_eval_report_labels_are_reported(dataset):
    (dataset / "eval_reports").mkdir()
    (dataset / "eval_reports" / "a__b-1.report.json").write_text("[true]")
    a = analyze_paths([dataset], progress=False)
    assert a.trajectories.height == 1 and "labels unreadable" in _skipped(a)["set"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_skipped_without_opening_it(dataset, tmp_path):
    """Through the real CLI in a subprocess: a FIFO in the folder, a FIFO given directly and a FIFO
    named resolved.json; the run must end (an open() of a FIFO blocks forever) and name each."""
    os.mkfifo(dataset / "trajs" / "pipe.traj.json")
    os.mkfifo(tmp_path / "direct.traj.json")
    os.mkfifo(dataset / "resolved.json")
    out = tmp_path / "out"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "trajectories",
            "analyze",
            str(dataset),
            str(tmp_path / "direct.traj.json"),
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "skipped" in r.stdout and "pipe.traj.json: not a regular file (a FIFO)" in r.stdout
    assert "direct.traj.json: not a regular file (a FIFO)" in r.stdout
    files = json.loads((out / "summary.json").read_text())["files"]
    reasons = {os.path.basename(s["path"]): s["reason"] for s in files["skipped_files"]}
    assert "FIFO" in reasons["pipe.traj.json"] and "FIFO" in reasons["set"]
    assert files["parsed"] == 1
