"""What a tool call showed: :class:`Seen`, the one observation type of fasbench (the tools' parsers
build it, the scripted policies read it, the replay draws it).

A :class:`Seen` is the :class:`~fasbench.records.Shown` record (paths listed, line ranges of content,
match lines) with the text of every content line it showed (the lines of a view, the text of each
match), and the call it answers: the call, its kind and whether it failed. Each tool set parses its own
output formats (``relace.observe``, ``fastcontext.observe``, the bash tool's
:func:`fasbench.tools.bash.shown.bash_seen`) into one. The same parser runs when a tool runs (over the
exact text the model gets, after the output cap, so the record and the text cannot disagree) and over
the text of traces written before ``ToolResult.shown`` existed; :func:`fasbench.tools.observation`
gives a call's :class:`Seen` from its recorded ``shown`` where there is one.

This module holds what the parsers share; it knows no tool name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fasbench.base.lines import line_set
from fasbench.records import Ranges, Shown, ToolCall
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.pipeline import display, resolve

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
    """What one call showed: the :class:`~fasbench.records.Shown` record, the text of each content line
    it showed, and the call with its kind (``fasbench.tools.KINDS``; None for a tool the tool set does not
    have) and whether its result is an error. A call without a result, of an unknown tool, or whose
    result is an error showed nothing (empty ``shown`` and ``text``).

    ``text`` (path → line → text, as the model read it) is filled by the tool set's parser; it is empty
    where only the record was read (``observation(..., lines=False)``)."""

    shown: Shown = field(default_factory=Shown)
    text: dict[str, dict[int, str]] = field(default_factory=dict)  # path -> line -> text
    kind: str | None = None
    is_error: bool = False
    call: ToolCall | None = None

    def viewed(self) -> dict[str, Ranges]:
        """The file content a result without search matches showed (a view, a ``cat`` through bash),
        per path; empty for a result with matches (its ranges are the context of the matches)."""
        return {} if self.shown.hits else self.shown.ranges

    def grep_lines(self) -> list[tuple[str, int]]:
        """The lines a result with search matches showed: the match lines ``(path, line)`` in output
        order (repeats kept), then the context lines printed around them (``-A/-B/-C``); empty for a
        result without matches."""
        if not self.shown.hits:
            return []
        return [(p, int(n)) for p, n in self.shown.hits] + [
            (p, n) for p, rs in self.shown.ranges.items() for n in sorted(line_set(rs))
        ]

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
    rows = text.split("\n")[1 if skip_first else 0 :]
    for row in rows:
        m = line_re.match(row)
        if not m or (out and int(m.group("n")) != out[-1][0] + 1):
            break
        out.append((int(m.group("n")), m.group("text")))
    return out
