"""FastContext's loop as released (``src/fastcontext/agent/agent.py`` ``_agent_loop`` @5fb8c1d): a reply
without tool calls ends the episode, the last-turn message comes on the extra turn max_turns + 1, and no
observation is cut beyond the tools' own limits. The Relace loop keeps fasbench's rules."""

from __future__ import annotations

import pytest

from fasbench.harness import NO_CALL_NOTE, Limits, run_episode
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Reply, ToolCall
from fasbench.scoring.reward import score_episode
from fasbench.tools import ToolLimits
from fasbench.tools.fastcontext_published import FINAL_TURN_MESSAGE


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))[0]


def glob_call(i):
    return ToolCall(f"g{i}", "Glob", {"pattern": "requests/*.py"})


def test_a_reply_with_neither_calls_nor_answer_ends_the_episode_with_score_0(task):
    tr = run_episode(
        task,
        ScriptedPolicy(
            [Reply("Let me think about it."), Reply("<final_answer>\nrequests/api.py:1-5\n</final_answer>")]
        ),
        "fastcontext",
        Limits(max_turns=4),
    )
    assert tr.stop_reason == "no_answer" and tr.n_turns == 1 and tr.report is None
    assert not any(NO_CALL_NOTE == n["content"] for t in tr.turns for n in t.notes)
    s = score_episode("fastcontext", tr, task)
    assert s.value == 0.0


def test_the_last_turn_message_comes_on_turn_max_turns_plus_1(task):
    seen = []

    class Rec(ScriptedPolicy):
        def act(self, messages, tools, *, final):
            seen.append((final, messages[-1]))
            return super().act(messages, tools, final=final)

    tr = run_episode(task, Rec([Reply("", [glob_call(i)]) for i in range(10)]), "fastcontext", Limits(max_turns=3))
    assert tr.n_turns == 4 and tr.stop_reason == "max_turns"  # agent.py: "No final answer after 3 turns."
    assert tr.meta["final_note_turn"] == 3 and tr.turns[3].notes == [{"role": "user", "content": FINAL_TURN_MESSAGE}]
    assert [f for f, _ in seen] == [False, False, False, True]
    assert seen[3][1] == {"role": "user", "content": FINAL_TURN_MESSAGE}
    assert tr.turns[3].results and not tr.turns[3].results[0].is_error  # the extra turn's calls still run


def test_an_answer_beside_tool_calls_is_not_the_answer(task):
    ans = "<final_answer>\nrequests/api.py:1-5\n</final_answer>"
    tr = run_episode(task, ScriptedPolicy([Reply(ans, [glob_call(0)]), Reply(ans)]), "fastcontext", Limits(max_turns=4))
    assert tr.n_turns == 2 and tr.stop_reason == "reported" and tr.report.files == {"requests/api.py": [[1, 5]]}


def test_relace_loop_keeps_fasbench_rules(task):
    tr = run_episode(task, ScriptedPolicy([Reply("thinking")] * 3), "relace", Limits(max_turns=3))
    assert tr.n_turns == 3 and tr.stop_reason == "max_turns"
    assert tr.turns[1].notes == [{"role": "user", "content": NO_CALL_NOTE}]
    assert tr.meta["final_note_turn"] == 2


def test_no_observation_cap_for_fastcontext(task, tmp_path):
    big = "\n".join(f"x_{i} = '{'a' * 90}'" for i in range(1500)) + "\n"
    (__import__("pathlib").Path(task.root) / "requests" / "big_module.py").write_text(big)
    lim = Limits(max_turns=2, tool=ToolLimits(max_output_chars=4000))  # a CPU profile's cap
    read = Reply("", [ToolCall("r", "Read", {"path": "/repo/requests/big_module.py"})])
    fc = run_episode(
        task,
        ScriptedPolicy([read, Reply("<final_answer>\nrequests/big_module.py:1-2\n</final_answer>")]),
        "fastcontext",
        lim,
    )
    out = fc.turns[0].results[0].output
    assert len(out) > 140_000 and "output truncated" not in out and "1500|x_1499" in out
    rel = run_episode(
        task,
        ScriptedPolicy([Reply("", [ToolCall("v", "view_file", {"path": "/repo/requests/big_module.py"})])]),
        "relace",
        lim,
    )
    assert "output limit reached" in rel.turns[0].results[0].output  # Relace keeps fasbench's cap
