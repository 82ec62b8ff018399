"""Trajectory parsers on real files from data/trajectories and on small files written here in the
formats that the data does not cover (SWE-agent .traj, Claude Code JSONL, fasbench traces),
including corrupted and truncated files."""

import gzip
import json
from pathlib import Path

import pytest

from fasbench.base.paths import data_dir
from fasbench.records import ToolCall, ToolResult, Trace, Turn
from fasbench.trajectories.parsers import TrajectoryError, detect, load, parse_file

GEMINI = data_dir() / "trajectories" / "mini-swe-agent_gemini-3-pro_swebench-verified"
DEEPSEEK = data_dir() / "trajectories" / "mini-swe-agent-v2_deepseek-chat_swebench-lite-first100"


def test_mini_swe_agent_v1_real():
    p = GEMINI / "trajs" / "django__django-13279.traj.json.gz"
    pf = parse_file(p)
    assert pf.format == "mini-swe-agent-1" and len(pf.trajectories) == 1
    t = pf.trajectories[0]
    raw = json.loads(gzip.decompress(p.read_bytes()))
    n_assistant = sum(m["role"] == "assistant" for m in raw["messages"])
    assert len(t.turns) == n_assistant and t.instance_id == "django__django-13279"
    assert t.turns[0].calls[0].action == 'ls -R | grep ":$" | head -n 20'
    assert t.turns[0].prompt_tokens == 1427 and t.turns[0].completion_tokens == 263
    assert t.turns[0].reasoning_tokens == 220 and not t.turns[0].estimated
    assert t.submission.startswith("diff --git a/django/contrib/sessions/backends/base.py")
    assert "gemini-3-pro" in t.model and t.agent.startswith("mini-swe-agent 1.15")
    assert all(len(turn.calls) <= 1 for turn in t.turns)


def test_mini_swe_agent_v2_tool_calls_real():
    p = DEEPSEEK / "trajs" / "django__django-11179.traj.json.gz"
    pf = parse_file(p)
    assert pf.format == "mini-swe-agent-tools"
    t = pf.trajectories[0]
    first = t.turns[0]
    assert first.calls[0].tool == "bash"
    assert first.calls[0].action == 'find . -type f -name "*.py" | grep -i deletion | head -20'
    assert first.calls[0].args == {"command": first.calls[0].action}
    assert first.prompt_tokens == 1393 and first.completion_tokens == 83
    assert "setattr(instance, model._meta.pk.attname, None)" in t.submission


def test_plain_and_gzip_give_the_same(tmp_path):
    p = GEMINI / "trajs" / "astropy__astropy-12907.traj.json.gz"
    plain = tmp_path / "astropy__astropy-12907.traj.json"
    plain.write_bytes(gzip.decompress(p.read_bytes()))
    a, b = parse_file(p).trajectories[0], parse_file(plain).trajectories[0]
    assert a.trajectory_id == b.trajectory_id == "astropy__astropy-12907"
    assert [(t.prompt_tokens, [c.action for c in t.calls]) for t in a.turns] == [
        (t.prompt_tokens, [c.action for c in t.calls]) for t in b.turns
    ]


# ------------------------------------------------------------------ synthetic files


