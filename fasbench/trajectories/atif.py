"""ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001) trajectories → ``Trajectory``.

An ATIF file is one JSON object: ``schema_version`` ("ATIF-v1.0" … "ATIF-v1.8"), ``agent``
(name, version, model_name, tool_definitions), ``steps`` (``step_id`` from 1, ``source``
system|user|agent, ``message``, ``tool_calls`` [{tool_call_id, function_name, arguments}],
``observation.results`` [{source_call_id, content, subagent_trajectory_ref}], ``metrics``
{prompt_tokens, completion_tokens, cached_tokens, cost_usd}), ``final_metrics`` and, since v1.7,
embedded subagents (``subagent_trajectories``, each a complete trajectory with its own
``trajectory_id``) that an agent step's observation refers to.

``check`` validates a file against the published schema (``atif_schema.json``: the JSON schema of
harbor 0.26.0's pydantic models, vendored with its attribution) and the rules of those models'
validators that a JSON schema cannot say; a file of an unknown version or a broken shape raises
``TrajectoryError`` with one line naming the version or the first broken place. ``parse`` gives one
``Trajectory`` per agent: the main agent first, then each embedded subagent (``meta["role"]`` =
``subagent``, ``meta["parent"]``); one turn per agent step, its tool calls as calls (a ``command``
argument is the action text, as in the other tool-call formats), its metrics as the turn's tokens
(estimated with the offline tokenizer where a step has none). Subagents in other files
(``trajectory_path``) are listed in ``meta["subagent_refs"]`` and read when those files are given.
An embedded subagent is nested under the call whose result refers to it (``Call.subagent``); one referred
to from a step before the first agent step without a call is a hand-off (``Trajectory.handed_off``).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from fasbench.trajectories.tokens import count_tokens_batch
from fasbench.trajectories.trajectory import AgentTurn, Call, Trajectory, TrajectoryError

VERSIONS = tuple(f"ATIF-v1.{i}" for i in range(9))  # what harbor 0.26.0's Trajectory accepts
WRITE_VERSION = "ATIF-v1.7"  # what fasbench writes (fasbench.trajectories.atif_trace)
SCHEMA_FILE = Path(__file__).with_name("atif_schema.json")
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


def is_atif(obj: Any) -> bool:
    """An ATIF trajectory: a JSON object with an ``ATIF-…`` schema_version, or steps and an agent."""
    return isinstance(obj, dict) and (
        str(obj.get("schema_version", "")).startswith("ATIF")
        or isinstance(obj.get("steps"), list)
        and isinstance(obj.get("agent"), dict)
    )


@lru_cache(maxsize=1)
def schema() -> dict:
    """The vendored published schema (``atif_schema.json``)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _where(path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "the root"


def _rules(d: dict, where: str = "") -> str | None:
    """The first rule of harbor's model validators that ``d`` breaks (None: none)."""
    for i, s in enumerate(d["steps"]):
        at = f"{where}steps[{i}]"
        if s["step_id"] != i + 1:
            return f"{at}.step_id: expected {i + 1} (sequential from 1), got {s['step_id']}"
        if s.get("timestamp") is not None:
            try:
                datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00"))
            except ValueError:
                return f"{at}.timestamp: not ISO 8601: {s['timestamp'][:60]!r}"
        if s["source"] != "agent":
            bad = [k for k in _AGENT_ONLY if s.get(k) is not None]
            if bad:
                return f"{at}.{bad[0]}: only agent steps have it (source is {s['source']!r})"
        elif s.get("llm_call_count") == 0 and (s.get("metrics") is not None or s.get("reasoning_content") is not None):
            return f"{at}: llm_call_count 0 (no model call) with metrics or reasoning_content"
        ids = {tc["tool_call_id"] for tc in s.get("tool_calls") or []}
        for j, r in enumerate((s.get("observation") or {}).get("results") or []):
            if r.get("source_call_id") is not None and r["source_call_id"] not in ids:
                return f"{at}.observation.results[{j}].source_call_id {r['source_call_id']!r} is not a tool call of the step"
            for k, ref in enumerate(r.get("subagent_trajectory_ref") or []):
                if ref.get("trajectory_id") is None and ref.get("trajectory_path") is None:
                    return f"{at}.observation.results[{j}].subagent_trajectory_ref[{k}]: neither trajectory_id nor path"
    seen: set[str] = set()
    for i, sub in enumerate(d.get("subagent_trajectories") or []):
        at = f"{where}subagent_trajectories[{i}]"
        if sub.get("trajectory_id") is None:
            return f"{at}.trajectory_id: required for an embedded subagent"
        if sub["trajectory_id"] in seen:
            return f"{at}.trajectory_id {sub['trajectory_id']!r}: not unique"
        seen.add(sub["trajectory_id"])
        why = _rules(sub, at + ".")
        if why:
            return why
    return None


def check(obj: Any) -> str:
    """The version of a valid ATIF trajectory; raises TrajectoryError (one line) for an unknown
    version or a shape the published schema or its validators refuse."""
    if not isinstance(obj, dict):
        raise TrajectoryError(f"ATIF: expected a JSON object, got {type(obj).__name__}")
    v = obj.get("schema_version", "ATIF-v1.8")  # harbor's default when absent
    if v not in VERSIONS:
        raise TrajectoryError(f"ATIF: unknown schema_version {v!r}; this fasbench reads {', '.join(VERSIONS)}")
    # local import: jsonschema is heavy to import (python -X importtime: its
    # rfc3987_syntax), paid only when an ATIF file is read or written, not by every trajectory read
    import jsonschema

    err = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(obj))
    if err is not None:
        raise TrajectoryError(f"ATIF {v}: broken shape at {_where(err.absolute_path)}: {err.message[:300]}")
    why = _rules(obj)
    if why:
        raise TrajectoryError(f"ATIF {v}: {why}")
    return v


