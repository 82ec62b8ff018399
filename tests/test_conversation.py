"""One conversation: the chat a policy saw in the harness, the SFT example built from that episode
and the RL rollout's messages (the environment driven as TRL's tool loop drives it) are the same
messages, and render to the same text under the chat template, for every registered tool set."""

import json

import pytest
from chat_view import plain

from fasbench.harness import Limits, initial_messages, run_episode
from fasbench.models import load_tokenizer
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Reply
from fasbench.rl.env import environment_class
from fasbench.sft.data import trace_example
from fasbench.tools import TOOLSETS, calls_for, make_toolset, toolset_class


# three turns: the last-turn note comes before the third reply, which answers (max_turns=3 where the note
# comes on the last turn, as Relace's; 2 for FastContext, whose released loop adds the note on the extra
# turn max_turns + 1); each tool set's own call shapes (fasbench.tools.calls_for)
def replies(toolset: str) -> list[Reply]:
    c = calls_for(toolset)
    return [
        Reply("Looking.", [c.search("a", "def resolve_redirects", None), c.list_dir("b", "requests")]),
        Reply("Reading.", [c.read("c", "requests/sessions.py", 1, 30)]),
        c.report("d", {"requests/sessions.py": [[1, 30]]}, "redirects"),
    ]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))[0]


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_harness_sft_and_rl_see_the_same_chat(task, toolset):
    lim = Limits(max_turns=2 if toolset_class(toolset).extra_final_turn else 3, max_calls_per_turn=4)
    script = replies(toolset)
    seen = []

    class Recording(ScriptedPolicy):
        def act(self, messages, tools, *, final):
            seen.append([dict(m) for m in messages])
            return super().act(messages, tools, final=final)

    trace = run_episode(task, Recording(list(script)), toolset, lim)
    assert trace.stop_reason == "reported" and trace.n_turns == 3
    harness_chat = seen[-1] + trace.to_messages()[-1:]  # what it was shown, then its answer
    assert trace.to_messages() == harness_chat
    assert any(m["role"] == "user" and m in trace.turns[2].notes for m in harness_chat)  # the last-turn note

    ts = make_toolset(toolset, task.root, lim.tool)
    sft = trace_example(trace, ts.schemas, task)["messages"]

    # the RL environment, driven as TRL's tool loop drives it: a generation starts a turn, each call
    # runs through the environment's tool method, the trainer appends the harness's last-turn note
    env = environment_class(toolset, lim)()
    env.reset(task=json.dumps(task.to_dict()))
    prompt = initial_messages(ts, task.query, lim)
    completion = []
    for r in script:
        env._begin_turn()
        msg = {"role": "assistant", "content": r.text}
        if r.calls:
            msg["tool_calls"] = [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in r.calls
            ]
        completion.append(msg)
        for c in r.calls:
            completion.append({"role": "tool", "name": c.name, "content": getattr(env, c.name)(**c.arguments)})
        if not r.calls:
            break  # no tool call: TRL's loop ends the rollout
        note = env._final_note()
        if note is not None:
            completion.append({"role": "user", "content": note})
    rl_chat = prompt + completion
    last = max(i for i, m in enumerate(rl_chat) if m["role"] == "assistant")
    rollout = env._episode(completion, prompt=prompt)

    want = plain(harness_chat)
    assert plain(sft) == want
    assert plain(rl_chat[: last + 1]) == want
    assert plain(rollout.to_messages()) == want
    tok = load_tokenizer("tiny")
    render = lambda m: tok.apply_chat_template(m, tools=ts.schemas, tokenize=False)  # noqa: E731
    assert render(plain(sft)) == render(plain(rl_chat[: last + 1])) == render(want)