def swe_agent_traj() -> dict:
    diff = (
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,2 @@\n"
        " def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
    steps = [
        ("find_file calc.py", 'Found 1 matches for "calc.py":\n/repo/src/calc.py', "n/a"),
        (
            "open src/calc.py",
            "[File: /repo/src/calc.py (2 lines total)]\n1:def add(a, b):\n2:    return a - b",
            "/repo/src/calc.py",
        ),
        (
            "search_file add",
            'Found 1 matches for "add" in /repo/src/calc.py:\nLine 1:def add(a, b):',
            "/repo/src/calc.py",
        ),
        ("edit 2:2\n    return a + b\nend_of_edit", "File updated.", "/repo/src/calc.py"),
        ("python -c 'from src.calc import add; print(add(1, 2))'", "3", "/repo/src/calc.py"),
        ("submit", diff, "/repo/src/calc.py"),
    ]
    traj = []
    for action, obs, open_file in steps:
        traj.append(
            {
                "action": action,
                "observation": obs,
                "thought": f"I will run {action.split()[0]}.",
                "response": f"I will run {action.split()[0]}.\n```\n{action}\n```",
                "state": json.dumps({"open_file": open_file, "working_dir": "/repo"}),
            }
        )
    history = [
        {"role": "system", "content": "SETTING: You are an autonomous programmer.", "agent": "primary"},
        {"role": "user", "content": "Here is a demonstration...", "agent": "primary", "is_demo": True},
        {"role": "user", "content": "ISSUE: add() subtracts.", "agent": "primary"},
    ]
    for s in traj:
        history.append({"role": "assistant", "content": s["response"], "agent": "primary"})
        history.append({"role": "user", "content": s["observation"], "agent": "primary"})
    return {
        "environment": "swe_main",
        "trajectory": traj,
        "history": history,
        "info": {
            "exit_status": "submitted",
            "submission": diff,
            "model_stats": {"tokens_sent": 9000, "tokens_received": 300, "api_calls": 6, "instance_cost": 0.05},
        },
    }


def test_swe_agent_traj(tmp_path):
    p = tmp_path / "demo__calc-1.traj"
    p.write_text(json.dumps(swe_agent_traj()))
    pf = parse_file(p)
    assert pf.format == "swe-agent"
    t = pf.trajectories[0]
    assert t.instance_id == "demo__calc-1" and len(t.turns) == 6
    assert [c.tool for turn in t.turns for c in turn.calls] == [
        "find_file",
        "open",
        "search_file",
        "edit",
        "bash",
        "submit",
    ]
    assert t.turns[3].calls[0].args == {"path": "/repo/src/calc.py"}  # edit acts on the open file
    assert all(turn.estimated for turn in t.turns)
    prompts = [turn.prompt_tokens for turn in t.turns]
    assert prompts == sorted(prompts) and prompts[0] > 0  # each prompt holds the previous turns
    assert t.turns[1].prompt_tokens == t.turns[0].prompt_tokens + t.turns[0].completion_tokens + t.turns[0].obs_tokens


def claude_session() -> list[dict]:
    u = {"input_tokens": 4, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 9000, "output_tokens": 50}
    common = {"sessionId": "s-123", "cwd": "/repo", "version": "1.0.80", "userType": "external"}

    def asst(mid, content, usage, side=False):
        return {
            **common,
            "type": "assistant",
            "isSidechain": side,
            "uuid": f"u-{mid}-{len(str(content))}",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": content,
                "usage": usage,
            },
        }

    def result(tid, text):
        return {
            **common,
            "type": "user",
            "isSidechain": False,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}]},
        }

    return [
        {"type": "summary", "summary": "Fix add()", "leafUuid": "x"},
        {**common, "type": "user", "isSidechain": False, "message": {"role": "user", "content": "add() is wrong"}},
        asst("msg_1", [{"type": "text", "text": "Let me look."}], u),
        asst("msg_1", [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "def add"}}], u),
        asst(
            "msg_1",
            [{"type": "tool_use", "id": "t2", "name": "Glob", "input": {"pattern": "**/*.py"}}],
            {**u, "output_tokens": 80},
        ),
        result("t1", "src/calc.py:1:def add(a, b):"),
        result("t2", "src/calc.py"),
        asst("msg_side", [{"type": "tool_use", "id": "s1", "name": "Read", "input": {"file_path": "/x"}}], u, True),
        asst(
            "msg_2",
            [{"type": "tool_use", "id": "t3", "name": "Read", "input": {"file_path": "/repo/src/calc.py"}}],
            {**u, "cache_read_input_tokens": 10500},
        ),
        result("t3", "1\tdef add(a, b):\n2\t    return a - b"),
        asst(
            "msg_3",
            [
                {
                    "type": "tool_use",
                    "id": "t4",
                    "name": "Edit",
                    "input": {"file_path": "/repo/src/calc.py", "old_string": "a - b", "new_string": "a + b"},
                }
            ],
            {**u, "cache_read_input_tokens": 11000},
        ),
        result("t4", "The file has been updated."),
        asst(
            "msg_4",
            [{"type": "tool_use", "id": "t5", "name": "Bash", "input": {"command": "python -m pytest -q"}}],
            {**u, "cache_read_input_tokens": 11500},
        ),
        result("t5", "1 passed"),
        asst("msg_5", [{"type": "text", "text": "Fixed."}], {**u, "cache_read_input_tokens": 11600}),
    ]


