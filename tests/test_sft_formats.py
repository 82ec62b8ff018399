"""FastContext's released SFT data formats (``training/fastcontext-sft/data`` @0dc077f of the
``T0mSIlver/fastcontext`` history, Microsoft's release): the synthesis prompt of
``parallel_toolcalls`` verbatim, and ``linerange`` as a tool-free task with its own system prompt
and ``<files>`` blocks. The SHA-256 values below were computed from the release's files
(``git show 0dc077f:training/fastcontext-sft/data/gen_parallel_toolcalls_1turn.py`` /
``gen_linerange.py``, each string constant evaluated as Python)."""

from __future__ import annotations

import hashlib

import pytest

from fasbench.harness import Limits
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Gold, Reply, Task, ToolCall, write_tasks
from fasbench.sft import release_formats as rf
from fasbench.sft.data import BuildConfig, build, linerange_example, load_dataset, synthesized_example, teacher_trace
from fasbench.tools import make_toolset

RELEASE_SHA256 = {
    "PARALLEL_SYNTHESIS_SYSTEM": "b0e42457f21ad4882c578efd99a2625ca3c37b6e78d9aeef5b6c6580b61c1436",  # TASK_SYSTEM_PROMPT
    "WORK_ENV_TEMPLATE": "62cd1e1ac1a52efc54f4f26b002a308c13059475197c6bf8df586e5577dab302",  # work_env_template
    "LINERANGE_SYSTEM": "21808ad21f8295ba2e9e3296a373e29fec17df8bc5b4e08bfe062c5db4d2d6a6",  # system
    "LINERANGE_TASK_PROMPT": "8d4754b35fa48569ebbcee8f3db98fbfb7d5d327ffd864be71f0d6f2b48342af",  # task_prompt
}


def test_release_texts_are_verbatim():
    for name, digest in RELEASE_SHA256.items():
        assert hashlib.sha256(getattr(rf, name).encode()).hexdigest() == digest, name
    assert rf.PARALLEL_SYNTHESIS_SYSTEM.startswith("You are a helpful data synthesis assistant")
    assert rf.LINERANGE_SYSTEM.startswith("\nYour main goal is to locate relevant file paths")


def test_synthesis_messages_as_prepare_samples_message():
    msgs = rf.synthesis_messages("Find X", "/repo", "a.py\nb")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == (
        rf.PARALLEL_SYNTHESIS_SYSTEM + "\n\n" + "\n## Working Environment\n\nOS Version: Linux"
        "\n\nShell: bash\n\nWorkspace Path:/repo\n\nThe directory listing of the workspace is:"
        "\n```\na.py\nb\n```\n"
    )
    assert msgs[1]["content"] == (
        "<query>Find X</query>\nNow, let's generate parallel tool calls to explore "
        "the codebase based on the above query."
    )


def _task(tmp_path, edited):
    (tmp_path / "a.py").write_text("".join(f"l{i}\n" for i in range(1, 8)))
    (tmp_path / "b.py").write_text("x" * 2005 + "\ny\n")
    (tmp_path / ".hidden").write_text("")
    return Task(id="t", query="where is l3", repo="x/y", gold=Gold(edited=edited), root=str(tmp_path), split="train")


def test_linerange_is_tool_free_with_file_blocks(tmp_path):
    task = _task(tmp_path, {"a.py": [[3, 4]], "b.py": [[1, 1]]})
    ex = linerange_example(task, BuildConfig(toolset="fastcontext", linerange_context=1))
    assert ex["tools"] == [] and ex["n_calls"] == 0 and ex["source"] == "linerange"
    system, user, answer = ex["messages"]
    assert system == {"role": "system", "content": rf.LINERANGE_SYSTEM}
    # hand-built: a.py lines 2..5 (3-4 widened by 1), b.py lines 1..2 (its first line cut at 2000 + "...")
    files = (
        "<files>\n"
        "\n```/repo/a.py:2-5\n2|l2\n3|l3\n4|l4\n5|l5\n\n```"
        "\n```/repo/b.py:1-2\n1|" + "x" * 2000 + "...\n2|y\n\n```"
        "\n</files>"
    )
    assert user == {"role": "user", "content": files + "\n\n" + rf.LINERANGE_TASK_PROMPT}
    assert answer == {"role": "assistant", "content": "<final_answer>\n/repo/a.py:3-4\n/repo/b.py:1-1\n</final_answer>"}


def test_linerange_refuses_a_gold_path_outside_the_root(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "secret.py").write_text("s\n")
    task = Task(
        id="t", query="q", repo="x/y", gold=Gold(edited={"../secret.py": [[1, 1]]}), root=str(tmp_path / "repo")
    )
    assert linerange_example(task, BuildConfig(toolset="fastcontext")) is None


