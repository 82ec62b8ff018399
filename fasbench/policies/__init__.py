"""Search policies: who chooses the tool calls. Each is a class with ``name`` and
``act(messages, tools, *, final) -> Reply`` (the ``fasbench.harness.Policy`` protocol). A policy
that needs the task itself (the RAG baselines need the corpus) also has ``bind(task) -> Policy``;
``bind_policy`` applies it when present.

``make_policy("NAME[:key=value,...]")`` builds one from a spec string, e.g. ``heuristic:turns=3``,
``heuristic:temperature=0.5,seed=3``, ``sequential:per_turn=1,turns=4`` (the heuristic's calls one a
turn), ``bm25:k=5``, ``dense``, ``openai:model=gpt-4o-mini,base_url=…``,
``hf`` (the offline model), ``scripted`` is for tests and is built directly.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from fasbench.policies import hf as hf_mod
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.policies.rag import RagPolicy
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.sequential import SequentialPolicy

POLICIES = ("heuristic", "sequential", "bm25", "dense", "openai", "hf")


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


def _convert(value: str, typ: Any, where: str) -> Any:
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


def _build(cls, pname: str, kw: dict[str, str], **fixed):
    hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
    fields = {f.name for f in dataclasses.fields(cls) if f.init} if dataclasses.is_dataclass(cls) else None
    args = dict(fixed)
    for k, v in kw.items():
        if fields is not None and k not in fields:
            raise ValueError(f"policy {pname!r} has no parameter {k!r}; it has: "
                             f"{', '.join(sorted(f for f in fields if f not in fixed and f not in ('root', 'query')))}")
        args[k] = _convert(v, hints.get(k, str), f"policy {pname!r} parameter {k!r}") if fields is not None else _literal(v)
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


def make_policy(spec: str, **overrides):
    """A policy from ``NAME[:key=value,...]``; ``overrides`` are passed to the constructor as is.
    The policy's ``name`` is the spec (so runs are labelled by what produced them) unless given."""
    name, kw = parse_spec(spec)
    fixed = dict(overrides)
    fixed.setdefault("name", spec.strip())
    if name == "heuristic":
        return _build(HeuristicPolicy, name, kw, **fixed)
    if name == "sequential":  # the heuristic's calls, per_turn a turn (Relace's sequential starting point)
        per_turn = _convert(kw.pop("per_turn", "1"), int, "policy 'sequential' parameter 'per_turn'")
        return SequentialPolicy(_build(HeuristicPolicy, name, kw, name=spec.strip()), per_turn, fixed["name"])
    if name in ("bm25", "dense"):
        return _build(RagPolicy, name, kw, method=name, **fixed)
    if name == "openai":
        return _build(OpenAIPolicy, name, kw, **fixed)
    if name == "hf":
        cls = getattr(hf_mod, "HFPolicy", None) or getattr(hf_mod, "HfPolicy", None)
        if cls is None:
            raise ValueError("fasbench.policies.hf defines no HFPolicy class")
        return _build(cls, name, kw, **fixed)
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")


def bind_policy(policy, task):
    """The policy bound to ``task`` when it needs the task (``bind``), else the policy itself."""
    bind = getattr(policy, "bind", None)
    return bind(task) if callable(bind) else policy


__all__ = ["POLICIES", "ScriptedPolicy", "bind_policy", "make_policy", "parse_spec"]
