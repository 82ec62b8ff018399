"""Parallel calls survive every path (issue 39 item 5): per chat-template family and per path (the
in-process HF policy, an OpenAI-compatible server, TRL's tool loop in GRPO, SFT rendering), a turn of
N parallel calls emitted is N parsed and N executed, in order; a path that cannot keep them refuses
with one line naming the family. Each check is shown to catch a parser that drops, merges or reorders
the calls of a turn (`BROKEN`), on the HF policy per family, the OpenAI-compatible path per text format,
SFT rendering and GRPO's TRL parser."""

import copy
import json
from pathlib import Path

import pytest
from servers import scripted_server
from tools_fixture import make_repo

import fasbench.chat_families as families
import fasbench.policies.hf as hf_module
from fasbench.chat_families import PROBE, check_parallel, probe_messages, template_family
from fasbench.harness import Limits, run_episode
from fasbench.models import TINY, load_model, parse_tool_calls, tool_chat_template
from fasbench.policies.hf import HFPolicy
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.records import Gold, Task, ToolCall
from fasbench.tools import make_toolset

WANT = [
    ("view_file", {"path": "src/pkg/auth.py", "view_range": [1, 9]}),
    ("grep_search", {"query": "def Login", "case_sensitive": True, "exclude_pattern": None, "include_pattern": None}),
    ("view_directory", {"path": "src", "include_hidden": False}),
]


def _trl_template(name: str) -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def _hermes(template: str) -> str:
    """The assistant turn of WANT as ``template`` renders it (the text a model trained on it writes)."""
    _, tok = _tiny()
    msgs = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                for i, (n, a) in enumerate(WANT)
            ],
        },
    ]
    prompt = tok.apply_chat_template(msgs[:1], tokenize=False, add_generation_prompt=True, chat_template=template)
    full = tok.apply_chat_template(msgs, tokenize=False, chat_template=template)
    return full[len(prompt) :].replace("<|im_end|>", "").strip()


def _xml(one_block: bool) -> str:
    funcs = [
        "<function=%s>\n%s</function>"
        % (
            n,
            "".join(
                f"<parameter={k}>\n{json.dumps(v) if not isinstance(v, str) else v}\n</parameter>\n"
                for k, v in a.items()
            ),
        )
        for n, a in WANT
    ]
    if one_block:
        return "<tool_call>\n" + "\n".join(funcs) + "\n</tool_call>"
    return "\n".join(f"<tool_call>\n{f}\n</tool_call>" for f in funcs)


#: family -> the text a model of that family writes for the three parallel calls of WANT
EMITTED = {
    "qwen2.5 (and SmolLM2/tiny, swapped template)": lambda: _hermes(tool_chat_template(training=False)),
    "qwen3": lambda: _hermes(_trl_template("qwen3")),
    "qwen3-instruct-2507": lambda: _hermes(_trl_template("qwen3_instruct_2507")),
    "qwen3-coder xml, one block": lambda: _xml(True),
    "qwen3-coder xml, a block per call": lambda: _xml(False),
    "llama3.x json, ';'-separated": lambda: "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in WANT),
    "text fallback: fenced json list": lambda: (
        "```json\n" + json.dumps([{"name": n, "arguments": a} for n, a in WANT]) + "\n```"
    ),
    "text fallback: bare json list": lambda: json.dumps([{"name": n, "arguments": a} for n, a in WANT]),
}

_TINY: list = []


def _tiny():
    if not _TINY:
        _TINY.extend(load_model(TINY))
    return _TINY


def check_turn(turn, want=WANT):
    """N emitted -> N parsed -> N executed, in order."""
    assert [(c.name, c.arguments) for c in turn.calls] == want, "the parsed calls are not the emitted ones, in order"
    assert [r.call_id for r in turn.results] == [c.id for c in turn.calls], "not every call ran, in order"


def break_calls(kind: str, calls: list, merge) -> list:
    """A turn's parsed calls as a broken parser gives them: ``drops`` keeps the first only (as TRL's Qwen3
    parser once did for two calls, trl#4708), ``merges``
    makes the first two one call (``merge``: the first's name, both argument sets), ``reorders`` swaps them."""
    if kind == "drops" or len(calls) < 2:
        return calls[:1] if kind == "drops" else calls
    if kind == "merges":
        return [merge(calls[0], calls[1]), *calls[2:]]
    return [calls[1], calls[0], *calls[2:]]


def _merge_tool_calls(a: ToolCall, b: ToolCall) -> ToolCall:
    both = (
        {**a.arguments, **b.arguments}
        if isinstance(a.arguments, dict) and isinstance(b.arguments, dict)
        else f"{a.arguments}{b.arguments}"
    )
    return ToolCall(a.id, a.name, both)


