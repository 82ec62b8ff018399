"""A main agent with its subagents as one ATIF-v1.7 file (``subagent_trajectories``), and back.

``tree_to_atif(main, traces)``: the main agent's turns as agent steps (its calls with their arguments,
its tokens as metrics; a trajectory read by ``fasbench.trajectories`` keeps no observations, so only
a delegating call has a result: the reference to its subagent), each subagent embedded as a complete
trajectory: a fasbench search episode (``traces`` by trajectory id) as ``atif_trace.to_atif`` writes it
(every call, result and timing), any other recursively the same way. A subagent handed off before the
first turn (``Trajectory.handed_off``, fasbench e2e's search arm) is referred to from the task's user
step, which ATIF allows (an observation on a step without a tool call). The file is checked against
the published schema.

Reading it back is ``atif.parse`` (subagents nested under the call, or the hand-off, that refers to
them); ``embedded_traces(obj)`` gives the fasbench episodes among the embedded subagents, by the
trajectory id ``atif.parse`` gives them, so the replay tree opens the same episodes.
"""

from __future__ import annotations

from typing import Any

from fasbench.records import Trace
from fasbench.trajectories.atif import WRITE_VERSION, check
from fasbench.trajectories.atif_trace import from_atif, to_atif
from fasbench.trajectories.trajectory import Trajectory

KEY = "fasbench_tree"  # not atif_trace's "fasbench": that marks a file holding one fasbench trace


def _sub(sub: Trajectory, sid: str, traces: dict[str, Trace]) -> dict:
    tr = traces.get(sub.trajectory_id) or traces.get(str(sub.meta.get("trace_id") or ""))
    d = to_atif(tr) if tr is not None else _doc(sub, traces)
    d["trajectory_id"] = sid
    return d


def _doc(traj: Trajectory, traces: dict[str, Trace]) -> dict:
    subs: list[dict] = []
    handoff_refs = []
    for sub in traj.handed_off:
        sid = f"subagent-{len(subs) + 1}"
        subs.append(_sub(sub, sid, traces))
        handoff_refs.append({"trajectory_id": sid})
    user: dict[str, Any] = {"source": "user", "message": f"task {traj.instance_id}"}
    if handoff_refs:
        user["observation"] = {
            "results": [
                {"content": "hand-off: the subagent's report in the task text", "subagent_trajectory_ref": handoff_refs}
            ]
        }
    steps: list[dict] = [user]
    for t in traj.turns:
        calls, results = [], []
        for k, c in enumerate(t.calls):
            cid = f"call_{t.index}_{k}"
            calls.append(
                {
                    "tool_call_id": cid,
                    "function_name": c.tool,
                    "arguments": c.args if isinstance(c.args, dict) else {"command": c.action},
                }
            )
            if c.subagent is not None:
                sid = f"subagent-{len(subs) + 1}"
                subs.append(_sub(c.subagent, sid, traces))
                results.append(
                    {"source_call_id": cid, "content": "", "subagent_trajectory_ref": [{"trajectory_id": sid}]}
                )
        step: dict[str, Any] = {
            "source": "agent",
            "message": "",
            "tool_calls": calls,
            "extra": {KEY: {"turn": t.index, "estimated": t.estimated}},
        }
        m = {
            k: v
            for k, v in (("prompt_tokens", t.prompt_tokens), ("completion_tokens", t.completion_tokens))
            if v is not None
        }
        if m:
            step["metrics"] = m
        if results:
            step["observation"] = {"results": results}
        steps.append(step)
    for i, s in enumerate(steps):
        s["step_id"] = i + 1
    doc: dict[str, Any] = {
        "schema_version": WRITE_VERSION,
        "session_id": traj.instance_id or traj.trajectory_id,
        "trajectory_id": traj.trajectory_id,
        # the reader keeps name and version as one string (``atif._one``): written whole as the name
        "agent": {"name": traj.agent or "agent", "version": "", "model_name": traj.model or None},
        "steps": steps,
        "extra": {KEY: {"format": traj.format, "wall_s": traj.meta.get("wall_s")}},
    }
    if not doc["agent"]["model_name"]:
        doc["agent"].pop("model_name")
    if subs:
        doc["subagent_trajectories"] = subs
    return doc


def tree_to_atif(main: Trajectory, traces: dict[str, Trace] | None = None) -> dict:
    """The ATIF-v1.7 file of ``main`` with its subagents embedded (module doc), schema-checked."""
    doc = _doc(main, traces or {})
    check(doc)
    return doc


def embedded_traces(obj: dict, tid: str | None = None) -> dict[str, Trace]:
    """The fasbench episodes embedded in ``obj`` (depth first), by the trajectory id ``atif.parse``
    gives each (``<parent id>/<subagent id>``)."""
    tid = tid or str(obj.get("trajectory_id") or obj.get("session_id") or "")
    out: dict[str, Trace] = {}
    for sub in obj.get("subagent_trajectories") or []:
        sid = f"{tid}/{sub['trajectory_id']}"
        tr = from_atif(sub)
        if tr is not None:
            out[sid] = tr
        out.update(embedded_traces(sub, sid))
    return out
