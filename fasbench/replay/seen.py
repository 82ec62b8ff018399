"""What one tool call showed the policy, for the replay's overlay: the replay's one boundary with the
tools. What a call showed is the tools' one observation type, :class:`fasbench.tools.observed.Seen`,
read from the result's structured record (:func:`fasbench.tools.observation`: ``ToolResult.shown``, or
the tool set's own parse of the text for traces written before it was recorded), kinds from
``fasbench.tools.tool_kind``; nothing here names a tool or parses tool output.

Layers of the overlay: a result with search matches shows them in the *grep* layer, with the context
lines printed around them (``-A/-B/-C``, :meth:`Seen.grep_lines`); any other content a result showed
(a view, a ``cat`` through bash) is the *viewed* layer (:meth:`Seen.viewed`). A call without a result,
or whose result is an error, showed nothing.
"""

from __future__ import annotations

from fasbench.records import Ranges, Shown, ToolCall, ToolResult
from fasbench.stats.metrics import merge_ranges, normalize_path
from fasbench.tools import Seen, observation, tool_kind


def observe(toolset: str, call: ToolCall, result: ToolResult | None, root: str | None = None) -> Seen:
    """What one call of a ``toolset`` trace showed, from its record (paths relative to the workspace
    ``root``, each file's ranges merged); the layers are :meth:`Seen.viewed` and :meth:`Seen.grep_lines`."""
    s = observation(toolset, call, result, lines=False)
    if not (s.shown.paths or s.shown.ranges or s.shown.hits):
        return s
    s.shown = Shown(
        paths=[normalize_path(p, root) + "/" * p.endswith("/") for p in s.shown.paths],
        ranges={normalize_path(p, root): merge_ranges([list(r) for r in rs]) for p, rs in s.shown.ranges.items()},
        hits=[[normalize_path(p, root), int(n)] for p, n in s.shown.hits],
    )
    return s


def viewed_ranges(
    toolset: str, call: ToolCall, result: ToolResult | None, root: str | None = None
) -> tuple[str, Ranges] | None:
    """The file and line ranges one read call showed the policy; None for other kinds of call, failed
    calls and calls without a result."""
    seen = observe(toolset, call, result, root)
    viewed = seen.viewed()
    if seen.kind != "read" or not viewed:
        return None
    path = next(iter(viewed))
    return path, viewed[path]


def grep_hits(toolset: str, call: ToolCall, result: ToolResult | None, root: str | None = None) -> dict[str, list[int]]:
    """The match lines (and their context lines) a search call showed, per path, in line order."""
    seen = observe(toolset, call, result, root)
    out: dict[str, list[int]] = {}
    if seen.kind == "search":
        for p, n in seen.grep_lines():
            out.setdefault(p, []).append(n)
    return {p: sorted(set(ns)) for p, ns in out.items()}


def call_kind(toolset: str, name: str) -> str | None:
    """The kind of a call (``read`` | ``search`` | ``list`` | ``report``), which sets its colour in the
    replay (``fasbench.stats.figures.KIND_COLORS``); None for a tool the trace's tool set does not have."""
    return tool_kind(toolset, name)