def text(content: Any) -> str:
    """A message or observation content as text (multimodal parts: their text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _call(tc: dict) -> Call:
    args = tc.get("arguments") if isinstance(tc.get("arguments"), dict) else {}
    action = args.get("command", args.get("cmd"))
    return Call(
        str(tc["function_name"]), str(action) if action is not None else json.dumps(args, ensure_ascii=False), args
    )


def _one(d: dict, path: Path, tid: str, parent: str | None, instance: str) -> tuple[Trajectory, dict[str, Call]]:
    """One agent's trajectory and, by embedded subagent id, the call whose result refers to it."""
    agent = d["agent"]
    delegated: dict[str, Call | None] = {}  # None: referred to from a step without a call (a hand-off)
    steps = d["steps"]
    texts = [
        text(s.get("message"))
        + "".join(f"\n{tc['function_name']} {json.dumps(tc.get('arguments'))}" for tc in s.get("tool_calls") or [])
        for s in steps
    ]
    sizes = None
    turns, refs, model = [], [], agent.get("model_name") or ""
    for i, s in enumerate(steps):
        results = (s.get("observation") or {}).get("results") or []
        refs += [ref for r in results for ref in r.get("subagent_trajectory_ref") or []]
        step_calls = {tc["tool_call_id"]: _call(tc) for tc in s.get("tool_calls") or []}
        for r in results:
            c = step_calls.get(r.get("source_call_id"))
            for ref in r.get("subagent_trajectory_ref") or []:
                if ref.get("trajectory_id") is not None and (c is not None or not turns):
                    delegated.setdefault(str(ref["trajectory_id"]), c)
        if s["source"] == "agent" and s.get("llm_call_count") != 0:
            t = AgentTurn(len(turns) + 1, list(step_calls.values()))
            m = s.get("metrics") or {}
            t.prompt_tokens, t.completion_tokens = m.get("prompt_tokens"), m.get("completion_tokens")
            if t.prompt_tokens is None or t.completion_tokens is None:
                if sizes is None:  # the step texts and observations, once: prompt = all before the step
                    sizes = count_tokens_batch(
                        [
                            x
                            for j, st in enumerate(steps)
                            for x in (
                                texts[j],
                                "\n".join(
                                    text(r.get("content")) for r in (st.get("observation") or {}).get("results") or []
                                ),
                            )
                        ]
                    )
                t.prompt_tokens, t.completion_tokens, t.estimated = sum(sizes[: 2 * i]), sizes[2 * i], True
            model = model or str(s.get("model_name") or "")
            turns.append(t)
        elif s["source"] == "agent" and s.get("tool_calls"):  # a deterministic dispatch (no model call)
            if turns:
                turns[-1].calls += list(step_calls.values())
            else:
                turns.append(AgentTurn(1, list(step_calls.values()), 0, 0, estimated=True))
    stamps = [s["timestamp"] for s in steps if s.get("timestamp")]
    wall = None
    if stamps:  # checked ISO 8601 by ``check``
        ts = [datetime.fromisoformat(x.replace("Z", "+00:00")).timestamp() for x in stamps]
        wall = max(ts) - min(ts)
    return Trajectory(
        trajectory_id=tid,
        instance_id=instance,
        agent=f"{agent['name']} {agent.get('version', '')}".strip(),
        model=model,
        format="atif",
        turns=turns,
        path=str(path),
        meta={
            "atif_version": d.get("schema_version", "ATIF-v1.8"),
            "role": "subagent" if parent else "main",
            "parent": parent,
            "session_id": d.get("session_id"),
            "final_metrics": d.get("final_metrics"),
            "subagent_refs": [r for r in refs if r.get("trajectory_path")],
            "wall_s": wall,
        },
    ), delegated


def parse(obj: dict, path: str | Path, stem: str) -> list[Trajectory]:
    """The trajectories of a checked ATIF file: the main agent with each embedded subagent nested under
    the call whose observation refers to it (``Call.subagent``, depth first); an embedded subagent no
    call refers to follows as a trajectory of its own (``meta["parent"]`` names the agent it came with)."""
    check(obj)
    path = Path(path)
    out: list[Trajectory] = []

    def walk(d: dict, tid: str, parent: str | None, instance: str, into=None) -> None:
        traj, delegated = _one(d, path, tid, parent, instance)
        if into is None:
            out.append(traj)
        elif isinstance(into, Call):
            into.subagent = traj
        else:
            into.handed_off.append(traj)
        for sub in d.get("subagent_trajectories") or []:
            sid = str(sub["trajectory_id"])
            walk(sub, f"{tid}/{sid}", tid, instance, delegated[sid] or traj if sid in delegated else None)

    root_id = str(obj.get("trajectory_id") or obj.get("session_id") or stem)
    walk(obj, root_id, None, str(obj.get("session_id") or stem))
    return out
