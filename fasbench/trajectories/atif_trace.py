"""A fasbench ``Trace`` as an ATIF trajectory and back (``fasbench trajectories export-atif``).

``to_atif(trace)``: the messages before the first turn become ``system``/``user`` steps; per turn,
the harness's notes (user steps) and one ``agent`` step: the reply text as ``message``, the calls as
``tool_calls`` (``tool_call_id`` = the call id, ``arguments`` the parsed object), every result as an
observation result (``source_call_id`` = its call's id, ``content`` = the output text the policy
saw), the turn's tokens as ``metrics``, the model call's start as ``timestamp``; notes after the last
turn are user steps at the end. What ATIF has no field for is kept under ``extra["fasbench"]`` of the
place it belongs to: the exact start/end times (seconds since the epoch, as the trace has them), a
result's ``is_error`` and ``shown``, a malformed call's raw argument text, a turn's model-server
``requests``, and at the root the task id, report, stop reason, error, meta and schema version.
The file is written as ``ATIF-v1.7`` and checked against the published schema before it is written.

``from_atif(obj)``: the ``Trace`` of a file ``to_atif`` wrote (``extra["fasbench"]`` at the root),
equal to the original (``Trace.to_dict``): every call, observation and timing; None for an ATIF
file another program wrote.
"""

from __future__ import annotations

import copy
import tempfile
from datetime import UTC, datetime
from typing import Any

from fasbench import __version__
from fasbench.records import Report, ToolCall, ToolResult, Trace, Turn
from fasbench.records.trace import Shown
from fasbench.tools import TOOLSETS, make_toolset
from fasbench.trajectories.atif import WRITE_VERSION, check

KEY = "fasbench"
_TRACE_KEYS = (
    "task_id",
    "trace_id",
    "policy",
    "toolset",
    "stop_reason",
    "started_at",
    "ended_at",
    "error",
    "meta",
    "schema_version",
)


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, tz=UTC).isoformat()


def _message_step(m: dict, kind: str, turn: int | None = None) -> dict:
    """A chat message the policy saw (prompt, note) as a system or user step; the message itself in extra
    when a plain step cannot hold it exactly (another role, non-text content, more keys)."""
    plain = set(m) <= {"role", "content"} and m.get("role") in ("system", "user") and isinstance(m.get("content"), str)
    ex: dict[str, Any] = {"kind": kind}
    if turn is not None:
        ex["turn"] = turn
    if not plain:
        ex["message"] = m
    return {
        "source": m.get("role") if m.get("role") in ("system", "user") else "user",
        "message": m.get("content") if isinstance(m.get("content"), str) else "",
        "extra": {KEY: ex},
    }


def _tool_call(c: ToolCall) -> dict:
    d: dict[str, Any] = {
        "tool_call_id": c.id,
        "function_name": c.name,
        "arguments": c.arguments if isinstance(c.arguments, dict) else {},
    }
    if not isinstance(c.arguments, dict):
        d["extra"] = {KEY: {"raw_arguments": c.arguments}}
    return d


def _result(r: ToolResult, ids: set[str]) -> dict:
    ex: dict[str, Any] = {
        "call_id": r.call_id,
        "is_error": r.is_error,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
    }
    if r.shown is not None:
        ex["shown"] = r.shown.to_dict()
    return {"source_call_id": r.call_id if r.call_id in ids else None, "content": r.output, "extra": {KEY: ex}}


def _agent_step(t: Turn, model: str | None) -> dict:
    s: dict[str, Any] = {"source": "agent", "message": t.text or ""}
    if t.model_started_at is not None:
        s["timestamp"] = _iso(t.model_started_at)
    if model:
        s["model_name"] = model
    if t.calls:
        s["tool_calls"] = [_tool_call(c) for c in t.calls]
    if t.results:
        ids = {c.id for c in t.calls}
        s["observation"] = {"results": [_result(r, ids) for r in t.results]}
    m = {
        k: v
        for k, v in (("prompt_tokens", t.prompt_tokens), ("completion_tokens", t.completion_tokens))
        if v is not None
    }
    if m:
        s["metrics"] = m
    s["llm_call_count"] = 1
    s["extra"] = {
        KEY: {
            "kind": "turn",
            "index": t.index,
            **{k: getattr(t, k) for k in ("model_started_at", "model_ended_at", "tools_started_at", "tools_ended_at")},
            **({"requests": t.requests} if t.requests else {}),
        }
    }
    return s


def tool_definitions(toolset: str) -> list[dict] | None:
    """The tool schemas of one of our tool sets (OpenAI function format), None for another."""
    return list(make_toolset(toolset, tempfile.gettempdir()).schemas) if toolset in TOOLSETS else None


