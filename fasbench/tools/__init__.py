"""Harness tools: two published tool sets, each sandboxed to one workspace root.

- ``relace``: view_file, view_directory, grep_search, bash (read-only), report_back (Relace FAS).
- ``fastcontext``: Read, Glob, Grep; the answer is a ``<final_answer>`` block (FastContext).
"""

from __future__ import annotations

from pathlib import Path

from fasbench.tools.base import ToolError, ToolLimits, Toolset

TOOLSETS = ("relace", "fastcontext")


def make_toolset(name: str, root: str | Path, limits: ToolLimits | None = None) -> Toolset:
    """The tool set ``name`` bound to workspace ``root``."""
    if name == "relace":
        from fasbench.tools.relace import RelaceToolset

        return RelaceToolset(root, limits)
    if name == "fastcontext":
        from fasbench.tools.fastcontext import FastContextToolset

        return FastContextToolset(root, limits)
    raise ValueError(f"unknown tool set {name!r}; choose one of {', '.join(TOOLSETS)}")


__all__ = ["TOOLSETS", "ToolError", "ToolLimits", "Toolset", "make_toolset"]
