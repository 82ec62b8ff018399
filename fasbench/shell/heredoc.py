"""Heredoc bodies cut out of a command line before it is tokenised.

Parsing bodies as shell is wasted work (they are most of the bytes of agents' file-writing
commands) and a frequent source of parse errors (quoted delimiters, unbalanced quotes in code).
"""

from __future__ import annotations

import re

START = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z_0-9.-]*)\2")


def terminator(text: str, word: str, start: int, tabs: bool) -> tuple[int, int] | None:
    """(start, end after its newline) of the first line at or after ``start`` that is exactly
    ``word`` (after leading tabs for ``<<-``; a trailing CR allowed)."""
    n, lw = len(text), len(word)
    i = text.find(word, start)
    while i >= 0:
        b = i
        if tabs:
            while b > start and text[b - 1] == "\t":
                b -= 1
        e = i + lw
        if e < n and text[e] == "\r":
            e += 1
        if (b == start or text[b - 1] == "\n") and (e == n or text[e] == "\n"):
            return b, min(e + 1, n)
        i = text.find(word, i + 1)
    return None


def cut_heredocs(text: str, keep_end: bool = True) -> tuple[str, list[str] | None]:
    """The text with heredoc bodies removed (delimiter lines kept when ``keep_end``), and the bodies
    in order; the text unchanged and None when it has no heredoc. An unterminated heredoc runs to
    the end of the text, as in bash ("here-document delimited by end-of-file")."""
    m = START.search(text)
    if m is None:
        return text, None
    parts: list[str] = []
    bodies: list[str] = []
    pos = 0
    while m is not None:
        eol = text.find("\n", m.end())
        if eol < 0:
            return text, None
        parts.append(text[pos : eol + 1])
        cur = eol + 1
        for h in START.finditer(text, m.start(), eol):  # several heredocs may start on one line
            span = terminator(text, h.group(3), cur, bool(h.group(1)))
            if span is None:  # bash reads an unterminated heredoc to the end of the input
                bodies.append(text[cur:])
                return "".join(parts), bodies
            bodies.append(text[cur : span[0]])
            if keep_end:  # tree-sitter wants the delimiter line; the lexer does not
                parts.append(text[span[0] : span[1]])
            cur = span[1]
        pos = cur
        m = START.search(text, pos)
    parts.append(text[pos:])
    return "".join(parts), bodies