def broken_parser(kind: str):
    """``models.parse_tool_calls`` broken the ``kind`` way (see :func:`break_calls`)."""

    def parse(text, tools=None, id_prefix="call", keep_malformed=False):
        rest, calls, errors = parse_tool_calls(text, tools, id_prefix, keep_malformed)
        return rest, break_calls(kind, calls, _merge_tool_calls), errors

    return parse


#: the ways a parser loses parallel calls that every check must catch
BROKEN = {k: broken_parser(k) for k in ("drops", "merges", "reorders")}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    root = make_repo(tmp_path_factory.mktemp("parallel"))
    return Task(
        id="t", query="where is Login?", repo="local", root=str(root), gold=Gold(edited={"src/pkg/auth.py": [[4, 6]]})
    )


@pytest.mark.parametrize("family", list(EMITTED))
def test_text_parser_keeps_every_family_parallel_calls(family):
    tools = make_toolset("relace", ".").schemas
    _, calls, errors = parse_tool_calls(EMITTED[family](), tools)
    assert not errors and [(c.name, c.arguments) for c in calls] == WANT


def _hf_episode(task, text: str):
    """The in-process HF policy (the real tiny model and tokenizer) whose generation emits ``text``."""
    import torch

    model, tok = _tiny()
    pol = HFPolicy(model=model, tokenizer=tok, max_new_tokens=8, temperature=0)
    emitted = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]

    def generate(input_ids, **kw):  # the model "writes" the family's text: decoding, parsing, running are real
        return torch.cat([input_ids, emitted], dim=1)

    model.generate = generate
    try:
        return run_episode(task, pol, "relace", Limits(max_turns=2))
    finally:
        del model.generate


@pytest.mark.parametrize("family", list(EMITTED))
def test_hf_policy_parses_and_runs_every_parallel_call(task, family):
    check_turn(_hf_episode(task, EMITTED[family]()).turns[0])


@pytest.mark.parametrize("broken", list(BROKEN))
@pytest.mark.parametrize("family", list(EMITTED))
def test_hf_check_catches_a_parser_that_drops_merges_or_reorders_calls(task, family, broken, monkeypatch):
    monkeypatch.setattr(hf_module, "parse_tool_calls", BROKEN[broken])
    with pytest.raises(AssertionError, match="not the emitted ones"):
        check_turn(_hf_episode(task, EMITTED[family]()).turns[0])


@pytest.mark.parametrize("fmt", ["structured", "hermes_json", "qwen3_coder_xml"])
def test_openai_compatible_server_calls_all_run_in_order(task, fmt, monkeypatch, broken=False):
    from fasbench.policies.scripted_server import DEFAULT_CALLS

    want = [(c["name"], c["arguments"]) for c in DEFAULT_CALLS]
    with scripted_server("--delay-s", "0", "--turns", "2", "--tool-format", fmt) as url:
        tr = run_episode(task, OpenAIPolicy(model="scripted", base_url=url, retries=0), "relace", Limits(max_turns=2))
    check_turn(tr.turns[0], want)
    if fmt == "structured":
        return
    import fasbench.policies.openai_compat as oc

    for bad in BROKEN.values():  # the content's calls through a broken parser: dropped, merged, reordered
        monkeypatch.setattr(oc, "parse_tool_calls", bad)
        with scripted_server("--delay-s", "0", "--turns", "2", "--tool-format", fmt) as url:
            tr = run_episode(
                task, OpenAIPolicy(model="scripted", base_url=url, retries=0), "relace", Limits(max_turns=2)
            )
        with pytest.raises(AssertionError, match="not the emitted ones"):
            check_turn(tr.turns[0], want)


@pytest.mark.parametrize(
    "template,family",
    [
        ("qwen2_5_training", "hermes_json"),
        ("qwen3_training", "hermes_json"),
        ("qwen3_instruct_2507_training", "hermes_json"),
    ],
)
@pytest.mark.parametrize("path", ["sft", "grpo"])
def test_sft_and_grpo_keep_parallel_calls_of_qwen_templates(template, family, path):
    from fasbench.rl.train import prepare_tokenizer

    tok = copy.deepcopy(_tiny()[1])
    tok.chat_template = _trl_template(template)
    if path == "grpo":
        prepare_tokenizer(tok)
    assert check_parallel(tok, path, make_toolset("relace", ".").schemas) == family


