"""One shell parser for agents' command lines: simple commands with their argv, redirections,
heredocs and pipelines; ``cd`` following; argv helpers.

Used by the trajectory classifier (``fasbench.trajectories.classify``), the agent-trace task
builder (``fasbench.data.agent_traces``), e2e's looks (``fasbench.e2e.looked``) and the
reference-trace converter (``fasbench.sft.reference``). The bash tool's own security check
(``fasbench.tools.bash.readonly``) keeps bashlex: it must reject, not tolerate.

``parse`` never raises. Heredoc bodies are cut out first (``heredoc``); what remains is either in a
regular subset of the shell grammar (words, simple quotes, ``&& || ; | &``, newlines, plain
redirections), which a regex lexer tokenises exactly and fast (``lexer``), or it goes to
tree-sitter-bash, a full bash grammar (subshells, loops, expansions, command substitutions:
``tree-sitter``). On the 27k real actions in data/trajectories both give identical results wherever
both apply. Where tree-sitter reports a syntax error, a tolerant splitter on unquoted operators is
used (``fallback``); where even that fails (unbalanced quotes) the pieces between operators are split
on blanks (``unparsable``). ``Parsed.parser`` says which path was taken. (bashlex was measured
first: ~0.5 ms per action and parse errors on 17% of the real actions, mostly quoted heredoc
delimiters.)
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import NamedTuple

from fasbench.shell import lexer, tree
from fasbench.shell.argv import operands, options, unwrap
from fasbench.shell.command import WRITE_OPS, Simple, unquote

PARSERS = ("lexer", "tree-sitter", "fallback", "unparsable", "empty")


class Parsed(NamedTuple):
    """The simple commands of a command line, in order, and which parser produced them."""

    commands: list[Simple]
    parser: str  # one of PARSERS


def parse(text: str) -> Parsed:
    """The simple commands of a command line (possibly several lines); never raises."""
    text = (text or "").strip()
    if not text:
        return Parsed([], "empty")
    if lexer.PLAIN.match(text):  # plain words only: the shell's parse is the split on blanks
        return Parsed([Simple(text.split())], "lexer")
    cmds = lexer.regular(text)
    if cmds is not None:
        return Parsed(cmds, "lexer")
    try:
        return Parsed(tree.parse(text), "tree-sitter")
    except (ValueError, RecursionError):  # a syntax error; nesting deeper than Python's stack
        pass
    try:
        return Parsed(lexer.tolerant(text), "fallback")
    except ValueError:
        return Parsed(lexer.rough(text), "unparsable")


def simple_commands(text: str) -> list[Simple]:
    """The simple commands of a command line, in order (``parse(text).commands``)."""
    return parse(text).commands


def pipelines(commands: list[Simple]) -> list[list[Simple]]:
    """Simple commands grouped into their pipelines (``a | b && c`` -> ``[[a, b], [c]]``)."""
    out: list[list[Simple]] = []
    for c in commands:
        if out and out[-1][-1].pipeline == c.pipeline:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def walk(text: str, cwd: str) -> Iterator[tuple[Simple, str]]:
    """(simple command, working directory) for each simple command of a command line that has words,
    following ``cd DIR`` (which itself is not yielded)."""
    for s in parse(text).commands:
        if not s.words:
            continue
        if s.name == "cd" and len(s.words) > 1:
            cwd = posixpath.normpath(posixpath.join(cwd, s.words[1]))
            continue
        yield s, cwd


__all__ = [
    "PARSERS",
    "WRITE_OPS",
    "Parsed",
    "Simple",
    "operands",
    "options",
    "parse",
    "pipelines",
    "simple_commands",
    "unquote",
    "unwrap",
    "walk",
]
