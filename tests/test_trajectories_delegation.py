"""Delegated search counted (issue 39, item 4): subagents nested under the call that delegated to them
(Claude Code sidechains inline and in ``subagents/``, ATIF embedded subagents, OpenHands delegation),
the delegation call its own category, and the shares and Relace's measures with the subagent's work
counted as search and left out, side by side.

The Claude Code session is hand-built from the transcript format (``isSidechain``, ``parentUuid``,
``sessionId``, ``agentId``, ``toolUseResult.agentId``, ``<session>/subagents/agent-<id>.jsonl``;
sources in fasbench/trajectories/README.md)."""

from __future__ import annotations

import json

import pytest

from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.classify import analyze_call
from fasbench.trajectories.parsers import parse_file
from fasbench.trajectories.trajectory import subagents

SESSION = "5e55-10n"
U = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 990, "output_tokens": 40}


def _line(kind, uuid, parent, content, side=False, mid=None, usage=None, agent=None, ts="00", **extra):
    o = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "isSidechain": side,
        "timestamp": f"2026-11-02T10:00:{ts}.000Z",
        "message": {"role": kind, "content": content},
        **extra,
    }
    if kind == "assistant":
        o["message"].update({"id": mid, "model": "claude-sonnet-4-5", "usage": usage or U})
    if agent:
        o["agentId"] = agent
    return o


def _tool(tid, name, inp):
    return [{"type": "tool_use", "id": tid, "name": name, "input": inp}]


def _result(tid, text):
    return [{"type": "tool_result", "tool_use_id": tid, "content": text}]


PROMPT = "Find where add() is defined and what calls it"


def main_lines(agent_id: str | None = "a7f3") -> list[dict]:
    """The main agent: delegates its search to an Explore subagent, then reads, edits and tests."""
    res = {"agentId": agent_id, "totalTokens": 4200} if agent_id else {"totalTokens": 4200}
    big = {**U, "cache_read_input_tokens": 3000}
    return [
        _line("user", "m0", None, "add() is wrong; fix it"),
        _line(
            "assistant",
            "m1",
            "m0",
            _tool("t1", "Task", {"subagent_type": "Explore", "description": "find add", "prompt": PROMPT}),
            mid="msg_1",
            ts="01",
        ),
        _line(
            "user", "m2", "m1", _result("t1", "src/calc.py:1 def add; tests/test_calc.py:3"), ts="30", toolUseResult=res
        ),
        _line(
            "assistant",
            "m3",
            "m2",
            _tool("t2", "Read", {"file_path": "/repo/src/calc.py"}),
            mid="msg_2",
            usage=big,
            ts="31",
        ),
        _line("user", "m4", "m3", _result("t2", "1\tdef add(a, b):\n2\t    return a - b"), ts="32"),
        _line(
            "assistant",
            "m5",
            "m4",
            _tool("t3", "Edit", {"file_path": "/repo/src/calc.py", "old_string": "a - b", "new_string": "a + b"}),
            mid="msg_3",
            usage=big,
            ts="33",
        ),
        _line("user", "m6", "m5", _result("t3", "The file has been updated."), ts="34"),
        _line(
            "assistant",
            "m7",
            "m6",
            _tool("t4", "Bash", {"command": "python -m pytest -q"}),
            mid="msg_4",
            usage=big,
            ts="35",
        ),
        _line("user", "m8", "m7", _result("t4", "1 passed"), ts="40"),
        _line("assistant", "m9", "m8", [{"type": "text", "text": "Fixed."}], mid="msg_5", usage=big, ts="41"),
    ]


def explore_lines(agent_id: str | None = "a7f3") -> list[dict]:
    """The Explore subagent's sidechain: its prompt, a grep, a read, its answer."""
    su = {**U, "cache_read_input_tokens": 1990}
    return [
        _line("user", "s0", None, PROMPT, side=True, agent=agent_id, ts="02"),
        _line("assistant", "s1", "s0", _tool("x1", "Grep", {"pattern": "def add"}), True, "msg_s1", su, agent_id, "05"),
        _line("user", "s2", "s1", _result("x1", "src/calc.py:1:def add(a, b):"), True, agent=agent_id, ts="06"),
        _line(
            "assistant",
            "s3",
            "s2",
            _tool("x2", "Read", {"file_path": "/repo/src/calc.py"}),
            True,
            "msg_s2",
            su,
            agent_id,
            "10",
        ),
        _line("user", "s4", "s3", _result("x2", "1\tdef add(a, b):"), True, agent=agent_id, ts="11"),
        _line("assistant", "s5", "s4", [{"type": "text", "text": "src/calc.py:1"}], True, "msg_s3", su, agent_id, "29"),
    ]


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return path


