"""Code entities of Python files (functions/methods, classes, modules) and which of them a set of
line ranges touches: entity gold from a gold patch, and a report's citations mapped to entities.

Names follow LocAgent (gersteinlab/LocAgent, ``utils/eval_metric.py`` and its Loc-Bench files):

- function: ``path:Qual.name`` (``src/a.py:Request.prepare``, ``src/a.py:helper``); a function
  nested in a function belongs to the outer one (LocAgent's graph has no node for it).
- class: ``path:Class`` (``path:Outer.Inner`` for a nested class).
- module: ``path:Top``, the top-level class or function containing the line (LocAgent's
  ``edited_modules``: the first component of the entity name after the file).

A line outside every def/class (imports, module constants) touches only its file. Entity gold of
a gold patch (LocAgent ``get_edited_lines``): the entities holding the old-file lines the patch
removes or modifies, and the line a pure insertion follows (the ``changed`` variant), located on
the task's corpus after relocation. Functions the patch adds are not in the old tree, so a new
method gives its class (and module) and a new top-level function gives its file only; the new
names are kept in ``added`` for reference. Parsing is Python's ``ast`` (the corpora are Python);
a file that does not parse, or is not ``.py``, contributes its file only.
"""

from __future__ import annotations

import ast
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fasbench.base.contain import PathRefused, file_key, read_bytes

LEVELS = ("file", "module", "class", "function")
MAX_AST_DEPTH = 400  # deeper trees are refused: ast.dump, compile and recursive visitors overflow near 1,000


