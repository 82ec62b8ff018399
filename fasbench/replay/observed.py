"""What one tool call showed the policy, for the replay's overlay: the ONE place in ``replay/`` that
names tools or reads tool output text.

Boundary: ``observe(toolset, call, result, root) -> Seen`` (and its two halves :func:`viewed_ranges`,
:func:`grep_hits`); input the tool set's name, the :class:`ToolCall` and its :class:`ToolResult`
(None when the trace has none), output the call's kind, the line ranges of file content it showed
(per path) and the search-match lines. ``Seen`` has the field names of the structured observation
``fasbench.records.Shown`` (``ranges``, ``hits``) that issue #16 adds to ``ToolResult``: once
``ToolResult.shown`` and ``fasbench.tools.tool_kind`` / ``fasbench.tools.shown`` are on main, this
module becomes a thin adapter over them (kind from ``tool_kind``, ranges and hits from ``shown``) and
the rest of ``replay/`` does not change. Until then the kinds and the output parsing live here:

- read calls (``view_file``, ``Read``): the numbered lines in the output are the truth (they reflect
  end-of-file and truncation); without numbered lines, the requested range (``view_file``
  ``view_range=[s, e]``, default [1, 100], ``e = -1`` = to the end, counted from the output;
  ``Read`` ``offset``/``limit``, 1-based offset, default limit 2000);
- search calls (``grep_search``, ``Grep``): ripgrep ``path:line:`` matches and ``path-line-``
  context lines, and FastContext's ``rg --heading`` groups (a path line, then ``N:`` / ``N-`` lines).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from fasbench.metrics import merge_ranges, normalize_path
from fasbench.records import Ranges, ToolCall, ToolResult

# the kind of each tool of our two tool sets (replaced by fasbench.tools.tool_kind once it is on main)
KINDS = {
    "relace": {"view_file": "read", "view_directory": "list", "grep_search": "search",
               "report_back": "report"},  # bash: any of the kinds, by its command line
    "fastcontext": {"Read": "read", "Glob": "list", "Grep": "search"},
}
_ANY = {name: kind for kinds in KINDS.values() for name, kind in kinds.items()}

_NUMBERED = re.compile(r"^\s*(\d+)(?:[\t|:→│ ]|$)")
_GREP_MATCH = re.compile(r"^(.+?):(\d+):")  # ripgrep `path:line:text`
_GREP_CONTEXT = re.compile(r"^(.+?\.\w+)-(\d+)-")  # ripgrep context lines `path-line-text`
_HEADED = re.compile(r"^(\d+)[:-]")  # a line below its file's path in `rg --heading` output


@dataclass
class Seen:
    """What one call showed: its kind (``read`` | ``search`` | ``list`` | ``report`` | None
    for ``bash`` and tools outside our tool sets), file content shown (1-based inclusive ranges per path) and
    search-match lines (``(path, line)`` in output order, repeats kept)."""

    kind: str | None
    ranges: dict[str, Ranges] = field(default_factory=dict)
    hits: list[tuple[str, int]] = field(default_factory=list)


def tool_kind(toolset: str, name: str) -> str | None:
    """The kind of tool ``name`` in ``toolset``; for a trace of another tool set (foreign formats),
    the kind the name has in either of ours; None when it has none."""
    kinds = KINDS.get(toolset)
    return kinds.get(name) if kinds is not None else _ANY.get(name)


def _args(call: ToolCall) -> dict:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        a = json.loads(call.arguments)
    except (TypeError, ValueError):
        return {}
    return a if isinstance(a, dict) else {}


def _as_int(v, default: int | None) -> int | None:
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return default


def _numbered_lines(output: str, lo: int | None, hi: int | None) -> list[int]:
    """Line numbers of a numbered file listing: the leading numbers that increase line by line
    (a line of content starting with digits cannot break in), kept within [lo, hi] when given."""
    nums: list[int] = []
    for line in output.splitlines():
        m = _NUMBERED.match(line)
        if not m:
            continue
        n = int(m.group(1))
        if nums and n != nums[-1] + 1:
            continue
        if not nums and ((lo is not None and n < lo) or (hi is not None and hi > 0 and n > hi)):
            continue
        nums.append(n)
    return nums


def _requested(call: ToolCall, a: dict) -> tuple[int, int | None]:
    """The line range a read call asked for (``e`` < 0 or None: to the end)."""
    if call.name == "view_file":
        vr = a.get("view_range") or [1, 100]
        s = _as_int(vr[0], 1) if isinstance(vr, (list, tuple)) and vr else 1
        e = _as_int(vr[1], 100) if isinstance(vr, (list, tuple)) and len(vr) > 1 else 100
        return s, e
    off = _as_int(a.get("offset"), 1) or 1
    limit = _as_int(a.get("limit"), 2000) or 2000
    return (max(1, off), max(1, off) + limit - 1) if off > 0 else (1, -1)  # offset < 0: from the end


def viewed_ranges(toolset: str, call: ToolCall, result: ToolResult | None,
                  root: str | None = None) -> tuple[str, Ranges] | None:
    """The file and line ranges one read call showed the policy, or None for other kinds of call
    and failed calls (see the module docstring for the rules)."""
    if tool_kind(toolset, call.name) != "read" or (result is not None and result.is_error):
        return None
    a = _args(call)
    path = a.get("path") or a.get("file_path")
    if not isinstance(path, str) or not path.strip():
        return None
    path = normalize_path(path, root)
    s, e = _requested(call, a)
    output = result.output if result is not None else ""
    nums = _numbered_lines(output, s, e)
    if nums:
        return path, merge_ranges([[n, n] for n in nums])
    if result is None:
        return path, merge_ranges([[s, e]]) if e and e > 0 else []
    if e is None or e < 0:
        n_out = len(output.splitlines())
        e = s + n_out - 1 if n_out else s - 1
    return path, merge_ranges([[s, e]])


def grep_hits(toolset: str, call: ToolCall, result: ToolResult | None,
              root: str | None = None) -> dict[str, list[int]]:
    """The ``path:line:`` matches (and ``path-line-`` context lines) a search call showed, per path."""
    if tool_kind(toolset, call.name) != "search" or result is None or result.is_error:
        return {}
    out: dict[str, list[int]] = {}
    heading = None  # FastContext's Grep prints `rg --heading` groups: a path line, then `N:` / `N-` lines
    for line in result.output.splitlines():
        h = _HEADED.match(line)
        if heading is not None and h:
            out.setdefault(heading, []).append(int(h.group(1)))
            continue
        m = _GREP_MATCH.match(line) or _GREP_CONTEXT.match(line)
        if m and not m.group(1).startswith(("[", "Error")):
            out.setdefault(normalize_path(m.group(1), root), []).append(int(m.group(2)))
        elif line.startswith("/repo/") and " " not in line:
            heading = normalize_path(line, root)
        elif line.strip() and line != "--":
            heading = None
    return out


def observe(toolset: str, call: ToolCall, result: ToolResult | None, root: str | None = None) -> Seen:
    """What one call of a ``toolset`` trace showed (paths relative to the workspace ``root``)."""
    v = viewed_ranges(toolset, call, result, root)
    hits = [(p, n) for p, lines in grep_hits(toolset, call, result, root).items() for n in lines]
    return Seen(tool_kind(toolset, call.name), dict([v]) if v is not None else {}, hits)
