"""Frames, metrics and the CLI of the trajectory analysis, on a hand-made trajectory whose numbers are
known and on real data."""

import gzip
import json

import polars as pl
import pytest
from typer.testing import CliRunner

from fasbench.base.paths import data_dir
from fasbench.cli import app
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.first_edit import submission_files
from fasbench.trajectories.trajectory_files import load_labels

DEEPSEEK = data_dir() / "trajectories" / "mini-swe-agent-v2_deepseek-chat_swebench-lite-first100"

DIFF = (
    "diff --git a/src/calc.py b/src/calc.py\nindex 1..2 100644\n--- a/src/calc.py\n+++ b/src/calc.py\n"
    "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    "diff --git a/repro.py b/repro.py\nnew file mode 100644\n--- /dev/null\n+++ b/repro.py\n@@ -0,0 +1 @@\n+x\n"
)


def _assistant(calls, prompt, completion, reasoning=0):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": c})}}
            for i, c in enumerate(calls)
        ],
        "extra": {
            "response": {
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "completion_tokens_details": {"reasoning_tokens": reasoning},
                }
            }
        },
    }


def toy(instance="demo__calc-1"):
    """Turns (prompt, completion): 1 (100, 10) two calls: grep + ls; 2 (150, 20) cat; 3 (200, 30) write a
    repro script; 4 (260, 40) sed -i on the submitted file; 5 (330, 10) python repro.py."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        _assistant(["grep -rn 'def add' src", "ls src"], 100, 10),
        {"role": "tool", "content": "o"},
        {"role": "tool", "content": "o"},
        _assistant(["cat src/calc.py"], 150, 20, reasoning=5),
        {"role": "tool", "content": "o"},
        _assistant(["cat > repro.py <<'EOF'\nfrom src.calc import add\nprint(add(1, 2))\nEOF"], 200, 30),
        {"role": "tool", "content": "o"},
        _assistant(["cd /testbed && sed -i 's/a - b/a + b/' src/calc.py"], 260, 40),
        {"role": "tool", "content": "o"},
        _assistant(["python repro.py"], 330, 10),
        {"role": "tool", "content": "3"},
    ]
    return {
        "instance_id": instance,
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "submission": DIFF, "mini_version": "2.2.7"},
        "messages": msgs,
    }


@pytest.fixture
def toy_dir(tmp_path):
    d = tmp_path / "toyset"
    (d / "trajs").mkdir(parents=True)
    with gzip.open(d / "trajs" / "demo__calc-1.traj.json.gz", "wt") as f:
        json.dump(toy(), f)
    (d / "trajs" / "demo__calc-2.traj.json").write_text(json.dumps(toy("demo__calc-2")))
    (d / "trajs" / "broken.traj.json").write_text(json.dumps(toy("x"))[:300])
    (d / "SOURCE.md").write_text("toy")
    with gzip.open(d / "resolved.json.gz", "wt") as f:
        json.dump({"demo__calc-1": True, "demo__calc-2": False}, f)
    return d


def test_submission_files():
    assert submission_files(DIFF) == ["src/calc.py"]  # modified files; the added repro script is left out
    only_new = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x\n"
    assert submission_files(only_new) == ["n.py"]
    assert submission_files("") == [] and submission_files(None) == []


def test_steps_frame_numbers(toy_dir):
    a = analyze_paths([toy_dir], progress=False)
    s = a.steps.filter(pl.col("trajectory_id") == "demo__calc-1").sort("turn", "call")
    assert s["category"].to_list() == ["search", "search", "read", "edit", "edit", "test"]
    assert s["weight"].to_list() == [0.5, 0.5, 1, 1, 1, 1]
    assert s["call_tokens"].to_list() == [55.0, 55.0, 170.0, 230.0, 300.0, 340.0]  # (prompt+completion)/k
    # growth of the next prompt beyond prompt + fed-back completion (completion - reasoning); none after the last
    assert s["obs_tokens"].to_list() == [40, 40, 35, 30, 30, None]
    assert s["call_obs_tokens"].to_list()[:2] == [20.0, 20.0]
    assert s["first_edit_turn"].unique().to_list() == [4]  # the repro script is not a submitted file
    assert s["edits_submission"].to_list() == [False, False, False, False, True, False]
    assert s["before_first_edit"].to_list() == [True, True, True, True, False, False]
    assert s["resolved"].unique().to_list() == [True]
    assert s["repo"].unique().to_list() == ["demo/calc"] and not s["tokens_estimated"].any()
    t = a.trajectories.filter(pl.col("trajectory_id") == "demo__calc-1").row(0, named=True)
    assert t["explore_turns_before"] == 2 and t["explore_calls_before"] == 3
    assert t["handoff_tokens"] == 280.0 and t["tokens"] == 1150.0


def test_summary(toy_dir):
    a = analyze_paths([toy_dir], progress=False)
    s = a.summary()
    f = s["files"]
    assert f["parsed"] == 2 and f["skipped"] == 1
    assert f["skipped_files"][0]["path"].endswith("broken.traj.json")
    assert "truncated JSON" in f["skipped_files"][0]["reason"]
    assert f["ignored"] == {"resolved labels": 1, "run metadata (reports, predictions, SOURCE)": 1}
    o = s["overall"]
    # per trajectory: 5 tool-use turns; search 1 (two calls at 1/2), read 1, edit 2, test 1
    assert o["turn_share"] == {"read": 0.2, "search": 0.2, "edit": 0.4, "test": 0.2, "other": 0.0}
    assert o["read_search_turn_share"] == 0.4
    assert o["token_share"]["search"] == pytest.approx(110 / 1150, abs=1e-6)
    assert o["first_edit_turn_mean"] == 4.0 and o["explore_calls_before_median"] == 3.0
    assert o["handoff_share"] == pytest.approx(280 / 1150, abs=1e-6)
    assert set(s["by_resolved"]) == {"true", "false"}
    assert s["by_repo"]["demo/calc"]["trajectories"] == 2
    assert sum(s["parsers"].values()) == s["actions"] == 12 and s["unparsable_actions"] == 0


def test_labels(toy_dir, tmp_path):
    assert load_labels(toy_dir / "trajs" / "demo__calc-1.traj.json.gz") == {"demo__calc-1": True, "demo__calc-2": False}
    rep = tmp_path / "run" / "eval_reports"
    rep.mkdir(parents=True)
    (rep / "a__b-1.report.json").write_text(json.dumps({"a__b-1": {"resolved": True}}))
    with gzip.open(rep / "a__b-2.report.json.gz", "wt") as f:
        json.dump({"resolved": False}, f)
    assert load_labels(tmp_path / "run") == {"a__b-1": True, "a__b-2": False}
    assert load_labels(tmp_path / "nowhere") == {}


def test_real_deepseek_subset():
    a = analyze_paths([DEEPSEEK], progress=False, limit=12)
    s = a.summary()
    assert s["files"]["parsed"] == 12 and s["files"]["skipped"] == 0
    assert s["trajectories"] == 12 and s["actions"] > 300
    assert a.steps["resolved"].null_count() == 0  # labels found beside the trajectories
    o = s["overall"]
    assert 0 < o["read_search_turn_share"] < 1 and o["with_first_edit"] >= 10
    assert sum(o["turn_share"].values()) == pytest.approx(1.0, abs=1e-5)
    assert sum(o["token_share"].values()) == pytest.approx(1.0, abs=1e-5)


runner = CliRunner()


def test_cli_classify():
    lines = (
        "\n".join(
            json.dumps(x)
            for x in ["ls -la", "sed -i 's/a/b/' f.py", "cat > f <<EOF\nx\nEOF", "cd /testbed", "python -m pytest"]
        )
        + "\n"
    )
    r = runner.invoke(app, ["classify"], input=lines)
    assert r.exit_code == 0, r.output
    assert r.output.split() == ["search", "edit", "edit", "other", "test"]
    r = runner.invoke(app, ["classify", "--details"], input='"grep x f | head"\n')
    d = json.loads(r.output)
    assert d["category"] == "search" and d["parts"] == ["search", "read"]


def test_cli_classify_bad_input():
    r = runner.invoke(app, ["classify"], input='"ls"\nls -la\n')
    assert r.exit_code == 2 and "line 2" in r.output and "not JSON" in r.output
    r = runner.invoke(app, ["classify"], input='["ls"]\n')
    assert r.exit_code == 2 and "expected a JSON string" in r.output


def test_cli_analyze(toy_dir, tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["trajectories", "analyze", str(toy_dir), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "skipped 1" in r.output
    steps = pl.read_parquet(out / "steps.parquet")
    assert steps.height == 12 and {"category", "call_tokens", "before_first_edit", "resolved"} <= set(steps.columns)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"]["skipped"] == 1 and summary["overall"]["first_edit_turn_mean"] == 4.0
    r = runner.invoke(app, ["trajectories", "analyze", str(tmp_path / "missing"), "--out", str(out)])
    assert r.exit_code == 2 and "no such file or folder" in r.output
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"demo__calc-1": False}))
    r = runner.invoke(
        app,
        [
            "trajectories",
            "analyze",
            str(toy_dir / "trajs" / "demo__calc-1.traj.json.gz"),
            "--out",
            str(out),
            "--labels",
            str(labels),
            "--quiet",
        ],
    )
    assert r.exit_code == 0, r.output
    assert pl.read_parquet(out / "steps.parquet")["resolved"].unique().to_list() == [False]
