"""One simple command as the shell sees it, and shell quote removal."""

from __future__ import annotations

import re


class Simple:
    """One simple command: its words (quotes removed; expansions such as ``$X`` or ``$(…)`` kept as
    written), its ``(operator, destination)`` redirections (``(">", "out.txt")``, ``(">&", "1")``;
    input redirections ``<`` are not kept), the text of a heredoc it reads (also the heredoc of a
    ``cat <<EOF |`` in front of it), the index of the pipeline it belongs to (commands joined by
    ``|`` share one), and the compound construct it sits in (``None`` at top level, else the
    tree-sitter node type: ``subshell``, ``for_statement``, ``command_substitution``, …)."""

    __slots__ = ("words", "redirects", "heredoc", "pipeline", "inside")

    def __init__(
        self,
        words: list[str],
        redirects: list[tuple[str, str]] | None = None,
        heredoc: str | None = None,
        pipeline: int = 0,
        inside: str | None = None,
    ):
        self.words = words
        self.redirects = redirects if redirects is not None else []
        self.heredoc = heredoc
        self.pipeline = pipeline
        self.inside = inside

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/grep`` -> ``grep``; ``""`` without words)."""
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    def writes(self) -> list[str]:
        """Destinations of output redirections (``>``, ``>>``, ``&>``, …), file descriptors and
        /dev/* included."""
        return [d for op, d in self.redirects if op in WRITE_OPS]

    def __eq__(self, other) -> bool:
        return isinstance(other, Simple) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return (
            f"Simple({self.words!r}, {self.redirects!r}, heredoc={self.heredoc!r}, pipeline={self.pipeline}, "
            f"inside={self.inside!r})"
        )


WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})

_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|\$'([^']*)'""", re.S)


def _unquote_match(m: re.Match) -> str:
    for g in m.groups():
        if g is not None:
            return g
    return ""


def unquote(text: str) -> str:
    """A shell word with its quotes removed (``'a b'`` -> ``a b``, ``"x"y`` -> ``xy``, ``\\;`` -> ``;``)."""
    if "'" not in text and '"' not in text and "\\" not in text:
        return text
    return _QUOTED.sub(_unquote_match, text)
