"""The full bash grammar (tree-sitter-bash) for text outside the lexer's regular subset:
subshells, loops, conditionals, expansions, command and process substitutions."""

from __future__ import annotations

import functools
import re

import tree_sitter_bash
from tree_sitter import Language, Parser

from fasbench.shell.command import Simple, unquote
from fasbench.shell.heredoc import cut_heredocs
from fasbench.shell.lexer import feed_cat_heredoc


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


_DQ_ESCAPE = re.compile(r'\\([\\"$`])')
_SKIP = {"heredoc_body", "comment", "heredoc_start", "heredoc_end"}
_TRANSPARENT = {"program", "list", "pipeline", "redirected_statement"}  # not a compound construct
_DECLARATIONS = {"declaration_command", "unset_command"}
_WORD_SPECIAL = re.compile(rb"[$`<>\\]")
_WORDS = re.compile(r"""(?:'[^']*'|"[^"$`\\]*"|[^\s'"\\])+""")
_WORDS_LINE = re.compile(r"""\s*(?:(?:'[^']*'|"[^"$`\\]*"|[^\s'"\\])++\s*)*+""")


def _word(node) -> str:
    """The shell word a node stands for, quotes removed."""
    text = node.text.decode("utf-8", "replace")
    t = node.type
    if t == "raw_string":
        return text[1:-1]
    if t == "string":
        inner = text[1:-1]
        return _DQ_ESCAPE.sub(r"\1", inner) if "\\" in inner else inner
    if t == "word" and "\\" not in text:
        return text
    return unquote(text)


def _redirect(node) -> tuple[str, str]:
    op, dest = "", ""
    for ch in node.children:
        if not ch.is_named:
            op += ch.type
        elif ch.type != "file_descriptor":
            dest = _word(ch)
    return op.strip(), dest


class _Walk:
    """One walk over a tree: the simple commands found, in order, with heredoc bodies that were cut
    out before parsing put back."""

    __slots__ = ("out", "spans", "bodies", "k", "inside")

    def __init__(self, bodies: list[str] | None):
        self.out: list[Simple] = []
        self.spans: list[tuple[int, int]] = []  # byte span of each command's node
        self.bodies = bodies
        self.k = 0
        self.inside: str | None = None

    def add(self, cmd: Simple, node) -> None:
        self.out.append(cmd)
        self.spans.append((node.start_byte, node.end_byte))

    def walk(self, node) -> None:
        t = node.type
        if t == "command":
            self.command(node)
        elif t == "redirected_statement":
            self.redirected(node)
        elif t in _SKIP:
            return
        elif t in _DECLARATIONS:  # export X=1, declare -a Y, unset Z: commands with their words
            words = [node.children[0].type] if node.children else []
            for ch in node.named_children:
                self.nested(ch)
                words.append(_word(ch))
            self.add(Simple(words, None, None, 0, self.inside), node)
        elif t in _TRANSPARENT or self.inside is not None:
            for ch in node.named_children:
                self.walk(ch)
        else:
            self.inside = t
            for ch in node.named_children:
                self.walk(ch)
            self.inside = None

    def command(self, node) -> None:
        raw = node.text
        if not _WORD_SPECIAL.search(raw):  # plain words and simple quotes: split them directly
            text = raw.decode("utf-8", "replace")
            if _WORDS_LINE.fullmatch(text):
                words = [unquote(w) if ("'" in w or '"' in w) else w for w in _WORDS.findall(text)]
                self.add(Simple(words, None, None, 0, self.inside), node)
                return
        words: list[str] = []
        redirects: list[tuple[str, str]] = []
        nesting = b"$(" in raw or b"`" in raw or b"<(" in raw or b">(" in raw
        for ch in node.named_children:
            ct = ch.type
            if ct == "variable_assignment":
                self.nested(ch)
            elif ct == "file_redirect":
                redirects.append(_redirect(ch))
            elif ct == "herestring_redirect":
                continue
            else:
                if nesting and ct != "raw_string":
                    self.nested(ch)
                words.append(_word(ch))
        self.add(Simple(words, redirects, None, 0, self.inside), node)

    def redirected(self, node) -> None:
        # Redirections apply to the last simple command of the body (``a && b > f``, ``a | b > f``);
        # commands after a heredoc start on its line (``cat <<EOF | python``) come after it.
        out = self.out
        start = len(out)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body)
        if len(out) == start:
            self.add(Simple([], None, None, 0, self.inside), node)
        target = out[-1]
        for ch in node.named_children:
            if body is not None and ch.id == body.id:
                continue
            if ch.type == "file_redirect":
                target.redirects.append(_redirect(ch))
            elif ch.type == "heredoc_redirect":
                target.heredoc, inner = self.heredoc(ch)
                target.redirects.extend(inner)

    def nested(self, node) -> None:
        """Commands inside a word (or the word itself): $(…), `…`, <(…)."""
        if node.type in ("command_substitution", "process_substitution"):
            inside = self.inside
            self.inside = inside or node.type
            for ch in node.named_children:
                self.walk(ch)
            self.inside = inside
            return
        for ch in node.named_children:
            if ch.named_child_count:
                self.nested(ch)

    def heredoc(self, node) -> tuple[str, list[tuple[str, str]]]:
        body, redirects = "", []
        for ch in node.named_children:
            if ch.type == "heredoc_body":
                body = ch.text.decode("utf-8", "replace")
            elif ch.type == "file_redirect":
                redirects.append(_redirect(ch))
            elif ch.type not in ("heredoc_start", "heredoc_end"):
                self.walk(ch)  # cat <<EOF | python, cat <<EOF && …
        if self.bodies is not None and self.k < len(self.bodies):
            body = self.bodies[self.k]
            self.k += 1
        return body, redirects


def parse(text: str) -> list[Simple]:
    """The simple commands of ``text`` by the bash grammar; ValueError on a syntax error."""
    src, bodies = cut_heredocs(text)
    tree = _parser().parse(src.encode("utf-8"))
    if tree.root_node.has_error:
        raise ValueError("tree-sitter parse error")
    w = _Walk(bodies)
    w.walk(tree.root_node)
    raw = src.encode("utf-8")
    pipe = 0
    for i, c in enumerate(w.out):  # the grammar's pipeline nodes are unreliable (a | b | c && d)
        if i and not (
            c.inside == w.out[i - 1].inside
            and w.spans[i - 1][1] <= w.spans[i][0]
            and _piped(raw[w.spans[i - 1][1] : w.spans[i][0]])
        ):
            pipe += 1
        c.pipeline = pipe
    feed_cat_heredoc(w.out)
    return w.out


_GAP_NOISE = re.compile(rb"""'[^']*'|"(?:[^"\\]|\\.)*"|\d*(?:>>|>&|&>>|&>|>\||>|<<-?|<)""")
_GAP_OPS = re.compile(rb"\|\||&&|\|&?|;|&|\n")


def _piped(gap: bytes) -> bool:
    """Whether the text between two commands joins them with a pipe (its last list/pipe operator,
    quoted text and redirections skipped, is ``|`` or ``|&``)."""
    ops = _GAP_OPS.findall(_GAP_NOISE.sub(b" ", gap))
    return bool(ops) and ops[-1] in (b"|", b"|&")