def to_atif(trace: Trace) -> dict:
    """The ATIF-v1.7 trajectory of ``trace`` (module doc), checked against the published schema."""
    model = trace.meta.get("model") if isinstance(trace.meta.get("model"), str) else None
    steps = [_message_step(m, "prompt") for m in trace.prompt]
    for t in trace.turns:
        steps += [_message_step(m, "note", t.index) for m in t.notes]
        steps.append(_agent_step(t, model))
    steps += [_message_step(m, "tail_note") for m in trace.tail_notes]
    if not steps:  # ATIF needs a step; a trace of a failed episode with no prompt has none
        steps.append({"source": "system", "message": trace.error or "", "extra": {KEY: {"kind": "placeholder"}}})
    for i, s in enumerate(steps):
        s["step_id"] = i + 1
    agent: dict[str, Any] = {"name": trace.policy, "version": __version__}
    if model:
        agent["model_name"] = model
    defs = tool_definitions(trace.toolset)
    if defs:
        agent["tool_definitions"] = defs
    agent["extra"] = {KEY: {"toolset": trace.toolset}}
    pt = [t.prompt_tokens for t in trace.turns if t.prompt_tokens is not None]
    ct = [t.completion_tokens for t in trace.turns if t.completion_tokens is not None]
    fm: dict[str, Any] = {"total_steps": len(steps)}
    if pt:
        fm["total_prompt_tokens"] = sum(pt)
    if ct:
        fm["total_completion_tokens"] = sum(ct)
    root_extra = {k: copy.deepcopy(getattr(trace, k)) for k in _TRACE_KEYS}
    root_extra["report"] = trace.report.to_dict() if trace.report is not None else None
    out = {
        "schema_version": WRITE_VERSION,
        "session_id": trace.trace_id,
        "trajectory_id": trace.trace_id,
        "agent": agent,
        "steps": steps,
        "final_metrics": fm,
        "notes": f"fasbench {__version__} trace of task {trace.task_id} (fasbench trajectories export-atif)",
        "extra": {KEY: root_extra},
    }
    check(out)
    return out


def _message(s: dict) -> dict:
    ex = s["extra"][KEY]
    return copy.deepcopy(ex["message"]) if "message" in ex else {"role": s["source"], "content": s["message"]}


def from_atif(obj: Any) -> Trace | None:
    """The ``Trace`` a file written by ``to_atif`` holds (None for other ATIF files); checked first."""
    if not isinstance(obj, dict) or not isinstance((obj.get("extra") or {}).get(KEY), dict):
        return None
    check(obj)
    root = obj["extra"][KEY]
    tr = Trace(**{k: copy.deepcopy(root[k]) for k in _TRACE_KEYS})
    tr.report = Report.from_dict(root["report"]) if root.get("report") is not None else None
    notes: list[dict] = []
    for s in obj["steps"]:
        ex = (s.get("extra") or {}).get(KEY) or {}
        kind = ex.get("kind")
        if kind == "prompt":
            tr.prompt.append(_message(s))
        elif kind == "note":
            notes.append(_message(s))
        elif kind == "tail_note":
            tr.tail_notes.append(_message(s))
        elif kind == "turn":
            m = s.get("metrics") or {}
            t = Turn(
                index=ex["index"],
                text=s.get("message") or "",
                notes=notes,
                prompt_tokens=m.get("prompt_tokens"),
                completion_tokens=m.get("completion_tokens"),
                requests=copy.deepcopy(ex.get("requests") or []),
                **{k: ex.get(k) for k in ("model_started_at", "model_ended_at", "tools_started_at", "tools_ended_at")},
            )
            notes = []
            for tc in s.get("tool_calls") or []:
                raw = ((tc.get("extra") or {}).get(KEY) or {}).get("raw_arguments")
                t.calls.append(
                    ToolCall(
                        tc["tool_call_id"],
                        tc["function_name"],
                        raw if raw is not None else copy.deepcopy(tc["arguments"]),
                    )
                )
            for r in (s.get("observation") or {}).get("results") or []:
                rx = (r.get("extra") or {}).get(KEY) or {}
                t.results.append(
                    ToolResult(
                        rx.get("call_id", r.get("source_call_id") or ""),
                        r.get("content") or "",
                        bool(rx.get("is_error")),
                        rx.get("started_at"),
                        rx.get("ended_at"),
                        Shown.from_dict(rx["shown"]) if rx.get("shown") is not None else None,
                    )
                )
            tr.turns.append(t)
    return tr
