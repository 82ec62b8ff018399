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

from fasbench.policies import hf as hf_mod
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.policies.openai_compat import OpenAIPolicy
from fasbench.policies.rag import RagPolicy
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.sequential import SequentialPolicy
from fasbench.specs import build as _build
from fasbench.specs import convert as _convert
from fasbench.specs import parse_spec

POLICIES = ("heuristic", "sequential", "bm25", "dense", "openai", "hf")


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
