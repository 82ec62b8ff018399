"""Bringing your own trajectories (issue 27): OpenHands event lists are parsed into the step frame;
unknown layouts (and ATIF of an unknown version) are refused with what was seen and the supported formats; a run where
nothing parses exits non-zero with one error line, a run where some files parse goes on and writes
OUT/skipped.jsonl; ``--help`` lists the formats.

The OpenHands sample is written here from the documented schema (``openhands/events/serialization/
event.py::event_to_dict``: ``id, timestamp, source, message, action|observation, args | content +
extras, cause, tool_call_metadata {function_name, tool_call_id, model_response, total_calls_in_response},
llm_metrics``; the CodeActAgent's tools ``execute_bash`` and ``str_replace_editor``)."""

import gzip
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.parsers import FORMATS, SUPPORTED, TrajectoryError, parse_file

runner = CliRunner()


def _response(rid: str, calls: list[tuple[str, str, dict]], prompt: int, completion: int) -> dict:
    """A LiteLLM ModelResponse as OpenHands stores it in tool_call_metadata.model_response."""
    return {
        "id": rid,
        "created": 1736900000,
        "model": "litellm_proxy/claude-3-5-sonnet-20241022",
        "object": "chat.completion",
        "system_fingerprint": None,
        "choices": [
            {
                "finish_reason": "tool_calls",
                "index": 0,
                "message": {
                    "content": "Let me look.",
                    "role": "assistant",
                    "tool_calls": [
                        {"index": i, "function": {"arguments": json.dumps(a), "name": n}, "id": cid, "type": "function"}
                        for i, (cid, n, a) in enumerate(calls)
                    ],
                    "function_call": None,
                },
            }
        ],
        "usage": {
            "completion_tokens": completion,
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "completion_tokens_details": None,
            "prompt_tokens_details": {"audio_tokens": None, "cached_tokens": 0},
        },
    }


def _action(eid, action, args, resp=None, call=None, n_calls=1, message=""):
    e = {
        "id": eid,
        "timestamp": f"2025-01-15T10:00:{eid:02d}.000000",
        "source": "agent",
        "message": message,
        "action": action,
        "args": args,
    }
    if resp is not None:
        e["tool_call_metadata"] = {
            "function_name": call[1],
            "tool_call_id": call[0],
            "model_response": resp,
            "total_calls_in_response": n_calls,
        }
    return e


def _obs(eid, cause, observation, content, extras, source="agent"):
    return {
        "id": eid,
        "timestamp": f"2025-01-15T10:00:{eid:02d}.500000",
        "source": source,
        "message": f"Observed {observation}",
        "cause": cause,
        "observation": observation,
        "content": content,
        "extras": extras,
    }


