"""The episode loop: concurrency, call order, limits, stop reasons, the final-turn note."""

import subprocess
import time

import pytest

from fasbench.harness import Limits, Policy, execute_calls, run_episode
from fasbench.policies import ScriptedPolicy
from fasbench.records import Gold, Reply, Report, Task, ToolCall
from fasbench.scoring.reward import score_report
from fasbench.tools import TOOLSETS, calls_for
from fasbench.tools.base import Tool, ToolError, Toolset, obj


class SleepToolset(Toolset):
    """A tool set whose one tool sleeps, to observe concurrency; answers with a `done` call."""

    name = "sleep"
    answer_tool = "done"

    def make_tools(self):
        def nap(ws, seconds: float) -> str:
            if seconds < 0:
                raise ToolError("seconds must be >= 0")
            time.sleep(seconds)
            return f"slept {seconds}"

        return [
            Tool("nap", "sleep", obj({"seconds": {"type": "number"}}, ["seconds"]), nap),
            Tool("done", "answer", obj({"files": {"type": "object"}}, ["files"]), lambda ws, files: "ok"),
        ]

    def system_prompt(self, max_turns, max_calls):
        return f"up to {max_turns} turns, {max_calls} calls each"

    def user_prompt(self, query):
        return query

    def final_turn_note(self):
        return "FINAL TURN: answer now."

    def parse_report(self, text, calls):
        for c in calls:
            if c.name == "done" and isinstance(c.arguments, dict):
                return Report(files=c.arguments.get("files", {}))
        return None


def task(root):
    return Task(id="t", query="find it", repo="local", root=str(root), gold=Gold(edited={"a.py": [[1, 2]]}))


def test_calls_of_a_turn_run_concurrently_in_call_order(tmp_path):
    ts = SleepToolset(tmp_path)
    calls = [ToolCall(f"c{i}", "nap", {"seconds": 0.3}) for i in range(6)]
    t0 = time.time()
    res = execute_calls(ts, calls)
    elapsed = time.time() - t0
    assert [r.call_id for r in res] == [c.id for c in calls]
    assert elapsed < 0.3 * 6 / 2, f"6 calls of 0.3 s took {elapsed:.2f} s: not concurrent"
    assert max(r.started_at for r in res) < min(r.ended_at for r in res)  # all overlapped


def test_episode_reports_and_records_timings(tmp_path):
    pol = ScriptedPolicy(
        [
            {
                "text": "look",
                "calls": [
                    {"name": "nap", "arguments": {"seconds": 0.01}},
                    {"name": "nap", "arguments": {"seconds": -1}},
                    {"name": "nope", "arguments": {}},
                    {"name": "nap", "arguments": '{"seconds": '},
                ],
            },
            {"text": "answer", "calls": [{"name": "done", "arguments": {"files": {"a.py": [[1, 2]]}}}]},
        ]
    )
    tr = run_episode(task(tmp_path), pol, SleepToolset(tmp_path), Limits(max_turns=5))
    assert tr.stop_reason == "reported" and tr.n_turns == 2 and tr.report.files == {"a.py": [[1, 2]]}
    r = tr.turns[0].results
    assert [x.is_error for x in r] == [False, True, True, True]
    assert "seconds must be >= 0" in r[1].output and "unknown tool 'nope'" in r[2].output
    assert "not valid JSON" in r[3].output
    assert tr.turns[0].tool_time > 0 and tr.wall_time >= tr.turns[0].tool_time
    assert score_report("relace-f2", task(tmp_path).gold, tr.report, turns=tr.n_turns).value == 1.0
    msgs = tr.to_messages()
    assert msgs[0]["role"] == "system" and msgs[2]["tool_calls"][0]["function"]["name"] == "nap"


def test_max_turns_final_note_and_too_many_calls(tmp_path):
    seen = []

    class Recorder(Policy):
        name = "recorder"

        def act(self, messages, tools, *, final):
            seen.append((final, messages[-1]["content"]))
            return Reply(text="more", calls=[ToolCall(f"c{i}", "nap", {"seconds": 0}) for i in range(5)])

    tr = run_episode(task(tmp_path), Recorder(), SleepToolset(tmp_path), Limits(max_turns=3, max_calls_per_turn=3))
    assert tr.stop_reason == "max_turns" and tr.report is None and tr.n_turns == 3
    assert [f for f, _ in seen] == [False, False, True] and seen[-1][1] == "FINAL TURN: answer now."
    res = tr.turns[0].results
    assert [x.is_error for x in res] == [False] * 3 + [True] * 2 and "more than 3 tool calls" in res[3].output


def test_policy_error_keeps_the_trace(tmp_path):
    class Broken(Policy):
        name = "broken"
        n = 0

        def act(self, messages, tools, *, final):
            self.n += 1
            if self.n == 2:
                raise RuntimeError("model server went away")
            return Reply(text="x", calls=[ToolCall("c", "nap", {"seconds": 0})])

    tr = run_episode(task(tmp_path), Broken(), SleepToolset(tmp_path), Limits(max_turns=4))
    assert tr.stop_reason == "policy_error" and "model server went away" in tr.error and tr.n_turns == 1


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_real_toolsets_episode_on_a_git_repo(tmp_path, toolset):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("import os\n\n\ndef answer():\n    return 42\n")
    (repo / "pkg" / "util.py").write_text("def helper():\n    return answer()\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=n", "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "x"], check=True
    )
    t = Task(
        id="t",
        query="where is answer defined",
        repo="local",
        root=str(repo),
        gold=Gold(edited={"pkg/core.py": [[4, 5]]}),
    )
    c = calls_for(toolset)  # the tool set's own call shapes
    turns = [
        Reply(calls=[c.search("a", "def answer"), c.list_dir("b", ".")]),
        c.report("r", {"pkg/core.py": [[4, 5]]}, "definition"),
    ]
    tr = run_episode(t, ScriptedPolicy(turns), toolset, Limits(max_turns=4))
    assert tr.stop_reason == "reported", tr.to_json()
    assert "pkg/core.py" in tr.turns[0].results[0].output and not tr.turns[0].results[0].is_error
    assert score_report("relace-f2", t.gold, tr.report, turns=tr.n_turns).value == 1.0
    assert score_report("line-f1", t.gold, tr.report).value == 1.0