@pytest.fixture(params=["inline-old", "inline-agentid", "subagents-folder"])
def session(request, tmp_path):
    """The same delegating session in the three layouts Claude Code has written."""
    if request.param == "inline-old":  # v1: sidechain lines in the session file, no agentId anywhere
        lines = main_lines(None)
        lines[3:3] = explore_lines(None)
        return _write(tmp_path / "p" / f"{SESSION}.jsonl", lines)
    if request.param == "inline-agentid":
        lines = main_lines()
        lines[3:3] = explore_lines()
        return _write(tmp_path / "p" / f"{SESSION}.jsonl", lines)
    _write(tmp_path / "p" / SESSION / "subagents" / "agent-a7f3.jsonl", explore_lines())
    return _write(tmp_path / "p" / f"{SESSION}.jsonl", main_lines())


def test_the_sidechain_is_kept_as_a_subagent_under_the_task_call(session):
    pf = parse_file(session)
    assert pf.format == "claude-code" and pf.dropped_lines == 0 and len(pf.trajectories) == 1
    main = pf.trajectories[0]
    assert [c.tool for t in main.turns for c in t.calls] == ["Task", "Read", "Edit", "Bash"]
    ((depth, turn, call, c, sub),) = subagents(main)
    assert (depth, turn, call, c.tool) == (1, 1, 0, "Task")
    assert [c.tool for t in sub.turns for c in t.calls] == ["Grep", "Read"] and len(sub.turns) == 3
    assert sub.meta["role"] == "subagent" and sub.meta["subagent_type"] == "Explore"
    assert sub.meta["wall_s"] == 27.0 and main.meta["wall_s"] == 41.0
    assert sub.turns[0].prompt_tokens == 2000 and sub.turns[0].completion_tokens == 40


def test_the_delegation_call_is_its_own_category():
    assert analyze_call("Task", {"subagent_type": "Explore", "prompt": "x"}).category == "delegate"
    assert analyze_call("Agent", {"prompt": "x"}).category == "delegate"
    assert analyze_call("delegate", {"agent": "BrowsingAgent"}).category == "delegate"


def test_delegated_search_is_counted_beside_the_main_agent_alone(session, tmp_path):
    s = analyze_paths([session], progress=False).summary()
    o, w = s["overall"], s["overall"]["with_subagents"]
    assert o["delegations"] == 1 and o["calls"] == 4 and w["calls"] == 6
    # the main agent alone: the Task call is neither read nor search
    assert o["turn_share"]["delegate"] == 0.25 and o["read_search_turn_share"] == 0.25
    # the subagent's grep and read and the delegation counted as search
    assert w["read_search_turn_share"] == pytest.approx(4 / 6, abs=1e-6)
    r = s["relace"]
    left, counted = r["search_phase_share"]["value"], r["subagents_counted"]["search_phase_share"]["value"]
    assert left == 0.0  # the delegation ends the search phase at the first call (what the analysis said before)
    # counted as search: the Task turn (1040), the subagent's three turns (3 × 2040) and the main agent's
    # Read (3050) before its Edit, of all 1040 + 6120 + 3 × 3050 + 3050 tokens
    assert counted == pytest.approx((1040 + 6120 + 3050) / (1040 + 6120 + 4 * 3050), abs=1e-6)
    assert r["subagents_counted"]["first_non_search_category"] == {"edit": 1}


def test_a_sidechain_no_call_claims_is_left_out_and_counted(tmp_path):
    lines = [o for o in main_lines(None) if o["uuid"] not in ("m1", "m2")]  # no Task call
    lines[1:1] = explore_lines(None)
    pf = parse_file(_write(tmp_path / "s.jsonl", lines))
    assert pf.dropped_lines == 6 and not list(subagents(pf.trajectories[0]))


