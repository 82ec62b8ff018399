"""What a tool result showed: the one parsed form of the tool sets' outputs.

Each tool set parses its own output formats (``RelaceToolset.observe``, ``FastContextToolset.observe``,
the bash tool's :func:`fasbench.tools.bash_shown.bash_seen`) into a :class:`Seen`: the
:class:`~fasbench.records.Shown` record (paths listed, line ranges viewed, match lines) and the text
of every content line it showed (the lines of a view, the text of each match). The same parser runs
when a tool runs (over the exact text the model gets, after the output cap, so the record and the
text cannot disagree) and over the text of traces written before ``ToolResult.shown`` existed.

This module holds what the parsers share; it knows no tool name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from fasbench.records import Shown
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.sandbox import display, resolve

WORK_DIR = "/repo"  # where both tool sets present the repository to the model


def norm(path: str) -> str:
    """A path as a tool or a model writes it (``/repo/x``, ``./x``, ``/x``, ``x``) → root-relative."""
    p = str(path).strip()
    if p in (WORK_DIR, WORK_DIR + "/", "", ".", "./", "/"):
        return "."
    p = p.removeprefix(WORK_DIR + "/")
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/") or "."


Canon = Callable[[str], str]  # a written path → the root-relative path it names (norm, or resolved in a workspace)


def workspace_canon(ws: Workspace) -> Canon:
    """Paths as the workspace resolves them (``a/../b.py`` → ``b.py``, a symlink → its target); a
    path that does not resolve inside the root is only normalised."""
    def canon(path: str) -> str:
        try:
            return display(ws, resolve(ws, path))
        except ToolError:
            return norm(path)
    return canon


@dataclass
class Seen:
    """One result's structured observation and the text of each content line it showed."""

    shown: Shown = field(default_factory=Shown)
    text: dict[str, dict[int, str]] = field(default_factory=dict)  # path -> line -> text

    def view(self, path: str, lines: Iterable[tuple[int, str]]) -> None:
        """Numbered lines of ``path`` shown in order: their ranges (consecutive lines merged) and text."""
        got = self.text.setdefault(path, {})
        rs = self.shown.ranges.setdefault(path, [])
        for n, t in lines:
            got[n] = t
            if rs and rs[-1][0] <= n <= rs[-1][1] + 1:
                rs[-1][1] = max(rs[-1][1], n)
            else:
                rs.append([n, n])
        if not rs:
            del self.shown.ranges[path]
        if not got:
            del self.text[path]

    def hit(self, path: str, line: int, text: str) -> None:
        self.shown.hits.append([path, int(line)])
        self.text.setdefault(path, {})[int(line)] = text

    def listed(self, paths: Iterable[str]) -> None:
        for p in paths:
            if p and p not in self.shown.paths:
                self.shown.paths.append(p)


def numbered(text: str, line_re: re.Pattern, skip_first: bool = False) -> list[tuple[int, str]]:
    """The run of numbered lines ``line_re`` (groups ``n``, ``text``) at the top of ``text`` (after
    one header line with ``skip_first``), each number one more than the one before; notes after it
    are not lines of the file."""
    out: list[tuple[int, str]] = []
    rows = text.split("\n")[1 if skip_first else 0:]
    for row in rows:
        m = line_re.match(row)
        if not m or (out and int(m.group("n")) != out[-1][0] + 1):
            break
        out.append((int(m.group("n")), m.group("text")))
    return out
