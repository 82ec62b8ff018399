"""The compact protocol (``prompt: compact``, fasbench/tools/compact.py): a short first turn for the
same tools, validation and harness; the ``prompt`` key validated wherever a profile sets it."""

from __future__ import annotations

import pytest
from tools_fixture import make_repo

from fasbench.harness import Limits, run_episode
from fasbench.models import load_tokenizer
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.records import Reply, ToolCall
from fasbench.rl.config import load_config
from fasbench.rl.protocol import first_turn, first_turn_tokens
from fasbench.sft.data import BuildConfig
from fasbench.sft.data import limits as build_limits
from fasbench.tools import ToolLimits, compact, make_toolset
from fasbench.tools.relace_published import SCHEMAS, SYSTEM_PROMPT

COMPACT = Limits(max_turns=3, tool=ToolLimits(prompt="compact"))

#: The stated bound of a compact first turn with SmolLM2-135M's tokenizer (measured: 574 tokens with
#: a `symbols` query, against 2,154 for the published prompt).
COMPACT_BOUND = 600


def test_compact_shows_short_text_for_the_same_tools(tmp_path):
    root = make_repo(tmp_path)
    pub, com = make_toolset("relace", root), make_toolset("relace", root, COMPACT.tool)
    assert pub.system_prompt(3, 8) == SYSTEM_PROMPT and com.system_prompt(3, 8) == compact.SYSTEM_PROMPT
    assert [s["function"]["name"] for s in com.schemas] == [s["name"] for s in SCHEMAS]
    assert com.schemas != pub.schemas and com.user_prompt("q") == "Repository: /repo\nQuery: q"
    published = {s["name"]: s["parameters"]["properties"] for s in SCHEMAS}
    for s in com.schemas:  # every shown parameter is a published one of the same type
        for p, spec in s["function"]["parameters"]["properties"].items():
            assert published[s["function"]["name"]][p]["type"] in (spec["type"], [spec["type"], "null"])
    # same implementation and validation: a call's result is the published tool set's, errors too
    for call in (
        ToolCall("a", "grep_search", {"query": "def Login"}),
        ToolCall("b", "view_file", {"path": "/repo/src/pkg/auth.py", "view_range": [1, 4]}),
        ToolCall("c", "grep_search", {"query": "x", "case_sensitive": "no"}),
    ):
        assert com.execute(call).output == pub.execute(call).output


def test_run_episode_under_compact(tmp_path):
    from fasbench.records import Gold, Task

    root = make_repo(tmp_path)
    task = Task(
        id="t", query="where is Login", repo="demo", gold=Gold(edited={"src/pkg/auth.py": [[4, 6]]}), root=str(root)
    )
    turns = [
        Reply(text="", calls=[ToolCall("a", "grep_search", {"query": "def Login"})]),
        Reply(
            text="", calls=[ToolCall("r", "report_back", {"explanation": "x", "files": {"src/pkg/auth.py": [[4, 6]]}})]
        ),
    ]
    tr = run_episode(task, ScriptedPolicy(turns), "relace", COMPACT)
    assert tr.stop_reason == "reported" and tr.meta["prompt"] == "compact"
    assert tr.prompt[0]["content"] == compact.SYSTEM_PROMPT and "where is Login" in tr.prompt[1]["content"]
    assert "prompt" not in run_episode(task, ScriptedPolicy(turns), "relace", Limits(max_turns=3)).meta


@pytest.mark.slow
def test_first_turn_tokens_bound():
    tok = load_tokenizer("smollm2-offline")
    n_compact = first_turn_tokens(tok, "relace", COMPACT)
    n_published = first_turn_tokens(tok, "relace", Limits())
    assert n_compact <= COMPACT_BOUND < 2000 < n_published
    msgs, tools = first_turn("relace", COMPACT, "find x")
    assert msgs[1]["content"].endswith("find x") and len(tools) == 5


@pytest.mark.parametrize(
    "make",
    [
        lambda: ToolLimits(prompt="short"),
        lambda: load_config("mini", sets=["prompt=short"]),
        lambda: BuildConfig(prompt="short"),
    ],
)
def test_bad_prompt_value_is_one_line_error(make):
    with pytest.raises(ValueError, match=r"prompt 'short' unknown; choose one of published, compact") as e:
        make()
    assert "\n" not in str(e.value)


def test_fastcontext_has_no_compact_protocol(tmp_path):
    with pytest.raises(ValueError, match="prompt 'compact' is not available"):
        make_toolset("fastcontext", make_repo(tmp_path), ToolLimits(prompt="compact"))


def test_mini_profiles_use_compact_and_defaults_stay_published():
    from fasbench.sft.train import load_profile

    assert load_config("mini").limits.tool.prompt == "compact"
    assert build_limits(load_profile("mini").build).tool.prompt == "compact"
    assert load_config("tiny").limits.tool.prompt == "published"
    assert ToolLimits().prompt == "published" and BuildConfig().prompt == "published"


def test_scripted_policies_run_under_compact(tmp_path):
    """The dialects of the scripted policies find the tool set from the compact schemas too
    (``fasbench.tools.toolset_of`` builds the schemas without a workspace)."""
    from fasbench.policies import make_policy
    from fasbench.records import Gold, Task
    from fasbench.tools import toolset_of

    root = make_repo(tmp_path)
    assert toolset_of(make_toolset("relace", root, COMPACT.tool).schemas) == "relace"
    task = Task(
        id="t",
        query="Find the files that define these 1 symbols: Login.",
        repo="demo",
        gold=Gold(edited={"src/pkg/auth.py": [[4, 6]]}),
        root=str(root),
    )
    for spec in ("heuristic", "sequential:inner=definitions,per_turn=1"):
        tr = run_episode(task, make_policy(spec).bind(task), "relace", COMPACT)
        assert tr.stop_reason == "reported" and tr.error is None, (spec, tr.error)