def test_teacher_sees_the_synthesis_prompt_and_example_is_the_explorers_chat(tmp_path):
    task = _task(tmp_path, {"a.py": [[3, 4]]})
    cfg = BuildConfig(toolset="fastcontext")
    seen = []

    class Teacher(ScriptedPolicy):
        def act(self, messages, tools, *, final):
            seen.append((messages, [t["function"]["name"] for t in tools]))
            return super().act(messages, tools, final=final)

    calls = [{"name": "Grep", "arguments": {"pattern": "l3"}}, {"name": "Glob", "arguments": {"pattern": "*.py"}}]
    tr = teacher_trace(Teacher([{"text": "I will search.", "calls": calls}]), task, cfg)
    assert seen[0][0] == rf.synthesis_messages("where is l3", "/repo", "a.py\nb.py")
    assert sorted(seen[0][1]) == ["Glob", "Grep", "Read"]
    ts = make_toolset("fastcontext", task.root)
    ex = synthesized_example(task, ts, Limits(max_turns=4), tr.turns[0])
    system, user, asst = ex["messages"]
    assert (
        system["role"] == "system" and "${WORK_DIR_LS}" not in system["content"] and "a.py\nb.py" in system["content"]
    )
    assert user == {"role": "user", "content": "<query>where is l3</query>"}
    assert asst["content"] == "" and [c["function"]["name"] for c in asst["tool_calls"]] == ["Grep", "Glob"]
    assert synthesized_example(task, ts, Limits(max_turns=4), Reply(text="no calls")) is None
    bad = Reply(calls=[ToolCall(id="c", name="Grep", arguments="{not json")])
    assert synthesized_example(task, ts, Limits(max_turns=4), bad) is None


def test_build_writes_the_release_linerange_for_fastcontext(tmp_path):
    (tmp_path / "repo").mkdir()
    task = _task(tmp_path / "repo", {"a.py": [[3, 4]]})
    f = tmp_path / "tasks.jsonl"
    write_tasks(f, [task])
    cfg = BuildConfig(
        toolset="fastcontext",
        reward="fastcontext",
        task_source=str(f),
        max_tasks={"train": 5},
        mix={"linerange": 1.0},
        linerange_context=0,
    )
    stats = build(cfg, tmp_path / "out")
    assert stats["examples"]["train"] == {"linerange": 1}
    ex = load_dataset(tmp_path / "out")["train"][0]
    assert ex["tools"] == [] and ex["messages"][0]["content"] == rf.LINERANGE_SYSTEM
    assert ex["messages"][2]["content"] == "<final_answer>\n/repo/a.py:3-4\n</final_answer>"
    # relace keeps fasbench's adaptation: a viewing turn through the harness, then report_back
    cfg.toolset, cfg.reward = "relace", "relace"
    stats = build(cfg, tmp_path / "out_relace")
    ex = load_dataset(tmp_path / "out_relace")["train"][0]
    assert ex["tools"] and ex["n_calls"] >= 2


@pytest.mark.slow
def test_build_with_a_teacher_over_http(tmp_path):
    """parallel_teacher: a real OpenAI-compatible server on 127.0.0.1 gets the synthesis prompt; its
    calls become the parallel_toolcalls example (the first turns of episodes are then not used)."""
    import json

    from servers import recording_chat_server

    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate([("Grep", {"pattern": "l3"}), ("Glob", {"pattern": "**/*.py"})])
    ]
    with recording_chat_server({"content": "Let me look.", "tool_calls": calls}, "tool_calls") as (url, seen):
        (tmp_path / "repo").mkdir()
        task = _task(tmp_path / "repo", {"a.py": [[3, 4]]})
        f = tmp_path / "tasks.jsonl"
        write_tasks(f, [task])
        cfg = BuildConfig(
            toolset="fastcontext",
            reward="fastcontext",
            task_source=str(f),
            max_tasks={"train": 5},
            mix={"parallel_toolcalls": 1.0},
            parallel_teacher=f"openai:model=t,base_url={url},api_key_env=",
        )
        stats = build(cfg, tmp_path / "out")
    assert stats["examples"]["train"] == {"parallel_toolcalls": 1}
    assert seen[0]["messages"] == rf.synthesis_messages("where is l3", "/repo", "a.py\nb.py")
    ex = load_dataset(tmp_path / "out")["train"][0]
    assert ex["messages"][1] == {"role": "user", "content": "<query>where is l3</query>"}
    assert ex["messages"][2]["content"] == "" and [c["function"]["name"] for c in ex["messages"][2]["tool_calls"]] == [
        "Grep",
        "Glob",
    ]


def test_multiturn_rows_as_released_no_tools_and_no_answer_kept(tmp_path):
    """gen_multiturn_traj.py @716fe4b: rows carry no tools, and every trajectory ending with the
    assistant's message is kept (no reward filter). A policy that stops without an answer: kept with
    multiturn_release (the FastContext profile), dropped by fasbench's reward filter otherwise."""
    from servers import recording_chat_server

    from fasbench.records import Trace
    from fasbench.sft.data import released_keeps

    with recording_chat_server({"content": "I could not find it."}, "stop") as (url, _):
        (tmp_path / "repo").mkdir()
        task = _task(tmp_path / "repo", {"a.py": [[3, 4]]})
        f = tmp_path / "tasks.jsonl"
        write_tasks(f, [task])
        kw = dict(
            toolset="fastcontext",
            reward="fastcontext",
            task_source=str(f),
            max_tasks={"train": 5},
            mix={"multiturn_traj": 1.0},
            policy=f"openai:model=t,base_url={url},api_key_env=",
            min_reward=0.0,
        )
        released = build(BuildConfig(multiturn_release=True, **kw), tmp_path / "out")
        filtered = build(BuildConfig(**kw), tmp_path / "out_filtered")
    assert released["examples"]["train"] == {"multiturn_traj": 1} and released["query_sources"] == {
        "problem_statement": 1
    }
    ex = load_dataset(tmp_path / "out")["train"][0]
    assert ex["tools"] == [] and ex["messages"][-1] == {"role": "assistant", "content": "I could not find it."}
    assert filtered["examples"]["train"] == {} and filtered["dropped"] == {"policy: reward < 0.0": 1}
    assert not released_keeps(Trace(task_id="t", policy="p", toolset="fastcontext"))  # system + user only
