"""Models that write their tool calls as text: the OpenAI-compatible policy reads the common formats
from the reply content with fasbench's one text parser (``models.parse_tool_calls``, the one the
local-model policy uses) and says so in the trace; an episode without any parsable call is flagged and
`fasbench eval` / ``run_eval`` warn about it in one line; `eval --help` lists every policy family.
A real scripted chat-completions server (``fasbench.policies.scripted_server``, its own process) writes the
calls in each format."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest
from servers import scripted_server

from fasbench.evaluation.evaluate import run_eval, tool_call_warnings
from fasbench.evaluation.rundir import read_run
from fasbench.harness import Limits, run_episode
from fasbench.models import parse_tool_calls
from fasbench.policies import POLICIES, make_policy
from fasbench.policies.scripted_server import PROSE
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import read_traces, write_tasks


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))


@pytest.fixture(scope="module")
def server_url():
    with scripted_server("--delay-s", "0.01", "--turns", "2") as url:
        yield url


def steered(task, fmt):
    return replace(task, query=f"{task.query}\n[[server:format={fmt}]]")


def policy(url, **kw):
    extra = "".join(f",{k}={v}" for k, v in kw.items())
    return make_policy(f"openai:model=scripted,base_url={url},retries=0,api_key_env={extra}")


@pytest.mark.parametrize("fmt", ["hermes_json", "qwen3_coder_xml"])
def test_calls_written_as_text_are_parsed_and_marked(toy, server_url, fmt):
    tr = run_episode(steered(toy[0], fmt), policy(server_url), "relace", Limits(max_turns=2))
    assert tr.error is None and tr.stop_reason == "reported", (tr.error, tr.stop_reason)
    first, last = tr.turns
    assert [c.name for c in first.calls] == [
        "view_directory",
        "view_file",
    ]  # both parallel calls, also in one XML block
    assert first.calls[1].arguments == {"path": "/repo/requests/__init__.py", "view_range": [1, 40]}
    assert not any(r.is_error for r in first.results)
    assert first.text == "Turn 1: exploring."  # the call blocks left the text; the calls are structured now
    rec = first.requests[-1]
    assert rec["calls_from_text"] == 2 and rec["text_format"] == fmt and rec["text_errors"] == []
    assert rec["finish_reason"] == "stop"
    assert last.calls[0].name == "report_back" and tr.report.files == {"requests/sessions.py": [[1, 20]]}
    assert "no_tool_call" not in tr.meta
    # the chat sent back to the server carries the calls as structured tool_calls
    msgs = tr.to_messages()
    assert [c["function"]["name"] for c in msgs[2]["tool_calls"]] == ["view_directory", "view_file"]


def test_structured_calls_are_not_marked_and_text_parsing_can_be_off(toy, server_url):
    tr = run_episode(toy[0], policy(server_url), "relace", Limits(max_turns=2))
    assert tr.stop_reason == "reported" and "calls_from_text" not in tr.turns[0].requests[-1]
    off = run_episode(
        steered(toy[0], "hermes_json"), policy(server_url, text_tool_calls="false"), "relace", Limits(max_turns=2)
    )
    assert all(not t.calls for t in off.turns) and "<tool_call>" in off.turns[0].text
    assert off.meta["no_tool_call"] is True


def test_one_parser_reads_every_text_format():
    tools = [
        {
            "type": "function",
            "function": {"name": "grep_search", "parameters": {"properties": {"query": {"type": "string"}}}},
        }
    ]
    fenced = 'I will search.\n```json\n{"name": "grep_search", "arguments": {"query": "def send"}}\n```'
    assert parse_tool_calls(fenced, tools)[:2] == (
        "I will search.",
        [parse_tool_calls('<tool_call>{"name": "grep_search", "arguments": {"query": "def send"}}</tool_call>')[1][0]],
    )
    bare = (
        '[{"name": "grep_search", "arguments": {"query": "a"}}, {"name": "grep_search", "parameters": {"query": "b"}}]'
    )
    assert [c.arguments for c in parse_tool_calls(bare, tools)[1]] == [{"query": "a"}, {"query": "b"}]
    # JSON that is not a call of a known tool stays text
    assert parse_tool_calls('{"name": "nothing_we_have", "arguments": {}}', tools)[1] == []
    assert parse_tool_calls('{"files": 3}', tools)[1] == []
    # Qwen3-Coder: one block, several functions; an unclosed function is an error, the next one still a call
    xml = (
        "<tool_call><function=grep_search><parameter=query>x<function=grep_search>"
        "<parameter=query>y</parameter></function></tool_call>"
    )
    _, calls, errors = parse_tool_calls(xml, tools)
    assert [c.arguments for c in calls] == ["<function=grep_search><parameter=query>x", {"query": "y"}]
    assert len(errors) == 1 and "unclosed" in errors[0]


def test_run_eval_warns_about_episodes_without_a_parsable_call(toy, server_url, tmp_path, capsys):
    tasks = [steered(toy[0], "prose"), steered(toy[1], "prose"), toy[2]]
    run_eval(
        tasks,
        f"openai:model=scripted,base_url={server_url},retries=0,api_key_env=",
        "relace",
        tmp_path / "run",
        Limits(max_turns=2),
        workers=2,
        progress=False,
    )
    out = capsys.readouterr().out.strip().splitlines()
    want = (
        f"warning: 2 of 3 episodes had no parsable tool call in any turn (model wrote text like: "
        f"{PROSE[:80]!r}); see docs/own_model.md"
    )
    assert out[-1] == want
    assert read_run(tmp_path / "run").calls[-1]["warnings"] == [want]
    flags = {t.task_id: t.meta.get("no_tool_call") for t in read_traces(tmp_path / "run" / "traces.jsonl")}
    assert flags == {toy[0].id: True, toy[1].id: True, toy[2].id: None}


def test_calls_read_from_text_get_a_note(toy, server_url, tmp_path):
    tasks = [steered(toy[0], "qwen3_coder_xml"), toy[1]]
    run_eval(
        tasks,
        f"openai:model=scripted,base_url={server_url},retries=0,api_key_env=",
        "relace",
        tmp_path / "run",
        Limits(max_turns=2),
        workers=1,
        progress=False,
        warn=False,
    )
    (note,) = tool_call_warnings(tmp_path / "run" / "traces.jsonl")
    assert note.startswith("note: 1 of 2 episodes had tool calls read from the reply text (qwen3_coder_xml)")


def _cli(*args, **kw):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "fasbench.cli", *args], capture_output=True, text=True, env=env, timeout=600, **kw
    )


@pytest.mark.slow
def test_cli_eval_ends_with_the_warning(toy, server_url, tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", [steered(toy[0], "prose")])
    r = _cli(
        "eval",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--max-turns",
        "2",
        "--out",
        str(tmp_path / "run"),
        "--policy",
        f"openai:model=scripted,base_url={server_url},retries=0,api_key_env=",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "warning: 1 of 1 episodes had no parsable tool call in any turn (model wrote text like: 'I would start"
        )
    )
    assert "no parsable tool call" not in r.stdout  # once, at the end


@pytest.mark.slow
def test_eval_help_lists_every_policy_family():
    r = _cli("eval", "--help")
    text = " ".join(r.stdout.split())
    assert r.returncode == 0
    for name, example in ((n, f.example) for n, f in POLICIES.items()):
        assert f"{example} " in text, (name, text[-1500:])
        if name not in ("hf", "dense"):  # the example builds (hf and dense would load a model)
            make_policy(example.replace("NAME", "m"))
    assert "hf:model=smollm2-offline" in text and "openai:model=" in text
    r = _cli("policies")
    assert r.returncode == 0
    for name in POLICIES:
        assert f"\n{name}: " in "\n" + r.stdout
    for param in ("text_tool_calls=True", "max_new_tokens=512", "per_turn=1", "prefilter=0", "turns=3"):
        assert param in r.stdout


def test_malformed_text_calls_stay_text_for_the_server():
    """A block that does not parse gives no call (its raw text as arguments would make the next
    request fail: transformers serve answers HTTP 500 to a chat whose earlier call is not JSON)."""
    from fasbench.policies.openai_compat import reply_calls

    good = '<tool_call>{"name": "grep_search", "arguments": {"query": "a"}}</tool_call>'
    bad = '<tool_call>{"name": "grep_search", "arguments": {"query": "unterminated'
    text, calls, note = reply_calls({"content": f"Look.\n{good}\n{bad}"})
    assert [c.arguments for c in calls] == [{"query": "a"}] and calls[0].id == "text_call_0"
    assert text == f"Look.\n\n{bad}" and note["calls_from_text"] == 1 and "invalid JSON" in note["text_errors"][0]
    text, calls, note = reply_calls({"content": bad})
    assert (text, calls, note["calls_from_text"]) == (bad, [], 0)
    # the local-model policy's default: the malformed block is a call the harness answers with an error
    assert parse_tool_calls(bad)[1][0].arguments.startswith('{"name"')
