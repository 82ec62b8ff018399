"""Search policies: who chooses the tool calls. Each is a class with ``name`` and
``act(messages, tools, *, final) -> Reply`` (the ``fasbench.harness.Policy`` protocol). A policy
that needs the task itself (the RAG baselines need the corpus) also has ``bind(task) -> Policy``;
``bind_policy`` applies it when present.

``make_policy("NAME[:key=value,...]")`` builds one from a spec string, e.g. ``heuristic:turns=3``,
``heuristic:temperature=0.5,seed=3``, ``sequential:per_turn=1,turns=4`` (the heuristic's calls one a
turn), ``bm25:k=5``, ``dense``, ``openai:model=gpt-4o-mini,base_url=…``,
``hf`` or ``hf:model=smollm2-offline`` (the offline model), ``scripted`` is for tests and is built
directly. The families with an example each are ``fasbench.specs.POLICY_FAMILIES`` (what
`fasbench eval --help` lists); :func:`describe_policies` adds every parameter with its default and
comment (`fasbench policies`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from fasbench.policies import hf as hf_mod
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.policies.rag import RagPolicy
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.definitions import DefinitionsPolicy
from fasbench.policies.sequential import SequentialPolicy
from fasbench.specs import build as _build
from fasbench.specs import convert as _convert
from fasbench.specs import POLICY_FAMILIES, parse_spec

POLICIES = tuple(name for name, _, _ in POLICY_FAMILIES)
_INNER = {"heuristic": HeuristicPolicy, "definitions": DefinitionsPolicy}  # sequential's inner policies


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
        inner = kw.pop("inner", "heuristic")  # the wrapped policy: heuristic | definitions (the symbols tasks)
        if inner not in _INNER:
            raise ValueError(f"policy 'sequential' parameter 'inner': {inner!r} unknown; choose {' or '.join(_INNER)}")
        return SequentialPolicy(_build(_INNER[inner], name, kw, name=spec.strip()), per_turn, fixed["name"])
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


_CLASSES = {"heuristic": HeuristicPolicy, "sequential": HeuristicPolicy, "bm25": RagPolicy, "dense": RagPolicy,
            "openai": OpenAIPolicy, "hf": hf_mod.HFPolicy}
# set by make_policy or the harness, or Python-only (a dict): not spec parameters
_HIDDEN = {"name", "root", "query", "method", "tokenizer", "stats", "extra_body"}
_ONLY = {"bm25": {"model", "prefilter"}}  # dense-only fields of RagPolicy


def policy_parameters(name: str) -> list[tuple[str, str, str]]:
    """``(parameter, default, comment)`` of each spec parameter of policy family ``name``, the comment
    read from the field's line in its class."""
    if name not in _CLASSES:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    cls = _CLASSES[name]
    notes = dict(re.findall(r"^\s+(\w+):[^#\n]*#\s*(.+)$", inspect.getsource(cls), re.M))
    out = [("per_turn", "1", "calls a turn")] if name == "sequential" else []
    for f in dataclasses.fields(cls):
        if f.init and f.name not in _HIDDEN and f.name not in _ONLY.get(name, ()):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else "(required)")
            out.append((f.name, "(required)" if f.name == "model" and name == "openai" else str(default),
                        notes.get(f.name, "")))
    return out


def describe_policies() -> str:
    """Every policy family: an example spec, what it is, and its parameters (`fasbench policies`)."""
    lines = []
    for name, example, what in POLICY_FAMILIES:
        lines += [f"{name}: {what}", f"  e.g. --policy {example}"]
        lines += [f"    {k}={v}" + (f"  # {c}" if c else "") for k, v, c in policy_parameters(name)]
    lines += ["scripted: Python only (fasbench.policies.ScriptedPolicy(turns)), replays given turns; over HTTP, "
              "`python -m fasbench.scripted_server` answers scripted tool calls for the openai policy",
              "hf models (hf:model=NAME, also the checkpoints of `fasbench sft train`): smollm2-offline, tiny, "
              "a checkpoint folder, a hub id; `fasbench policies --model-path NAME` prints the folder to serve"]
    return "\n".join(lines)


def bind_policy(policy, task):
    """The policy bound to ``task`` when it needs the task (``bind``), else the policy itself."""
    bind = getattr(policy, "bind", None)
    return bind(task) if callable(bind) else policy


__all__ = ["POLICIES", "ScriptedPolicy", "bind_policy", "describe_policies", "make_policy", "parse_spec",
           "policy_parameters"]