def test_claude_code_jsonl(tmp_path):
    p = tmp_path / "s-123.jsonl"
    p.write_text("".join(json.dumps(o) + "\n" for o in claude_session()))
    pf = parse_file(p)
    assert pf.format == "claude-code" and pf.dropped_lines == 1  # the side-chain line
    t = pf.trajectories[0]
    assert t.instance_id == "s-123" and t.model == "claude-sonnet-4-5"
    assert len(t.turns) == 5  # one per API message id
    assert [c.tool for c in t.turns[0].calls] == ["Grep", "Glob"]  # parallel calls of one message
    assert t.turns[0].prompt_tokens == 10004 and t.turns[0].completion_tokens == 80
    assert t.turns[3].calls[0].action == "python -m pytest -q"
    assert t.turns[4].calls == []


def test_fasbench_trace_jsonl(tmp_path):
    tr = Trace(
        task_id="demo__calc-1",
        policy="scripted",
        toolset="relace",
        turns=[
            Turn(
                0,
                "",
                [ToolCall("c1", "grep_search", {"query": "def add"}), ToolCall("c2", "view_directory", {"path": "."})],
                [ToolResult("c1", "src/calc.py:1"), ToolResult("c2", "src/")],
                prompt_tokens=500,
                completion_tokens=40,
            ),
            Turn(1, "", [ToolCall("c3", "view_file", {"path": "src/calc.py"})], [ToolResult("c3", "def add...")]),
        ],
        prompt=[{"role": "system", "content": "search"}, {"role": "user", "content": "where is add"}],
    )
    p = tmp_path / "traces.jsonl"
    p.write_text(tr.to_json() + "\n" + tr.to_json() + "\n")
    pf = parse_file(p)
    assert pf.format == "fasbench-trace" and len(pf.trajectories) == 2
    t = pf.trajectories[0]
    assert t.instance_id == "demo__calc-1" and t.agent == "scripted"
    assert [c.tool for c in t.turns[0].calls] == ["grep_search", "view_directory"]
    assert t.turns[0].prompt_tokens == 500 and not t.turns[0].estimated
    assert t.turns[1].estimated and t.turns[1].prompt_tokens > 0  # missing counts are estimated


# ------------------------------------------------------------------ broken files


def test_truncated_gzip(tmp_path):
    src = (GEMINI / "trajs" / "astropy__astropy-12907.traj.json.gz").read_bytes()
    p = tmp_path / "cut.traj.json.gz"
    p.write_bytes(src[: len(src) // 2])
    with pytest.raises(TrajectoryError, match="truncated gzip"):
        parse_file(p)


def test_corrupt_gzip(tmp_path):
    src = bytearray((GEMINI / "trajs" / "astropy__astropy-12907.traj.json.gz").read_bytes())
    src[100:200] = b"\x00" * 100
    p = tmp_path / "bad.traj.json.gz"
    p.write_bytes(bytes(src))
    with pytest.raises(TrajectoryError, match="corrupt gzip|truncated gzip|invalid JSON|not UTF-8"):
        parse_file(p)


def test_truncated_json(tmp_path):
    p = tmp_path / "cut.traj"
    text = json.dumps(swe_agent_traj())
    p.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(TrajectoryError, match="truncated JSON"):
        parse_file(p)


def test_invalid_json_and_unknown_layout(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"messages": [1, 2,, 3]}')
    with pytest.raises(TrajectoryError, match="invalid JSON"):
        parse_file(p)
    q = tmp_path / "other.json"
    q.write_text('{"hello": "world"}')
    with pytest.raises(TrajectoryError, match="unknown trajectory layout"):
        parse_file(q)
    e = tmp_path / "empty.json"
    e.write_text("")
    with pytest.raises(TrajectoryError, match="empty"):
        parse_file(e)


def test_jsonl_truncated_last_line_is_partial(tmp_path):
    lines = [json.dumps(o) for o in claude_session()]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    pf = parse_file(p)
    assert pf.partial and "truncated last line" in pf.partial
    assert len(pf.trajectories[0].turns) == 4
    p.write_text(lines[0] + "\n{oops\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(TrajectoryError, match="invalid JSONL line 2"):
        parse_file(p)


def test_detect():
    assert detect({"trajectory": [], "history": []}) == "swe-agent"
    assert detect({"messages": [{"role": "assistant", "content": "```bash\nls\n```"}]}) == "mini-swe-agent-1"
    assert detect({"messages": [{"role": "assistant", "tool_calls": [{}]}]}) == "mini-swe-agent-tools"
    assert detect([{"type": "assistant", "message": {}}]) == "claude-code"
    with pytest.raises(TrajectoryError):
        detect(42)


def test_load_rejects_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(Path(tmp_path) / "nope.json")
