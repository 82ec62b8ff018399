"""Chat-template families and the parallel-call check: a turn of N parallel tool calls must reach the
harness as N calls, in order, on every path that renders or parses them (SFT rendering, TRL's tool
loop in GRPO); a path that cannot keep them refuses with one line naming the family.

The families fasbench meets (:func:`template_family`, read from the template text):

- ``hermes_json``: ``<tool_call>{"name", "arguments"}</tool_call>`` blocks, one per call: Qwen2.5,
  Qwen3, Qwen3-Instruct-2507, and fasbench's offline SmolLM2 and tiny models, which get TRL's Qwen2.5
  template swapped in (``models.tool_chat_template``);
- ``qwen3_coder_xml``: ``<tool_call><function=NAME><parameter=P>…`` (Qwen3-Coder);
- ``llama3_json``: Llama 3.x, a bare ``{"name", "parameters"}`` object; its templates refuse to render
  more than one call a message ("This model only supports single tool-calls at once!") and TRL's
  Llama parser fails on two (measured with TRL 1.16: ``tests/test_parallel_calls.py``);
- ``chatml_no_tools``: ChatML without tool rendering, SmolLM2-Instruct's own template (TRL: "Unrecognized
  chat template");
- ``unknown``.

Text a model writes is read by ``models.parse_tool_calls`` whatever the family (its JSON fallback reads
Llama's ``;``-separated objects). Sources: the templates TRL ships (``trl/chat_templates/*.jinja``), the
issues that motivated the check (trl#4708: TRL's Qwen3 parser returned no call for two parallel ones;
llama.cpp#24181: one call a turn).
"""

from __future__ import annotations

from typing import Any

from fasbench.models import parse_tool_calls
from fasbench.tools import calls_for, tool_names

#: three parallel calls of three tools of the Relace tool set, in this order (the probe of :func:`check_parallel`)
PROBE = [
    calls_for("relace").read("p0", "src/a.py", 1, 9),
    calls_for("relace").search("p1", "def main"),
    calls_for("relace").list_dir("p2", "src"),
]


def template_family(template: str | None) -> str:
    """The family of a chat template's text (see the module docstring)."""
    t = template or ""
    if "<function=" in t:
        return "qwen3_coder_xml"
    if "<tool_call>" in t:
        return "hermes_json"
    if "<|start_header_id|>" in t or "<|python_tag|>" in t:
        return "llama3_json"
    if "<|im_start|>" in t:
        return "chatml_no_tools"
    return "unknown"


def probe_messages(calls=PROBE) -> list[dict]:
    """A user message and one assistant turn holding ``calls`` (OpenAI format)."""
    return [
        {"role": "user", "content": "Find the entry point."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": dict(c.arguments)}}
                for c in calls
            ],
        },
    ]


def _fail(path: str, family: str, why: str) -> ValueError:
    return ValueError(
        f"{path}: the {family} chat template cannot keep {len(PROBE)} parallel tool calls ({why}); "
        "use a Qwen2.5/Qwen3 tool template (fasbench.models.tool_chat_template())"
    )


def check_parallel(tok: Any, path: str, tools: list[dict] | None = None) -> str:
    """Render :data:`PROBE` as one assistant turn with ``tok``'s chat template and read it back with the
    path's parser: ``sft`` (the rendered text through ``models.parse_tool_calls``, what a model trained on
    it will write) or ``grpo`` (TRL's ``parse_response``, the parser of its tool loop; call
    ``rl.train.prepare_tokenizer`` first). Returns the family; a ``ValueError`` of one line naming the
    family when the template cannot render the turn or the parser does not give back the same calls
    in the same order."""
    family = template_family(getattr(tok, "chat_template", None))
    msgs = probe_messages()
    try:
        prompt = tok.apply_chat_template(msgs[:1], tools=tools, tokenize=False, add_generation_prompt=True)
        full = tok.apply_chat_template(msgs, tools=tools, tokenize=False)
    except Exception as e:  # noqa: BLE001 — a template's own refusal (jinja raise_exception) is the answer
        raise _fail(path, family, f"rendering failed: {str(e).splitlines()[0][:120]}") from None
    completion = full[len(prompt) :] if full.startswith(prompt) else full
    want = [(c.name, dict(c.arguments)) for c in PROBE]
    if path == "grpo":
        try:
            msg = tok.parse_response(
                tok(completion, add_special_tokens=False)["input_ids"],
                prefix=tok(prompt, add_special_tokens=False)["input_ids"],
            )
        except Exception as e:  # noqa: BLE001 — TRL's parser failing on the turn is the answer
            raise _fail(path, family, f"TRL's parser failed: {str(e).splitlines()[0][:120]}") from None
        got = [
            ((c.get("function") or c).get("name"), (c.get("function") or c).get("arguments"))
            for c in msg.get("tool_calls") or []
        ]
    elif path == "sft":
        got = [(c.name, c.arguments) for c in parse_tool_calls(completion, tools)[1]]
    else:
        raise ValueError(f"check_parallel: unknown path {path!r}; choose sft or grpo")
    if got != want:
        names = [n for n, _ in got]
        raise _fail(
            path,
            family,
            f"{len(got)} read back ({', '.join(map(str, names)) or 'none'}), "
            f"{len(want)} written ({', '.join(n for n, _ in want)})",
        )
    return family


__all__ = ["PROBE", "check_parallel", "probe_messages", "template_family", "tool_names"]
