"""`fasbench e2e` end to end: the real mini-swe-agent package against a real local OpenAI-compatible
server process (scripted answers), both arms, a run killed mid-way and resumed, and the trajectories
read back by the trajectory analysis."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.e2e.localize import functions_at, localization
from fasbench.records import Gold, Task, write_tasks
from fasbench.trajectories.analysis import analyze_paths
from servers import free_port, server, wait_http


CALC = "def add(a, b):\n    return a - b\n\n\nclass Calc:\n    def sub(self, a, b):\n        return a + b\n"
SCRIPT = {
    "TASK-ADD": [
        {"command": "grep -rn 'def add' src", "explore": True},
        {"command": "sed -n '1,3p' src/calc.py", "explore": True},
        {"command": "sed -i 's/return a - b/return a + b/' src/calc.py"},
        {"command": "git diff -- src/calc.py > patch.txt"},
        {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"},
    ],
    "TASK-SUB": [
        {"command": "grep -rn 'def sub' src", "explore": True},
        {"command": "sed -i 's/return a + b/return a - b/' src/calc.py"},
        {"command": "git diff -- src/calc.py > patch.txt"},
        {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"},
    ],
}


@pytest.fixture
def setup(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "calc.py").write_text(CALC)
    (corpus / "README.md").write_text("calc\n")
    tasks = [
        Task(id="demo__calc-1", query="TASK-ADD: add() subtracts instead of adding.", repo="demo/calc",
             gold=Gold(edited={"src/calc.py": [[1, 2]]}, variants={"changed": {"src/calc.py": [[2, 2]]}}),
             root=str(corpus)),
        Task(id="demo__calc-2", query="TASK-SUB: Calc.sub adds instead of subtracting.", repo="demo/calc",
             gold=Gold(edited={"src/calc.py": [[6, 7]]}, variants={"changed": {"src/calc.py": [[7, 7]]}}),
             root=str(corpus)),
    ]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    port = free_port()
    log = tmp_path / "server.log"
    with server([sys.executable, str(Path(__file__).parent / "scripted_openai_server.py"), str(port),
                 str(tmp_path / "script.json"), "0.4"], log) as proc:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc, 30, log)
        yield tmp_path, f"openai:model=scripted,base_url=http://127.0.0.1:{port}/v1,step_limit=10"


def _cmd(tmp, main, out):
    return [sys.executable, "-m", "fasbench.cli", "e2e", "--tasks", str(tmp / "tasks.jsonl"), "--main", main,
            "--search", "heuristic:turns=2", "--out", str(out), "--handoff", "citations"]


def test_e2e_both_arms_interrupted_and_resumed(setup):
    tmp, main = setup
    out = tmp / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.Popen(_cmd(tmp, main, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    records = out / "records.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if records.exists() and records.read_text().count("\n") >= 1:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # interrupted in the middle of the second episode
    proc.wait()
    first = records.read_text().splitlines()
    assert len(first) == 1, first
    r = subprocess.run(_cmd(tmp, main, out), env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    lines = records.read_text().splitlines()
    assert lines[0] == first[0]  # nothing lost or rewritten
    recs = [json.loads(x) for x in lines]
    why = r.stdout[-2000:] + json.dumps([{k: x.get(k) for k in ("task_id", "arm", "exit_status", "error", "turns")}
                                         for x in recs])
    assert sorted((x["task_id"], x["arm"]) for x in recs) == [
        ("demo__calc-1", "none"), ("demo__calc-1", "search"), ("demo__calc-2", "none"), ("demo__calc-2", "search")], why
    traces = (out / "search_traces.jsonl").read_text().splitlines()
    assert sorted(json.loads(t)["task_id"] for t in traces) == ["demo__calc-1", "demo__calc-2"]  # one each
    by = {(x["task_id"], x["arm"]): x for x in recs}
    for x in recs:
        assert x["exit_status"] == "Submitted" and x["edits_gold_file"] is True and x["tokens"] > 0, why
        assert x["patch_source"] == "submission" and "src/calc.py" in x["diff"]
    assert by[("demo__calc-1", "none")]["gold_function_recall"] == 1.0
    assert by[("demo__calc-2", "none")]["gold_function_recall"] == 1.0
    # the handoff let the scripted agent skip its exploration turns
    assert by[("demo__calc-1", "search")]["turns"] == by[("demo__calc-1", "none")]["turns"] - 2, why
    assert by[("demo__calc-1", "search")]["handoff_tokens"] > 0
    assert '"metric": "turns"' in r.stdout
    assert not (out / "work" / "none" / "demo__calc-1").exists()  # copies removed

    for arm, turns in (("none", [5, 4]), ("search", [3, 3])):
        a = analyze_paths([out / "trajs" / arm], progress=False)
        t = a.trajectories.sort("instance_id")
        assert t["instance_id"].to_list() == ["demo__calc-1", "demo__calc-2"]
        assert t["n_turns"].to_list() == turns, (arm, why)
        assert t["first_edit_turn"].to_list() == ([3, 2] if arm == "none" else [1, 1])


def test_e2e_cli_errors(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["e2e", "--tasks", "swebench-lite:test", "--main", "heuristic", "--search", "none",
                            "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "OpenAI-compatible endpoint" in r.output
    r = runner.invoke(app, ["e2e", "--tasks", str(tmp_path / "nope.jsonl"), "--main", "openai:model=m,base_url=u",
                            "--search", "none", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "nope.jsonl" in r.output and "does not exist" in r.output  # fasbench.tasksets
    r = runner.invoke(app, ["e2e", "--tasks", "swebench-lite:val", "--main", "openai:model=m,base_url=u",
                            "--search", "none", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown split 'val'" in r.output


def test_localization_functions(tmp_path):
    assert functions_at(CALC, [2]) == {"add"} and functions_at(CALC, [7]) == {"Calc.sub"}
    assert functions_at(CALC, [3]) == {"<module>"}
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text(CALC)
    gold = Gold(edited={"src/calc.py": [[6, 7]]}, variants={"changed": {"src/calc.py": [[7, 7]]}})
    wrong = ("diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
             "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n")
    m = localization(wrong, gold, tmp_path)
    assert m["edits_gold_file"] is True and m["gold_function_recall"] == 0.0 and m["edits_gold_function"] is False
    assert localization("", gold, tmp_path)["edits_gold_file"] is False
