"""Tool calls of a kind, in a tool set's own vocabulary: code outside ``fasbench.tools`` asks for "a
read of lines A..B of F in tool set T" and gets ``{"name", "arguments"}`` without naming T's tools,
and asks what kind a named tool is (``tool_kind``).

Used by the reference-trace converter (``fasbench.sft.reference``), which turns a main agent's shell
reads into harness calls, and by the trajectory classifier. Argument names follow the published
schemas (``relace_published``, ``fastcontext_published``).
"""

from __future__ import annotations

import posixpath
import shlex

from fasbench.tools import TOOLSETS


# What each tool of each tool set does. relace's bash is read-only and used to search (find, ls).
KINDS = {
    "relace": {"view_file": "read", "view_directory": "list", "grep_search": "search", "bash": "search",
               "report_back": "report"},
    "fastcontext": {"Read": "read", "Glob": "list", "Grep": "search"},
}


def tool_kind(toolset: str, name: str) -> str | None:
    """``read`` | ``search`` | ``list`` | ``report`` for tool ``name`` of ``toolset``; None for a
    name the tool set does not have."""
    _check(toolset)
    return KINDS[toolset].get(name)


def _check(toolset: str) -> None:
    if toolset not in TOOLSETS:
        raise ValueError(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")


def read_call(toolset: str, path: str, start: int, end: int | None) -> dict:
    """Show lines ``start``..``end`` (1-based, inclusive; ``end=None``: to the end) of file ``path``."""
    _check(toolset)
    if toolset == "relace":
        return {"name": "view_file", "arguments": {"path": path, "view_range": [start, end if end else -1]}}
    a: dict = {"path": path, "offset": start}
    if end:
        a["limit"] = end - start + 1
    return {"name": "Read", "arguments": a}


def list_call(toolset: str, directory: str) -> dict:
    """List the entries of ``directory``."""
    _check(toolset)
    if toolset == "relace":
        return {"name": "view_directory", "arguments": {"path": directory}}
    return {"name": "Glob", "arguments": {"pattern": "*", "directory": directory}}


def find_call(toolset: str, name: str, directory: str) -> dict:
    """Files named like glob ``name`` under ``directory`` (relace: ``find`` through its read-only
    bash tool; fastcontext: Glob)."""
    _check(toolset)
    if toolset == "relace":
        return {"name": "bash", "arguments": {"command": f"find {shlex.quote(directory)} -name {shlex.quote(name)} -type f"}}
    return {"name": "Glob", "arguments": {"pattern": name, "directory": directory}}


def file_call(toolset: str, path: str) -> dict:
    """Whether file ``path`` exists (``ls FILE``): relace lists its folder, fastcontext globs its name."""
    _check(toolset)
    folder = posixpath.dirname(path) or "."
    if toolset == "relace":
        return list_call(toolset, folder)
    return {"name": "Glob", "arguments": {"pattern": posixpath.basename(path), "directory": folder}}


def grep_call(toolset: str, pattern: str, path: str, *, ignore_case: bool = False, include: str | None = None,
              files_only: bool = False, context: dict[str, int] | None = None) -> dict:
    """Search Rust regex ``pattern`` under ``path`` (a file, a folder or ``.``), only in files
    matching glob ``include``. ``files_only`` and ``context`` (``{"-A"|"-B"|"-C": n}``, n <= 100)
    are kept where the tool set has them (fastcontext Grep), dropped where not (relace grep_search)."""
    _check(toolset)
    if toolset == "relace":
        glob = include
        if path != ".":
            is_file = "." in posixpath.basename(path) and not path.endswith("/")
            glob = path if is_file else path.rstrip("/") + "/**" + ("/" + include if include else "")
        a: dict = {"query": pattern, "case_sensitive": not ignore_case}
        if glob:
            a["include_pattern"] = glob
        return {"name": "grep_search", "arguments": a}
    a = {"pattern": pattern, "path": path, "output_mode": "files_with_matches" if files_only else "content"}
    if include:
        a["glob"] = include
    if ignore_case:
        a["-i"] = True
    for k, n in (context or {}).items():
        a[k] = min(n, 100)
    return {"name": "Grep", "arguments": a}


__all__ = ["KINDS", "file_call", "find_call", "grep_call", "list_call", "read_call", "tool_kind"]
