"""Does a main agent's patch edit the gold files and functions? A localisation proxy: resolving a task
needs its tests (SWE-bench's FAIL_TO_PASS / PASS_TO_PASS in the task's environment), which the offline
corpora (PyPI releases, no test environment) do not give; this module never claims resolution.

- *files*: the files the patch modifies (``fasbench.trajectories.analysis.submission_files``) against the
  gold's edited files: ``edits_gold_file`` (at least one), ``gold_file_recall``, ``file_precision``.
- *functions*: the innermost enclosing ``def``/``class`` (qualified, ``Class.method``; ``<module>`` outside
  any) of each changed old line, read from the file before the patch with Python's ``ast``: the gold's
  ``changed`` lines against the patch's changed old lines (a pure insertion counts at the line it
  follows). ``gold_function_recall`` = share of the gold's functions the patch touches; non-Python
  files count at file level only.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from fasbench.base import contain
from fasbench.base.entities import parse_python
from fasbench.base.lines import line_set
from fasbench.data.patches import PatchError, parse_diff
from fasbench.records import Gold
from fasbench.trajectories.first_edit import submission_files


def _scopes(source: str) -> list[tuple[int, int, str]]:
    """(start, end, qualified name) of every def/class, outermost first."""
    tree = parse_python(source)
    if tree is None:
        return []
    out: list[tuple[int, int, str]] = []

    def walk(node, prefix: str) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{ch.name}"
                start = min([ch.lineno] + [d.lineno for d in ch.decorator_list])
                out.append((start, ch.end_lineno or ch.lineno, name))
                walk(ch, name + ".")
            else:
                walk(ch, prefix)

    walk(tree, "")
    return out


def functions_at(source: str, lines: Sequence[int]) -> set[str]:
    """The innermost def/class enclosing each line (``<module>`` outside all)."""
    scopes = _scopes(source)
    names = set()
    for i in lines:
        inner = [s for s in scopes if s[0] <= i <= s[1]]
        names.add(max(inner, key=lambda s: s[0])[2] if inner else "<module>")
    return names


def _changed_lines(ranges: Sequence[Sequence[int]]) -> list[int]:
    return sorted(line_set(ranges))


def patch_changed(diff: str) -> dict[str, list[int]]:
    """Old-file changed lines of each file the patch modifies (not files it creates)."""
    try:
        files = parse_diff(diff)
    except PatchError:
        return {}
    return {f.path: _changed_lines([r for h in f.hunks for r in h.changed]) for f in files if not f.created}


def localization(diff: str, gold: Gold, root: str | Path) -> dict:
    """File and function hits of ``diff`` against ``gold`` on the tree at ``root`` (before the patch)."""
    edited = set(submission_files(diff))
    gold_files = set(gold.edited)
    hit = edited & gold_files
    out = {
        "patch_files": len(edited),
        "gold_files": len(gold_files),
        "edits_gold_file": bool(hit),
        "gold_file_recall": len(hit) / len(gold_files) if gold_files else None,
        "file_precision": len(hit) / len(edited) if edited else None,
    }
    changed = gold.variants.get("changed") or gold.edited
    pat = patch_changed(diff)
    gold_fn, hit_fn = set(), set()
    for p in gold_files:
        if not p.endswith(".py") or not changed.get(p):
            continue
        try:  # fasbench.base.contain: inside the corpus copy, a regular file, bounded
            src = contain.read_bytes(root, p)[0].decode("utf-8", errors="replace")
        except contain.PathRefused:
            continue
        g = {(p, n) for n in functions_at(src, _changed_lines(changed[p]))}
        gold_fn |= g
        if p in pat:
            hit_fn |= g & {(p, n) for n in functions_at(src, pat[p])}
    out["gold_functions"] = len(gold_fn)
    out["gold_function_recall"] = len(hit_fn) / len(gold_fn) if gold_fn else None
    out["edits_gold_function"] = bool(hit_fn) if gold_fn else None
    return out
