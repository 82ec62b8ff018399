"""What one tool call showed the policy, for the replay's overlay: the replay's one boundary with the
tools. Kinds come from ``fasbench.tools.tool_kind``, what a result showed from its structured record
(``fasbench.tools.shown``: ``ToolResult.shown``, or the tool set's own parse of the text for traces
written before it was recorded); nothing here names a tool or parses tool output.

Layers of the overlay: a result with search matches shows them in the *grep* layer, with the context
lines printed around them (``-A/-B/-C``); any other content a result showed (a view, a ``cat`` through
bash) is the *viewed* layer. A call without a result, or whose result is an error, showed nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fasbench.metrics import merge_ranges, normalize_path
from fasbench.records import Ranges, ToolCall, ToolResult
from fasbench.tools import shown, tool_kind


@dataclass
class Seen:
    """What one call showed: its kind (``read`` | ``search`` | ``list`` | ``report``; None for a tool
    the trace's tool set does not have), file content shown (1-based inclusive ranges per path) and
    search lines (matches and their context, ``(path, line)`` in output order, repeats kept)."""

    kind: str | None
    ranges: dict[str, Ranges] = field(default_factory=dict)
    hits: list[tuple[str, int]] = field(default_factory=list)


def observe(toolset: str, call: ToolCall, result: ToolResult | None, root: str | None = None) -> Seen:
    """What one call of a ``toolset`` trace showed (paths relative to the workspace ``root``)."""
    kind = tool_kind(toolset, call.name)
    if kind is None or result is None or result.is_error:
        return Seen(kind)
    s = shown(toolset, call, result)
    ranges = {normalize_path(p, root): merge_ranges([list(r) for r in rs]) for p, rs in s.ranges.items()}
    if not s.hits:
        return Seen(kind, ranges)
    hits = [(normalize_path(p, root), int(n)) for p, n in s.hits]
    context = [(p, n) for p, rs in ranges.items() for a, b in rs for n in range(a, b + 1)]
    return Seen(kind, {}, hits + context)


def viewed_ranges(toolset: str, call: ToolCall, result: ToolResult | None,
                  root: str | None = None) -> tuple[str, Ranges] | None:
    """The file and line ranges one read call showed the policy; None for other kinds of call, failed
    calls and calls without a result."""
    seen = observe(toolset, call, result, root)
    if seen.kind != "read" or not seen.ranges:
        return None
    path = next(iter(seen.ranges))
    return path, seen.ranges[path]


def grep_hits(toolset: str, call: ToolCall, result: ToolResult | None,
              root: str | None = None) -> dict[str, list[int]]:
    """The match lines (and their context lines) a search call showed, per path, in line order."""
    seen = observe(toolset, call, result, root)
    out: dict[str, list[int]] = {}
    if seen.kind == "search":
        for p, n in seen.hits:
            out.setdefault(p, []).append(n)
    return {p: sorted(set(ns)) for p, ns in out.items()}


def call_kind(toolset: str, name: str) -> str | None:
    """The kind of a call (``read`` | ``search`` | ``list`` | ``report``), which sets its colour in the
    replay (``fasbench.figures.KIND_COLORS``); None for a tool the trace's tool set does not have."""
    return tool_kind(toolset, name)
