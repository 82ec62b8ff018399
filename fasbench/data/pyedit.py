"""Edits of Python source that keep an exact line map, and the comment/docstring spans of a file.

``reorder_text`` permutes each run of consecutive undecorated functions (at top level or in a
top-level class body) and returns the blocks it moved as ``[old_start, old_end, new_start]``; the
result parses to the same statements (compared on ``ast.dump``, each body sorted). ``doc_spans``,
``in_docs`` and ``code_only`` find, rewrite in, or blank the comments and docstrings (string
statements) of a file: a rename may name the new module there without changing what the code does.
Used by ``fasbench.data.perturb``.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize

from fasbench.base.entities import parse_python


def doc_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the comments and docstrings (string statements) of Python source."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    out, prev = [], tokenize.NEWLINE  # the last token that is neither a comment nor a blank line
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (
                tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
            ):
                out.append((starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]))
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                prev = tok.type
    except (tokenize.TokenError, SyntaxError):
        return []
    return out


def in_docs(text: str, rx: re.Pattern, repl: str) -> str:
    """``text`` with ``rx`` replaced inside comments and docstrings only (a doc naming the old module)."""
    spans = doc_spans(text)
    for a, b in reversed(spans):
        text = text[:a] + rx.sub(repl, text[a:b]) + text[b:]
    return text


def code_only(path: str, text: str) -> str:
    """Python source without its comments and docstrings (other files as they are)."""
    if not path.endswith(".py"):
        return text
    for a, b in reversed(doc_spans(text)):
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def _runs(body: list) -> list[list]:
    """Runs of >= 2 consecutive undecorated functions with distinct names."""
    runs, cur = [], []
    for node in body + [None]:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not node.decorator_list
            and (not cur or node.lineno > cur[-1].end_lineno)
        ):
            cur.append(node)
            continue
        if len(cur) >= 2 and len({f.name for f in cur}) == len(cur):
            runs.append(cur)
        cur = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list else []
    return runs


def reorder_text(text: str, rng: random.Random) -> tuple[str, list[list[int]]] | None:
    """``text`` with its function runs permuted, and the blocks moved as ``[old_start, old_end,
    new_start]`` (1-based lines); None when nothing can move."""
    mod = parse_python(text)
    if mod is None:
        return None
    bodies = [mod.body] + [n.body for n in mod.body if isinstance(n, ast.ClassDef)]
    lines = text.split("\n")
    new_lines = list(lines)
    blocks: list[list[int]] = []
    for body in bodies:
        for run in _runs(body):
            spans = [[run[0].lineno, run[0].end_lineno]] + [
                [a.end_lineno + 1, b.end_lineno] for a, b in zip(run, run[1:])
            ]
            order = list(range(len(spans)))
            while order == sorted(order):
                rng.shuffle(order)
            at = spans[0][0]
            for i in order:
                s, e = spans[i]
                new_lines[at - 1 : at - 1 + e - s + 1] = lines[s - 1 : e]
                blocks.append([s, e, at])
                at += e - s + 1
    if not blocks:
        return None
    out = "\n".join(new_lines)
    new_mod = parse_python(out)
    if new_mod is None:
        return None
    if _canon(new_mod) != _canon(mod):  # the same statements, only in another order
        return None
    return out, sorted(blocks)


def _canon(mod: ast.Module) -> list[str]:
    """The module's statements, each class body's and the module's own sorted: what a reorder keeps."""
    out = []
    for node in mod.body:
        if isinstance(node, ast.ClassDef):
            node = ast.ClassDef(
                **{**{f: getattr(node, f) for f in node._fields}, "body": sorted(node.body, key=ast.dump)}
            )
        out.append(ast.dump(node))
    return sorted(out)