def parse_python(text: str | bytes, max_depth: int = MAX_AST_DEPTH) -> ast.Module | None:
    """The one ``ast.parse`` of corpus text (and any other Python fasbench did not write): the module,
    or None when it does not parse or would break a recursive consumer — a syntax error, NUL bytes,
    ``RecursionError`` (a 6,000-term expression), ``MemoryError``, or a tree deeper than
    ``max_depth`` nodes (measured without recursion). A caller treats None as "no definitions"."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    todo = [(tree, 1)]
    while todo:  # iterative depth check: ast.walk does not tell depth
        node, d = todo.pop()
        if d > max_depth:
            return None
        todo.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    return tree


@dataclass(frozen=True)
class Entity:
    kind: str  # "function" | "class"
    qualname: str  # "Class.method", "func", "Outer.Inner"
    start: int  # first line, decorators included (1-based)
    end: int  # last line (inclusive)
    top: str  # the top-level class/function it lives in (LocAgent's module)


def _child_stmts(node: ast.AST) -> list[ast.stmt]:
    out = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            out.append(child)
        elif isinstance(child, (ast.ExceptHandler, getattr(ast, "match_case", ast.ExceptHandler))):
            out.extend(c for c in child.body)
    return out


def parse_entities(source: str) -> list[Entity]:
    """Classes and functions of a Python source, outermost first; [] when it does not parse."""
    tree = parse_python(source)
    if tree is None:
        return []
    out: list[Entity] = []

    def visit(body: Iterable[ast.stmt], prefix: str, top: str | None, in_function: bool = False) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                q = f"{prefix}{node.name}"
                t = top or node.name
                if isinstance(node, ast.ClassDef):
                    if not in_function:
                        out.append(Entity("class", q, start, node.end_lineno or node.lineno, t))
                        visit(node.body, q + ".", t, False)
                elif not in_function:
                    out.append(Entity("function", q, start, node.end_lineno or node.lineno, t))
            elif not in_function:  # if/try/with/for blocks at class or module level
                visit(_child_stmts(node), prefix, top, in_function)

    visit(tree.body, "", None, False)
    return out


@lru_cache(maxsize=256)
def _file_entities(root: str, real: str, size: int, mtime_ns: int) -> tuple[Entity, ...]:
    data, more = read_bytes(root, real)
    return () if more else tuple(parse_entities(data.decode("utf-8", errors="replace")))


def file_entities(root: str | Path, rel: str) -> Sequence[Entity]:
    """The entities of ``root/rel`` (cached by size and modification time); () for non-Python,
    missing, a path :mod:`fasbench.base.contain` refuses (outside the root, not a regular file) or a
    file longer than ``contain.MAX_READ_BYTES``."""
    if not rel.endswith(".py"):
        return ()
    try:
        os.stat(os.path.join(root, rel))  # a missing file costs one stat
    except (OSError, ValueError):
        return ()
    key = file_key(root, rel)
    if key is None:
        return ()
    try:
        return _file_entities(os.fspath(root), *key)
    except PathRefused:
        return ()


_INDEX: dict[int, tuple[Sequence[Entity], tuple]] = {}


def _segments(entities: Sequence[Entity]) -> tuple:
    """(segment starts, per segment: (entities containing it, entities innermost on it)), cached by
    the sequence's identity: lines split where an entity starts or ends, so that a range's entities
    are found by bisection instead of a scan of every entity per line."""
    hit = _INDEX.get(id(entities))
    if hit is not None and hit[0] is entities:
        return hit[1]
    bounds = sorted({e.start for e in entities} | {e.end + 1 for e in entities})
    holders: list[list[int]] = [[] for _ in bounds]
    for i, e in enumerate(entities):
        if e.end < e.start:
            continue
        for k in range(bisect_left(bounds, e.start), bisect_left(bounds, e.end + 1)):
            holders[k].append(i)
    segs = []
    for hs in holders:
        inner = [
            i
            for i in hs
            if not any(
                j != i
                and entities[j].kind == entities[i].kind
                and entities[i].start <= entities[j].start
                and entities[j].end <= entities[i].end
                and entities[j].qualname.startswith(entities[i].qualname + ".")
                for j in hs
            )
        ]
        segs.append((tuple(hs), tuple(inner)))
    out = (bounds, segs)
    if len(_INDEX) > 512:
        _INDEX.clear()
    _INDEX[id(entities)] = (entities, out)
    return out


def entities_at(entities: Sequence[Entity], start: int, end: int) -> dict[str, list[str]]:
    """Qualified names of the innermost function, innermost class, and top-level entity of each
    line in ``[start, end]``, in the entities' order (no path prefix). Computed on segments of lines
    (:func:`_segments`): a range ``[1, 3·10⁷]`` costs as much as ``[1, 2]``."""
    out: dict[str, list[str]] = {"module": [], "class": [], "function": []}
    if end < start or not entities:
        return out
    bounds, segs = _segments(entities)
    k0 = max(0, bisect_right(bounds, start) - 1)
    held: set[int] = set()
    innermost: set[int] = set()
    for k in range(k0, bisect_right(bounds, end)):
        held.update(segs[k][0])
        innermost.update(segs[k][1])
    for i in sorted(held):
        e = entities[i]
        if i in innermost and e.qualname not in out[e.kind]:
            out[e.kind].append(e.qualname)
        if e.top not in out["module"]:
            out["module"].append(e.top)
    return out


def _apply(lines: list[str], f, offsets: Sequence[int | None]) -> tuple[list[str], list[int], list[int]]:
    """The new file of diff ``f`` applied at its located offsets: (new lines, old line numbers
    removed, new line numbers added)."""
    new, removed, added, pos = [], [], [], 0  # pos: 0-based index into the old lines
    for h, off in zip(f.hunks, offsets):
        if off is None:
            continue
        start0 = (h.source_start - 1 if h.source_length else h.source_start) + off
        if start0 < pos or lines[start0 : start0 + len(h.old_lines)] != h.old_lines:
            # placed with fuzz: its removed lines are known (changed ranges + offset), its added
            # lines are not applied
            removed.extend(i + off for a, b in h.changed for i in range(a, b + 1) if any(k == "-" for k, _ in h.ops))
            continue
        new.extend(lines[pos:start0])
        i_old = start0
        for kind, text in h.ops:  # the hunk's lines in diff order
            if kind == " ":
                new.append(text)
                i_old += 1
            elif kind == "-":
                removed.append(i_old + 1)
                i_old += 1
            else:
                new.append(text)
                added.append(len(new))
        pos = start0 + len(h.old_lines)
    new.extend(lines[pos:])
    return new, removed, added


def entity_gold(root: str | Path, files: Sequence, offsets: Mapping[str, Sequence[int | None]]) -> dict:
    """Entity gold of a gold patch placed on the corpus at ``root`` (``files``: parse_diff output,
    ``offsets``: per file, per hunk, from patches.relocate; zeros on the exact tree).

    Old-file entities holding a removed or modified line are edited; an added line is attributed in
    the patched file to its innermost entity: that entity when it exists before the patch (an
    insertion inside a function edits the function), else its nearest enclosing entity that
    exists (a new method edits its class; a new top-level function only its file). Returns
    ``{"file", "module", "class", "function": [...], "added": [new entity names]}``."""
    out: dict[str, list[str]] = {lv: [] for lv in LEVELS}
    out["added"] = []

    def add(level: str, name: str) -> None:
        if name not in out[level]:
            out[level].append(name)

    root = Path(root)
    for f in files:
        if f.created or file_key(root, f.path) is None:  # missing, outside the root, not a regular file
            continue
        add("file", f.path)
        if not f.path.endswith(".py"):
            continue
        try:
            data, more = read_bytes(root, f.path)  # fasbench.base.contain: the one containment rule, bounded
        except PathRefused:
            continue
        old_text = data.decode("utf-8", errors="replace")
        old_lines = old_text.splitlines()
        old_ents = parse_entities(old_text)
        new_lines, removed, added = _apply(old_lines, f, offsets.get(f.path) or [0] * len(f.hunks))
        for ln in removed:
            for lv, names in entities_at(old_ents, ln, ln).items():
                for q in names:
                    add(lv, f"{f.path}:{q}")
        new_ents = parse_entities("\n".join(new_lines) + "\n")
        old_names = {(e.kind, e.qualname) for e in old_ents}
        for ln in added:
            got = entities_at(new_ents, ln, ln)
            for lv in ("class", "function"):
                for q in got[lv]:
                    if (lv, q) in old_names:
                        add(lv, f"{f.path}:{q}")
                        continue
                    add("added", f"{f.path}:{q}")
                    parts = q.split(".")
                    for i in range(len(parts) - 1, 0, -1):  # nearest enclosing entity that existed
                        parent = ".".join(parts[:i])
                        kind = next((k for k, n in old_names if n == parent), None)
                        if kind:
                            add(kind, f"{f.path}:{parent}")
                            break
            for top in got["module"]:
                if any(n == top for _, n in old_names):
                    add("module", f"{f.path}:{top}")
    return out
