"""How a scripted (LLM-free) policy speaks a tool set and reads what its calls showed.

The calls come from :class:`fasbench.tools.calls.Calls` (calls of a kind in the tool set's own names
and arguments); the tool set is told from the tool schemas passed to ``act``
(:func:`fasbench.tools.toolset_of`), so one policy works with both tool sets. Observations are read as
structured records (:func:`observations`: per call a :class:`~fasbench.tools.observed.Seen`, the one
observation type: the call, its kind, its :class:`~fasbench.records.Shown` and the text of the lines it
showed), never by parsing tool output here: a policy sees the conversation, so the tool messages' text
goes through the tool set's own parser (:func:`fasbench.tools.observation`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fasbench.records import Ranges, Reply, ToolCall, ToolResult, Turn
from fasbench.tools import Calls, Seen, calls_for, observation, toolset_of
from fasbench.tools.calls import final_answer_text
from fasbench.tools.contract import cite_ids, contract_of, shown_ids

__all__ = [
    "Dialect",
    "assistant_calls",
    "dialect_for",
    "final_answer_text",
    "observations",
    "tool_outputs",
    "turn_observations",
    "user_query",
]


@dataclass(frozen=True)
class Dialect:
    """A tool set's call builder (``calls``, :func:`fasbench.tools.calls_for`) with the scripted policies'
    verbs (``grep``, ``view``). Under the ``ids`` report contract (``ids``: the IDs the chat showed,
    :mod:`fasbench.tools.contract`) ``report`` cites the IDs of the shown ranges that the path report's
    ranges overlap, never a path (the tool set's ``report_ids``)."""

    calls: Calls
    ids: dict | None = None  # ID -> (path, first, last) under the ids contract; None: free citation

    @property
    def name(self) -> str:
        """The tool set's name."""
        return self.calls.name

    def search(self, cid: str, pattern: str, *args, **kwargs) -> ToolCall:
        return self.calls.search(cid, pattern, *args, **kwargs)

    def read(self, cid: str, path: str, start: int, end: int | None) -> ToolCall:
        return self.calls.read(cid, path, start, end)

    def list_dir(self, cid: str, path: str = ".", recursive: bool = True) -> ToolCall:
        return self.calls.list_dir(cid, path, recursive)

    def find(self, cid: str, name: str, directory: str | None = None) -> ToolCall:
        return self.calls.find(cid, name, directory)

    def exists(self, cid: str, path: str) -> ToolCall:
        return self.calls.exists(cid, path)

    def find_any(self, cid: str, names: list[str], exact: bool = False) -> ToolCall:
        return self.calls.find_any(cid, names, exact)

    def of_kind(self, kind: str, cid: str, **args) -> ToolCall:
        return self.calls.of_kind(kind, cid, **args)

    def grep(self, cid: str, pattern: str, include: str | None = "*.py", ignore_case: bool = False) -> ToolCall:
        return self.calls.search(cid, pattern, include, ignore_case)

    def view(self, cid: str, path: str, start: int, end: int) -> ToolCall:
        return self.calls.read(cid, path, start, end)

    def report(self, cid: str, files: dict[str, Ranges], explanation: str, confidence: float | None = None) -> Reply:
        if self.ids is None:
            return self.calls.report(cid, files, explanation, confidence)
        return self.calls.report_ids(cid, cite_ids(files, self.ids), explanation, confidence)


def dialect_for(tools: list[dict], messages: list[dict] | None = None) -> Dialect:
    """The dialect matching a tool set's schemas (a clear error for an unknown one); with the chat
    ``messages``, it cites by ID when the chat runs under the ``ids`` report contract."""
    ts = toolset_of(tools)
    if ts is None:
        names = sorted({(t.get("function", t) or {}).get("name", "?") for t in tools or [] if isinstance(t, dict)})
        raise ValueError(f"no scripted dialect for tools {names}; expected the tools of a registered tool set")
    ids = shown_ids(messages) if messages and contract_of(messages) == "ids" else None
    return Dialect(calls_for(ts), ids)


def _call(c: dict) -> ToolCall:
    fn = c.get("function", {}) or {}
    args = fn.get("arguments", "{}")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            args = {}
    return ToolCall(str(c.get("id", "")), str(fn.get("name", "")), args if isinstance(args, dict) else {})


def observations(messages: list[dict], toolset: str) -> list[list[Seen]]:
    """Per assistant turn so far, each call with what its observation showed (the tool set's parse of
    the tool message; a message that starts with ``Error`` is an error, as the tools write them)."""
    outs = tool_outputs(messages)
    turns = []
    for calls in assistant_calls(messages):
        obs = []
        for c in calls:
            call = _call(c)
            text = outs.get(call.id, "")
            obs.append(observation(toolset, call, ToolResult(call.id, text, is_error=text.startswith("Error"))))
        turns.append(obs)
    return turns


def turn_observations(turns: list[Turn], toolset: str) -> list[list[Seen]]:
    """Like :func:`observations`, from the episode's recorded turns (the harness passes them to a
    policy that sets ``observes_turns``): each result's recorded ``shown``, and the text of its lines."""
    out = []
    for t in turns:
        res = {r.call_id: r for r in t.results}
        obs = []
        for c in t.calls:
            r = res.get(c.id)
            if r is None:
                continue
            obs.append(observation(toolset, c, r))
        out.append(obs)
    return out


def tool_outputs(messages: list[dict]) -> dict[str, str]:
    """tool_call_id → observation text, over the whole conversation."""
    return {m.get("tool_call_id", ""): str(m.get("content") or "") for m in messages if m.get("role") == "tool"}


def assistant_calls(messages: list[dict]) -> list[list[dict]]:
    """The tool calls of each assistant message so far (OpenAI format), one list per turn."""
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            out.append(list(m.get("tool_calls") or []))
    return out


def user_query(messages: list[dict]) -> str:
    """The first user message (the task prompt)."""
    for m in messages:
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""
