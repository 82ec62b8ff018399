"""How a scripted (LLM-free) policy speaks each tool set: emit grep / find / view / report calls by
the tool set's own names and arguments, and read their observations back.

The dialect is chosen from the tool schemas passed to ``act`` (``grep_search`` → relace, ``Grep`` →
fastcontext), so one policy works with both tool sets.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from fasbench.records import Reply, ToolCall

Ranges = list[list[int]]

# `path:line:text` (ripgrep) — also `path-line-text` context lines, which we ignore.
_GREP_LINE = re.compile(r"^(?P<path>[^:\n]+?):(?P<line>\d+):(?P<text>.*)$")
# a `rg --heading` match / context line below its file's path (FastContext's Grep)
_HEADED_LINE = re.compile(r"^(?P<line>\d+)(?P<sep>[:-])(?P<text>.*)$")
# numbered file views: relace `12   code` (three spaces, the published format) / `  12\tcode` /
# `12: code` / `12|code` (fastcontext `LINE|content`)
_VIEW_LINE = re.compile(r"^\s*(?P<line>\d+)(?: {3}|\s*(?:\||:|\t|→)\s?)(?P<text>.*)$")


def _rel(path: str) -> str:
    """A path as the tools print it (``./x``, ``/repo/x``) → root-relative."""
    return path.removeprefix("/repo/").removeprefix("./")


def tool_names(tools: list[dict]) -> set[str]:
    out = set()
    for t in tools or []:
        fn = t.get("function", t)
        if isinstance(fn, dict) and fn.get("name"):
            out.add(fn["name"])
    return out


def parse_grep(output: str) -> list[tuple[str, int, str]]:
    """(path, line, text) of every match line of a grep observation (errors and notes skipped):
    ``path:line:text`` lines, or ``rg --heading`` groups (a path line, then ``line:text`` lines)."""
    hits = []
    heading = None
    for line in output.splitlines():
        h = _HEADED_LINE.match(line)
        if heading is not None and h:
            if h.group("sep") == ":":
                hits.append((heading, int(h.group("line")), h.group("text")))
            continue
        m = _GREP_LINE.match(line)
        if m and not m.group("path").startswith(("Error", "[")):
            hits.append((_rel(m.group("path")), int(m.group("line")), m.group("text")))
            heading = None
        elif line.startswith("/repo/") and " " not in line:
            heading = _rel(line)
        elif not line.strip() or line == "--":
            continue
        else:
            heading = None
    return hits


def parse_view(output: str) -> list[tuple[int, str]]:
    """(line, text) of a numbered file view."""
    out = []
    for line in output.splitlines():
        m = _VIEW_LINE.match(line)
        if m:
            out.append((int(m.group("line")), m.group("text")))
    return out


def parse_paths(output: str) -> list[str]:
    """File paths listed one per line (find / Glob output), notes skipped."""
    out = []
    for line in output.splitlines():
        s = _rel(line.strip())
        if s and not s.startswith(("Error", "[", "(")) and " " not in s and not s.endswith("/"):
            out.append(s)
    return out


@dataclass
class Dialect:
    """Builds calls for one tool set; ``name`` is the tool set's name."""

    name: str

    # ---- calls
    def grep(self, cid: str, pattern: str, include: str | None = "*.py", ignore_case: bool = False) -> ToolCall:
        if self.name == "relace":
            # every field, as the published strict schema requires
            args: dict = {"query": pattern, "case_sensitive": not ignore_case, "exclude_pattern": None,
                          "include_pattern": include or None}
            return ToolCall(cid, "grep_search", args)
        args = {"pattern": pattern, "output_mode": "content"}
        if include:
            args["glob"] = include
        if ignore_case:
            args["-i"] = True
        return ToolCall(cid, "Grep", args)

    def find(self, cid: str, name: str) -> ToolCall:
        """Files whose base name is ``name`` (a glob like ``foo.py`` or ``*foo*``)."""
        if self.name == "relace":
            return ToolCall(cid, "bash", {"command": f"find . -name {shlex.quote(name)} -type f"})
        return ToolCall(cid, "Glob", {"pattern": f"**/{name}"})

    def find_any(self, cid: str, names: list[str], exact: bool = False) -> ToolCall:
        """Files whose name contains one of ``names`` (lowercase words), or with ``exact``, whose
        path ends with one of them (file names or path suffixes such as ``utils/text.py``)."""
        names = [n for n in names if n and "'" not in n]
        if self.name == "relace":
            if exact:
                alt = "|".join(re.escape(n) for n in names)
                return ToolCall(cid, "bash", {"command": f"rg --files | grep -E '(^|/)({alt})$'"})
            alt = "|".join(re.escape(n) for n in names)
            return ToolCall(cid, "bash", {"command": f"rg --files -g '*.py' | grep -iE '({alt})[^/]*$'"})
        if exact:
            return ToolCall(cid, "Glob", {"pattern": "**/{" + ",".join(names) + "}"})
        return ToolCall(cid, "Glob", {"pattern": "**/*{" + ",".join(names) + "}*.py"})

    def view(self, cid: str, path: str, start: int, end: int) -> ToolCall:
        start = max(1, int(start))
        end = max(start, int(end))
        if self.name == "relace":
            return ToolCall(cid, "view_file", {"path": path, "view_range": [start, end]})
        return ToolCall(cid, "Read", {"path": path, "offset": start, "limit": end - start + 1})

    def report(self, cid: str, files: dict[str, Ranges], explanation: str, confidence: float | None = None) -> Reply:
        """The final answer: a ``report_back`` call (relace) or a ``<final_answer>`` block; with an
        optional self-confidence in [0, 1]."""
        if self.name == "relace":
            args = {"explanation": explanation, "files": files}
            if confidence is not None:
                args["confidence"] = round(float(confidence), 4)
            return Reply(text="", calls=[ToolCall(cid, "report_back", args)])
        return Reply(text=final_answer_text(files, explanation, confidence))


def final_answer_text(files: dict[str, Ranges], explanation: str = "", confidence: float | None = None) -> str:
    """FastContext's answer block: one ``path:START-END (reason)`` line per range (and, a fasbench
    addition, an optional ``confidence: X`` line)."""
    lines = []
    for p, rs in files.items():
        for a, b in (rs or [[1, 1]]):
            lines.append(f"{p}:{a}-{b} ({explanation[:80] or 'relevant'})")
    if confidence is not None:
        lines.append(f"confidence: {float(confidence):.4f}")
    return "<final_answer>\n" + "\n".join(lines) + "\n</final_answer>"


def dialect_for(tools: list[dict]) -> Dialect:
    """The dialect matching a tool set's schemas; a clear error for an unknown one."""
    names = tool_names(tools)
    if {"grep_search", "view_file", "report_back"} <= names:
        return Dialect("relace")
    if {"Grep", "Read"} <= names:
        return Dialect("fastcontext")
    raise ValueError(f"no scripted dialect for tools {sorted(names)}; expected the relace or fastcontext tool set")


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