def test_untrusted_ids_name_no_file(tmp_path):
    """An agentId from the file never names a file: a subagent file is found by listing the folder."""
    lines = main_lines("../../etc/passwd")
    p = _write(tmp_path / "p" / f"{SESSION}.jsonl", lines)
    _write(tmp_path / "p" / SESSION / "subagents" / "agent-zz.jsonl", explore_lines("zz"))
    main = parse_file(p).trajectories[0]
    ((_, _, _, _, sub),) = subagents(main)  # linked by its prompt, not by the id
    assert sub.meta["agent_id"] == "zz"


def test_a_folder_of_sessions_reads_subagent_files_with_their_session_only(tmp_path):
    _write(tmp_path / "p" / SESSION / "subagents" / "agent-a7f3.jsonl", explore_lines())
    _write(tmp_path / "p" / f"{SESSION}.jsonl", main_lines())
    a = analyze_paths([tmp_path / "p"], progress=False)
    assert a.files.parsed == [str(tmp_path / "p" / f"{SESSION}.jsonl")] and not a.files.skipped
    assert a.trajectories.height == 1 and a.trajectories["subagents"].to_list() == [1]


def test_an_openhands_delegate_is_nested_under_its_delegate_call(tmp_path):
    def act(i, action, args, source="agent"):
        return {
            "id": i,
            "source": source,
            "action": action,
            "args": args,
            "message": "",
            "timestamp": "2026-01-01T00:00:00",
        }

    def obs(i, cause, kind, content):
        return {
            "id": i,
            "source": "environment" if kind != "delegate" else "agent",
            "observation": kind,
            "cause": cause,
            "content": content,
            "extras": {},
            "message": "",
            "timestamp": "2026-01-01T00:00:00",
        }

    events = [
        act(0, "message", {"content": "fix add()"}, "user"),
        act(1, "delegate", {"agent": "RepoExplorer", "inputs": {"task": "find add()"}}),
        act(2, "run", {"command": "grep -rn 'def add' src"}),
        obs(3, 2, "run", "src/calc.py:1:def add"),
        act(4, "read", {"path": "/workspace/src/calc.py"}),
        obs(5, 4, "read", "def add(a, b): return a - b"),
        act(6, "finish", {"outputs": {"files": ["src/calc.py"]}}),
        obs(7, 1, "delegate", "src/calc.py"),
        act(8, "edit", {"path": "/workspace/src/calc.py", "command": "str_replace", "old_str": "-", "new_str": "+"}),
        obs(9, 8, "edit", "edited"),
    ]
    p = tmp_path / "oh.json"
    p.write_text(json.dumps(events))
    main = parse_file(p).trajectories[0]
    assert [c.tool for t in main.turns for c in t.calls] == ["delegate", "str_replace_editor"]
    ((_, _, _, c, sub),) = subagents(main)
    assert [c.tool for t in sub.turns for c in t.calls][:2] == ["execute_bash", "str_replace_editor"]
    s = analyze_paths([p], progress=False).summary()
    assert s["overall"]["delegations"] == 1
    assert (
        s["relace"]["search_phase_share"]["value"] == 0.0
        and s["relace"]["subagents_counted"]["search_phase_share"]["value"] > 0.5
    )


def test_analyze_prints_both_views(session, tmp_path):
    from typer.testing import CliRunner

    from fasbench.cli import app

    r = CliRunner().invoke(app, ["trajectories", "analyze", str(session), "--out", str(tmp_path / "an"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "tokens before the first non-search call: 0.000 mean" in r.output
    assert "1 delegation calls: subagents' work left out (above) | counted as search:" in r.output
    assert "tokens before the first non-search call 0.527 mean" in r.output


def test_a_subagent_with_an_implausible_token_count_skips_its_file(tmp_path):
    """Untrusted input: the nested subagent's numbers are checked as the main agent's are."""
    lines = main_lines()
    side = explore_lines()
    side[1]["message"]["usage"] = {"input_tokens": 1e300, "output_tokens": 5}
    lines[3:3] = side
    p = _write(tmp_path / "s.jsonl", lines)
    a = analyze_paths([p], progress=False)
    assert not a.files.parsed and "implausible token count" in a.files.skipped[0][1]