def openhands_events() -> list[dict]:
    """A CodeActAgent trajectory: a turn with two parallel calls (grep + view), an edit, a text reply,
    a finish; with the system prompt, the task, a recall and agent-state events around them."""
    grep = ("call_01", "execute_bash", {"command": "grep -rn 'def separability_matrix' astropy/"})
    view = (
        "call_02",
        "str_replace_editor",
        {"command": "view", "path": "/workspace/astropy/modeling/separable.py", "view_range": [60, 120]},
    )
    r1 = _response("chatcmpl-1", [grep, view], prompt=5200, completion=140)
    edit = (
        "call_03",
        "str_replace_editor",
        {
            "command": "str_replace",
            "path": "/workspace/astropy/modeling/separable.py",
            "old_str": "cright[-right.shape[0]:, -right.shape[1]:] = 1",
            "new_str": "cright[-right.shape[0]:, -right.shape[1]:] = right",
        },
    )
    r2 = _response("chatcmpl-2", [edit], prompt=7400, completion=210)
    fin = ("call_04", "finish", {"message": "Fixed the nested CompoundModel case."})
    r4 = _response("chatcmpl-4", [fin], prompt=8300, completion=40)
    return [
        {
            "id": 0,
            "timestamp": "2025-01-15T10:00:00",
            "source": "agent",
            "message": "You are OpenHands agent...",
            "action": "system",
            "args": {
                "content": "You are OpenHands agent, a helpful AI assistant...",
                "tools": [],
                "openhands_version": "0.39.0",
                "agent_class": "CodeActAgent",
            },
        },
        {
            "id": 1,
            "timestamp": "2025-01-15T10:00:01",
            "source": "user",
            "message": "Fix separability_matrix",
            "action": "message",
            "args": {
                "content": "separability_matrix does not compute separability correctly for nested CompoundModels",
                "image_urls": None,
                "wait_for_response": False,
            },
        },
        {
            "id": 2,
            "timestamp": "2025-01-15T10:00:02",
            "source": "user",
            "message": "Retrieving content for: ...",
            "action": "recall",
            "args": {"recall_type": "workspace_context", "query": "separability_matrix", "thought": ""},
        },
        _obs(
            3,
            2,
            "recall",
            "Added workspace context",
            {"recall_type": "workspace_context", "repo_name": ""},
            source="environment",
        ),
        _obs(4, -1, "agent_state_changed", "", {"agent_state": "running", "reason": ""}, source="environment"),
        _action(
            5,
            "run",
            {
                "command": grep[2]["command"],
                "is_input": False,
                "thought": "Let me look.",
                "blocking": False,
                "hidden": False,
                "confirmation_state": "confirmed",
            },
            r1,
            grep,
            2,
            message="Running command: grep ...",
        ),
        _action(
            6,
            "read",
            {
                "path": view[2]["path"],
                "start": 0,
                "end": -1,
                "thought": "",
                "impl_source": "oh_aci",
                "view_range": [60, 120],
            },
            r1,
            view,
            2,
            message="Reading file: separable.py",
        ),
        _obs(
            7,
            5,
            "run",
            "astropy/modeling/separable.py:66:def separability_matrix(transform):",
            {"command": grep[2]["command"], "metadata": {"exit_code": 0, "pid": -1}, "hidden": False},
        ),
        _obs(
            8,
            6,
            "read",
            "Here's the result of running `cat -n` on separable.py:\n    60\t...",
            {"path": view[2]["path"], "impl_source": "oh_aci"},
        ),
        _action(
            9,
            "edit",
            {
                "path": edit[2]["path"],
                "command": "str_replace",
                "file_text": None,
                "old_str": edit[2]["old_str"],
                "new_str": edit[2]["new_str"],
                "insert_line": None,
                "content": "",
                "start": 1,
                "end": -1,
                "thought": "",
                "impl_source": "oh_aci",
            },
            r2,
            edit,
        ),
        _obs(
            10,
            9,
            "edit",
            "The file separable.py has been edited.",
            {
                "path": edit[2]["path"],
                "prev_exist": False,
                "old_content": None,
                "new_content": None,
                "impl_source": "oh_aci",
                "diff": "...",
            },
        ),
        _action(
            11,
            "message",
            {"content": "The fix is in; finishing.", "image_urls": None, "wait_for_response": False},
            message="The fix is in; finishing.",
        ),
        _action(
            12,
            "finish",
            {"final_thought": fin[2]["message"], "task_completed": "true", "outputs": {}, "thought": ""},
            r4,
            fin,
        ),
        _obs(13, -1, "agent_state_changed", "", {"agent_state": "finished", "reason": ""}, source="environment"),
    ]


def test_openhands_saved_trajectory_parses_into_turns_and_calls(tmp_path):
    p = tmp_path / "astropy__astropy-12907.json"
    p.write_text(json.dumps(openhands_events()))
    pf = parse_file(p)
    assert pf.format == "openhands" and "openhands" in FORMATS
    t = pf.trajectories[0]
    assert [len(u.calls) for u in t.turns] == [2, 1, 0, 1]  # parallel grep + view; edit; text reply; finish
    first = t.turns[0]
    assert [c.tool for c in first.calls] == ["execute_bash", "str_replace_editor"]
    assert first.calls[0].action == "grep -rn 'def separability_matrix' astropy/"
    assert first.calls[1].args == {
        "command": "view",
        "path": "/workspace/astropy/modeling/separable.py",
        "view_range": [60, 120],
    }
    assert (first.prompt_tokens, first.completion_tokens, first.estimated) == (5200, 140, False)
    assert t.turns[1].calls[0].args["command"] == "str_replace" and t.turns[3].calls[0].tool == "finish"
    assert t.model == "litellm_proxy/claude-3-5-sonnet-20241022" and t.exit_status == "finished"
    assert t.turns[2].estimated  # the text reply has no usage: estimated from the texts


def test_openhands_actions_are_classified_like_the_other_formats(tmp_path):
    d = tmp_path / "oh"
    d.mkdir()
    (d / "astropy__astropy-12907.json").write_text(json.dumps(openhands_events()))
    a = analyze_paths([d], progress=False)
    s = a.steps.filter(a.steps["is_call"])
    assert list(zip(s["tool"], s["category"])) == [
        ("execute_bash", "search"),
        ("str_replace_editor", "read"),
        ("str_replace_editor", "edit"),
        ("finish", "other"),
    ]
    assert s["weight"].to_list()[:2] == [0.5, 0.5]  # one turn's two parallel calls share it
    assert a.files.formats == {"openhands": 1}


def test_openhands_events_without_function_calling_metadata(tmp_path):
    """Older OpenHands (or a non-function-calling model): actions without tool_call_metadata are
    each a turn, their tool taken from the action type."""
    evs = [e for e in openhands_events() if e.get("source") == "agent"]
    for e in evs:
        e.pop("tool_call_metadata", None)
    p = tmp_path / "t.json"
    p.write_text(json.dumps(evs))
    t = parse_file(p).trajectories[0]
    calls = [(c.tool, c.args.get("command")) for u in t.turns for c in u.calls]
    assert calls == [
        ("execute_bash", "grep -rn 'def separability_matrix' astropy/"),
        ("str_replace_editor", "view"),
        ("str_replace_editor", "str_replace"),
    ]
    assert all(u.estimated for u in t.turns) and t.turns[0].obs_tokens > 0


