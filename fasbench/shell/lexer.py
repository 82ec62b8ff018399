"""Regex tokenisers: an exact one for a regular subset of the shell grammar, a tolerant one for
text tree-sitter rejects, and a rough one for text nothing else tokenises."""

from __future__ import annotations

import re
import shlex

from fasbench.shell.command import Simple, unquote
from fasbench.shell.heredoc import cut_heredocs

# Plain words only: the shell's parse is the split on blanks.
PLAIN = re.compile(r"[\w./:=,@%+^~-][\w./:=,@%+^~ -]*\Z")

# Words (plain, '…', "…" without expansions), list/pipe operators and plain redirections: a regular
# subset of the shell grammar that a regex tokenises exactly. Anything else (expansions, escapes,
# subshells, braces, heredoc-less ``<<``, comments, reserved words) goes to tree-sitter.
_WORD_RE = r"""(?:[^\s'"\\;&|<>()$`#{}]+|'[^']*'|"[^"$`\\]*")+"""
_OP_RE = r"""&&|\|\||[;|&\n]"""
_REDIR_RE = r"""\d?(?:>>|>\||&>>|&>|>&|>)|<<-?(?!<)|<(?![<(])"""
_TOKENS = re.compile(f"({_OP_RE})|({_REDIR_RE})|({_WORD_RE})")
# no capturing groups here: 3.11's possessive repeats mis-track them
_REGULAR = re.compile(f"[ \\t]*(?:(?:{_OP_RE}|{_REDIR_RE}|{_WORD_RE})[ \\t]*)*+")
RESERVED = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "for",
    "while",
    "until",
    "do",
    "done",
    "case",
    "esac",
    "in",
    "function",
    "select",
    "time",
    "coproc",
    "!",
    "[[",
    "]]",
}


def feed_cat_heredoc(cmds: list[Simple]) -> None:
    """``cat <<EOF | python``: the command after the pipe reads the heredoc's text."""
    for c, d in zip(cmds, cmds[1:]):
        if (
            c.heredoc is not None
            and c.words[:1] == ["cat"]
            and not c.redirects
            and d.pipeline == c.pipeline
            and d.heredoc is None
        ):
            d.heredoc = c.heredoc


def regular(text: str) -> list[Simple] | None:
    """The simple commands of ``text`` when it is in the regular subset (heredoc bodies cut out
    first), else None."""
    bodies = None
    if "<<" in text:
        text, bodies = cut_heredocs(text, keep_end=False)
        if bodies is None:
            return None
    if not _REGULAR.fullmatch(text):
        return None
    cmds: list[Simple] = []
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    heredoc = None
    pending = None
    k = pipe = 0
    for op, red, word in _TOKENS.findall(text):
        if word:
            if pending is not None:
                if pending[:2] == "<<":
                    if bodies is None or k >= len(bodies):
                        return None
                    heredoc = bodies[k]
                    k += 1
                elif pending != "<":
                    redirects.append((pending, unquote(word)))
                pending = None
            else:
                if not words and word in RESERVED:
                    return None
                words.append(unquote(word) if ("'" in word or '"' in word) else word)
        elif pending is not None:
            return None
        elif red:
            pending = red.lstrip("0123456789")
        else:
            if words or redirects or heredoc is not None:
                cmds.append(Simple(words, redirects, heredoc, pipe))
                if op != "|":
                    pipe += 1
            words, redirects, heredoc = [], [], None
    if pending is not None or (bodies is not None and k != len(bodies)):
        return None
    if words or redirects or heredoc is not None:
        cmds.append(Simple(words, redirects, heredoc, pipe))
    feed_cat_heredoc(cmds)
    return cmds


_TOKEN = re.compile(
    r"""(?:[ \t\r]|\\\n)*(?:(?P<op>&&|\|\||;;|[;&|\n]|\(|\))|(?P<redir>\d?(?:>>|>\||&>>|&>|>&|>|<<<|<<-?|<))"""
    r"""|(?P<comment>\#[^\n]*)|(?P<word>(?:'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[^\s;&|()<>'"\\])+))""",
    re.S,
)


def tolerant(text: str) -> list[Simple]:
    """Words between unquoted operators (for text tree-sitter rejects); ValueError where even the
    words cannot be tokenised (unbalanced quotes)."""
    src, bodies = cut_heredocs(text, keep_end=False)
    bodies = bodies or []
    out: list[Simple] = []
    pipe = 0
    cur = Simple([])
    pos, pending, nbody = 0, None, 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if not m or m.end() == pos:
            if src[pos:].strip():
                raise ValueError(f"cannot tokenise at {pos}: {src[pos : pos + 20]!r}")
            break
        pos = m.end()
        if m.group("op"):
            if cur.words or cur.redirects:
                out.append(cur)
                if m.group("op") != "|":
                    pipe += 1
            cur = Simple([], pipeline=pipe)
        elif m.group("redir"):
            pending = m.group("redir").lstrip("0123456789")
        elif m.group("comment") is not None:
            continue
        elif m.group("word") is not None:
            w = unquote(m.group("word"))
            if pending in ("<<", "<<-"):
                cur.heredoc = bodies[nbody] if nbody < len(bodies) else ""
                nbody += 1
            elif pending is not None and pending not in ("<", "<<<"):
                cur.redirects.append((pending, w))
            elif pending is None:
                cur.words.append(w)
            pending = None
    if cur.words or cur.redirects:
        out.append(cur)
    return out


_ROUGH_SPLIT = re.compile(r"(\|\||&&|;|\||\n)")


def rough(text: str) -> list[Simple]:
    """A blank split of the pieces between ``&& || ; | newline`` (quotes honoured where they balance
    within a piece); never raises. For text no grammar accepts (unbalanced quotes)."""
    out: list[Simple] = []
    pipe = 0
    pieces = _ROUGH_SPLIT.split(text)
    for seg, op in zip(pieces[::2], pieces[1::2] + [""]):
        try:
            toks = shlex.split(seg, comments=False)
        except ValueError:
            toks = seg.split()
        words, redirects = [], []
        it = iter(toks)
        for t in it:
            if t in (">", ">>"):
                redirects.append((t, next(it, "")))
            else:
                words.append(t)
        if words or redirects:
            out.append(Simple(words, redirects, pipeline=pipe))
            if op != "|":
                pipe += 1
    return out