@pytest.mark.parametrize("path", ["sft", "grpo"])
@pytest.mark.parametrize("template", ["llama3_1", "llama3_2"])
def test_llama3_templates_refuse_in_one_line_naming_the_family(template, path):
    tok = copy.deepcopy(_tiny()[1])
    tok.chat_template = _trl_template(template)
    with pytest.raises(ValueError) as e:
        check_parallel(tok, path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(
        f"{path}: the llama3_json chat template cannot keep 3 parallel tool calls"
    )


def test_llama3_trl_parser_fails_on_two_calls_so_grpo_refuses():
    """TRL's Llama parser itself (given a turn the template never renders) fails on two calls: the
    reason GRPO must refuse the family rather than lose calls."""
    from fasbench.rl.train import prepare_tokenizer

    tok = copy.deepcopy(_tiny()[1])
    tok.chat_template = _trl_template("llama3_2")
    prepare_tokenizer(tok)
    text = "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in WANT[:2]) + "<|eot_id|>"
    with pytest.raises(ValueError):
        tok.parse_response(tok(text, add_special_tokens=False)["input_ids"], prefix="")


def test_smollm2_own_template_is_swapped_and_an_unknown_one_refuses_grpo_in_one_line(tmp_path):
    """SmolLM2-Instruct's own ChatML template renders no tools and TRL has no parser for it ("Unrecognized
    chat template"): fasbench's loader swaps in the Qwen2.5 tool template, which keeps parallel calls. A
    template that does render tools in a format TRL cannot read is refused by make_trainer in one line
    naming the family."""
    from fasbench.models import load_tokenizer
    from fasbench.rl.config import RLConfig
    from fasbench.rl.train import make_trainer, prepare_tokenizer

    model, tok = _tiny()
    chatml = (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    for name, template in (
        ("smollm2", chatml),
        (
            "custom",
            chatml.replace(
                "message['content']",
                "message['content'] + ((message.tool_calls | tojson) if message.tool_calls else '')",
            ),
        ),
    ):
        ckpt = tmp_path / name
        model.save_pretrained(ckpt)
        t2 = copy.deepcopy(tok)
        t2.chat_template = template
        t2.save_pretrained(ckpt)
        assert template_family(template) == "chatml_no_tools"
    swapped = prepare_tokenizer(load_tokenizer(tmp_path / "smollm2"))
    assert check_parallel(swapped, "grpo") == "hermes_json"
    with pytest.raises(ValueError) as e:
        make_trainer(RLConfig(model=str(tmp_path / "custom"), output_dir=str(tmp_path / "out")), tasks=[])
    assert "\n" not in str(e.value) and str(e.value).startswith(
        "grpo: TRL's tool loop has no tool-call parser for the chatml_no_tools chat template"
    )


@pytest.mark.parametrize("path", ["sft", "grpo"])
@pytest.mark.parametrize(
    "broken,got",
    [
        ("drops", "1 read back \\(view_file\\)"),
        ("merges", "2 read back \\(view_file, view_directory\\)"),
        ("reorders", "3 read back \\(grep_search, view_file, view_directory\\)"),
    ],
)
def test_check_parallel_catches_a_parser_that_drops_merges_or_reorders_calls(monkeypatch, path, broken, got):
    """SFT: the rendered turn read back by a broken ``parse_tool_calls``; GRPO: by TRL's ``parse_response``
    broken the same way (its calls are dicts ``{"type", "function": {"name", "arguments"}}``)."""
    from fasbench.rl.train import prepare_tokenizer

    tok = copy.deepcopy(_tiny()[1])
    tok.chat_template = _trl_template("qwen3_training") if path == "grpo" else tool_chat_template()
    if path == "grpo":
        prepare_tokenizer(tok)
    assert check_parallel(tok, path) == "hermes_json"
    if path == "sft":
        monkeypatch.setattr(families, "parse_tool_calls", BROKEN[broken])
    else:
        real = tok.parse_response

        def merge(a, b):
            fa, fb = a.get("function") or a, b.get("function") or b
            return {**a, "function": {"name": fa["name"], "arguments": {**fa["arguments"], **fb["arguments"]}}}

        def parse_response(ids, prefix=None):
            msg = dict(real(ids, prefix=prefix))
            msg["tool_calls"] = break_calls(broken, list(msg.get("tool_calls") or []), merge)
            return msg

        tok.parse_response = parse_response
    with pytest.raises(ValueError, match=f"^{path}: .*{got}, 3 written"):
        check_parallel(tok, path)


def test_sft_rendering_of_a_parallel_turn_reads_back_in_order():
    """The SFT example of a trace turn with the probe's calls, rendered with fasbench's template (what
    sft/train.py tokenizes), holds every call in order."""
    from fasbench.models import to_template_messages

    tok = copy.deepcopy(_tiny()[1])
    tok.chat_template = tool_chat_template()
    msgs = to_template_messages(probe_messages())
    text = tok.apply_chat_template(msgs, tokenize=False)
    assert [(c.name, c.arguments) for c in parse_tool_calls(text)[1]] == [(c.name, c.arguments) for c in PROBE]