def test_openhands_evaluation_output_jsonl(tmp_path):
    """evaluation/benchmarks/swe_bench output.jsonl: one instance per line, events in `history`."""
    rows = [
        {
            "instance_id": iid,
            "instruction": "...",
            "history": openhands_events(),
            "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "claude-3-5-sonnet"}},
            "test_result": {"git_patch": "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py"},
            "error": None,
        }
        for iid in ("astropy__astropy-12907", "django__django-11099")
    ]
    p = tmp_path / "output.jsonl.gz"
    p.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    pf = parse_file(p)
    assert pf.format == "openhands"
    assert [t.instance_id for t in pf.trajectories] == ["astropy__astropy-12907", "django__django-11099"]
    assert pf.trajectories[0].agent == "CodeActAgent"
    assert pf.trajectories[0].submission.startswith("diff --git a/astropy/modeling/separable.py")


def _atif() -> dict:
    return {
        "schema_version": "ATIF-v1.4",
        "session_id": "s1",
        "agent": {"name": "terminus-2", "version": "1.0", "model_name": "gpt-5"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "fix it"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "bash_command", "arguments": {"keystrokes": "ls\n"}}
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": "a b"}]},
            },
        ],
    }


def test_atif_is_parsed(tmp_path):  # refused before issue 31 (tests/test_atif.py has the rest)
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps(_atif()))
    pf = parse_file(p)
    assert pf.format == "atif" and [[c.tool for c in t.calls] for t in pf.trajectories[0].turns] == [["bash_command"]]


def test_unknown_layout_says_what_was_seen(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps([{"step": i, "cmd": "ls", "out": ""} for i in range(12)]))
    with pytest.raises(TrajectoryError, match=r"a JSON list of 12 objects with keys step, cmd, out"):
        parse_file(p)


def _cli(*args):
    return runner.invoke(app, ["trajectories", "analyze", *map(str, args), "--quiet"])


def test_cli_nothing_parsed_exits_non_zero_with_one_error_line(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps([{"kind": "x", "payload": i} for i in range(3)]))
    r = _cli(p, "--out", tmp_path / "out")
    assert r.exit_code == 2
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and str(p) in err[0] and "a JSON list of 3 objects with keys kind, payload" in err[0]
    assert SUPPORTED in err[0] and "OpenHands" in err[0] and "Claude Code" in err[0]
    skipped = [json.loads(ln) for ln in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert skipped == [{"path": str(p), "reason": skipped[0]["reason"]}] and "unknown" in skipped[0]["reason"]
    assert not (tmp_path / "out" / "steps.parquet").exists()  # no empty outputs that look like results


def test_cli_atif_file_of_an_unknown_version_fails_clearly(tmp_path):
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps({**_atif(), "schema_version": "ATIF-v2.0"}))
    r = _cli(p, "--out", tmp_path / "out")
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(err) == 1 and "unknown schema_version 'ATIF-v2.0'" in err[0] and SUPPORTED in err[0]


def test_cli_folder_of_unreadable_files_names_them(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.json").write_text("{not json")
    (d / "b.json").write_text(json.dumps({"foo": 1}))
    r = _cli(d, "--out", tmp_path / "out")
    assert r.exit_code == 2
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "none of the 2 trajectory files parsed" in err[0] and SUPPORTED in err[0]
    assert str(d / "b.json") in r.stdout and "a JSON object with keys foo" in r.stdout


def test_cli_no_trajectory_files(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("hi")
    r = _cli(d, "--out", tmp_path / "out")
    assert r.exit_code == 2 and "no trajectory files under" in r.stderr and SUPPORTED in r.stderr


def test_cli_some_parse_the_run_goes_on_and_lists_the_skipped(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "astropy__astropy-12907.json").write_text(json.dumps(openhands_events()))
    (d / "bad.json").write_text(json.dumps([1, 2, "x"]))
    out = tmp_path / "out"
    r = _cli(d, "--out", out)
    assert r.exit_code == 0, r.output
    assert f"skipped {d / 'bad.json'}: unknown trajectory layout (a JSON list of 3 values (2 int, 1 str))" in r.stdout
    assert SUPPORTED in r.stdout
    assert [json.loads(ln)["path"] for ln in (out / "skipped.jsonl").read_text().splitlines()] == [str(d / "bad.json")]
    assert (out / "steps.parquet").exists()
    assert json.loads((out / "summary.json").read_text())["files"]["formats"] == {"openhands": 1}


def test_help_lists_the_formats():
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "trajectories", "analyze", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0
    for name in FORMATS:
        assert name in r.stdout
    assert "OpenHands" in r.stdout and "Claude Code" in r.stdout and "SWE-agent .traj" in r.stdout
