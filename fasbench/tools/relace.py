"""The Relace FAS tool set: view_file, view_directory, grep_search, bash (read-only), report_back.

Schemas follow Relace's published tool definitions (docs.relace.ai, "Fast Agentic Search"):
paths may be written ``/repo/...`` (the repository is presented at ``/repo``), root-relative,
or as the absolute workspace path. The episode ends with a ``report_back`` call whose
``files`` maps paths to line ranges.
"""

from __future__ import annotations

import json
import os
from collections import deque

from fasbench.records import Report, ToolCall, parse_confidence
from fasbench.tools.base import Tool, ToolError, Toolset, Workspace, obj
from fasbench.tools.bash import ALLOWED, GIT_SUBCOMMANDS, run_bash
from fasbench.tools.rg import run_rg
from fasbench.tools.sandbox import display, read_lines, resolve

VIEW_DEFAULT = [1, 100]
DIR_LIMIT = 250
GREP_LIMIT = 50

_RANGE = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}


# ---------------------------------------------------------------- tools

def view_file(ws: Workspace, path: str, view_range: list[int] | None = None) -> str:
    start, end = view_range or VIEW_DEFAULT
    if start < 1:
        raise ToolError(f"view_range start must be >= 1 (lines are numbered from 1), got {start}")
    if end != -1 and end < start:
        raise ToolError(f"view_range end must be >= start or -1 (end of file), got [{start}, {end}]")
    real = resolve(ws, path, kind="file")
    label = display(ws, real)
    got = read_lines(ws, real, start, end, label)
    if got.total == 0:
        return f"{label} is empty (0 lines)"
    if start > got.total:
        raise ToolError(f"view_range start {start} is beyond the end of {label} ({got.total} lines)")
    body = "\n".join(f"{n:>6}\t{text}" for n, text in got.lines)
    last = got.lines[-1][0]
    notes = list(got.notes)
    if got.stopped_at is not None:
        notes.append(
            f"[output limit reached: showing lines {start}-{last} of {got.total}; "
            f"continue with view_range [{last + 1}, ...]]"
        )
    elif last < got.total:
        notes.append(
            f"[showing lines {start}-{last} of {got.total}; {got.total - last} more lines below — "
            f"use view_range [{last + 1}, {min(got.total, last + 100)}] or [{last + 1}, -1] to see more]"
        )
    elif end != -1 and end > got.total:
        notes.append(f"[end of file: {label} has {got.total} lines]")
    return body + ("\n" + "\n".join(notes) if notes else "")


def list_directory(ws: Workspace, real, include_hidden: bool, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` entries under ``real``, breadth-first (so a cut keeps the top levels),
    returned sorted, relative to ``real``, directories with a trailing ``/``. ``.git`` is never
    descended into; symlinks are listed, not followed."""
    found: list[tuple[tuple[str, ...], bool]] = []
    queue = deque([(real, ())])
    cut = False
    while queue and not cut:
        d, prefix = queue.popleft()
        try:
            items = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in items:
            if not include_hidden and e.name.startswith("."):
                continue
            if len(found) >= limit:
                cut = True
                break
            is_dir = e.is_dir(follow_symlinks=False)
            parts = (*prefix, e.name)
            found.append((parts, is_dir))
            if is_dir and e.name != ".git":
                queue.append((e.path, parts))
    found.sort()
    return ["/".join(p) + ("/" if is_dir else "") for p, is_dir in found], cut


def view_directory(ws: Workspace, path: str, include_hidden: bool = False) -> str:
    real = resolve(ws, path, kind="dir")
    label = display(ws, real)
    entries, cut = list_directory(ws, real, include_hidden, DIR_LIMIT)
    if not entries:
        return f"{label}/ is empty" + ("" if include_hidden else " (hidden entries not shown)")
    out = "\n".join(entries)
    if cut:
        out += (
            f"\n[listing cut at {DIR_LIMIT} entries (breadth-first); view a subdirectory to see more]"
        )
    return out


def grep_search(
    ws: Workspace,
    query: str,
    case_sensitive: bool = True,
    include_pattern: str | None = None,
    exclude_pattern: str | None = None,
) -> str:
    if not query:
        raise ToolError("query must not be empty")
    args = ["--line-number", "--with-filename", "--no-heading"]
    args.append("--case-sensitive" if case_sensitive else "--ignore-case")
    if include_pattern:
        args += ["--glob", include_pattern]
    if exclude_pattern:
        args += ["--glob", "!" + exclude_pattern]
    args += ["--regexp", query, "./"]
    lines, cut = run_rg(ws, args, max_lines=GREP_LIMIT)
    if not lines:
        where = "".join(
            f", {k} {v!r}" for k, v in (("include", include_pattern), ("exclude", exclude_pattern)) if v
        )
        return f"No matches found for {query!r} (case {'sensitive' if case_sensitive else 'insensitive'}{where})"
    out = "\n".join(lines)
    if cut:
        out += f"\n[more than {GREP_LIMIT} matches; showing the first {GREP_LIMIT} — refine the query or use include_pattern]"
    return out


def bash(ws: Workspace, command: str) -> str:
    return run_bash(ws, command)


def _report_from_args(args: dict) -> Report:
    files = args.get("files")
    if not isinstance(files, dict):
        raise ToolError("files must be an object {path: [[start, end], ...]}")
    for p, ranges in files.items():
        for r in ranges:
            s, e = r
            if s < 1 or (e != -1 and e < s):
                raise ToolError(f"bad line range {r} for {p!r}: need 1 <= start <= end (or end -1)")
    return Report(files={str(p): [list(r) for r in rs] for p, rs in files.items()},
                  explanation=str(args.get("explanation", "")),
                  confidence=parse_confidence(args.get("confidence")))  # fmt: skip


def report_back(ws: Workspace, explanation: str, files: dict, confidence=None) -> str:
    rep = _report_from_args({"explanation": explanation, "files": files})
    n = sum(len(r) for r in rep.files.values())
    return f"Report received: {len(rep.files)} files, {n} line ranges."


# ---------------------------------------------------------------- the tool set

class RelaceToolset(Toolset):
    name = "relace"
    answer_tool = "report_back"

    def make_tools(self) -> list[Tool]:
        return [
            Tool(
                "view_file",
                "View the contents of a file, with line numbers (1-based, tab-separated). Shows lines "
                f"{VIEW_DEFAULT[0]}-{VIEW_DEFAULT[1]} unless view_range is given; a note after the last "
                "line says when the file continues. Binary files are refused; invalid UTF-8 is shown as \ufffd.",
                obj(
                    {
                        "path": {"type": "string", "description": "Path of a file, e.g. `/repo/src/app.py`."},
                        "view_range": {
                            **_RANGE,
                            "default": VIEW_DEFAULT,
                            "description": "Lines [start, end] to show, 1-based and inclusive; "
                            "[start, -1] shows from start to the end of the file.",
                        },
                    },
                    ["path"],
                ),
                view_file,
            ),
            Tool(
                "view_directory",
                "List a directory recursively: paths relative to it, directories with a trailing '/'. "
                f"At most {DIR_LIMIT} entries (breadth-first, so the top levels come first); hidden entries "
                "(names starting with '.') only with include_hidden.",
                obj(
                    {
                        "path": {"type": "string", "description": "Path of a directory, e.g. `/repo/` or `/repo/src`."},
                        "include_hidden": {"type": "boolean", "default": False, "description": "Also list hidden files and directories."},
                    },
                    ["path"],
                ),
                view_directory,
            ),
            Tool(
                "grep_search",
                "Search file contents with ripgrep (Rust regex syntax) across the repository, respecting "
                f".gitignore and skipping hidden and binary files. Returns at most {GREP_LIMIT} matches as "
                "`path:line:text`, sorted by path.",
                obj(
                    {
                        "query": {"type": "string", "description": "The regex to search for, e.g. `def authenticate`."},
                        "case_sensitive": {"type": "boolean", "default": True, "description": "Match case exactly."},
                        "include_pattern": {
                            "type": ["string", "null"], "default": None,
                            "description": "Only search files matching this glob, e.g. `*.py` or `src/**/*.ts`.",
                        },
                        "exclude_pattern": {
                            "type": ["string", "null"], "default": None,
                            "description": "Skip files matching this glob, e.g. `tests/**`.",
                        },
                    },
                    ["query"],
                ),
                grep_search,
            ),
            Tool(
                "bash",
                "Run a read-only shell command in the repository root. Allowed commands: "
                f"{', '.join(ALLOWED)} (git: {', '.join(GIT_SUBCOMMANDS)}), joined by pipes, ;, && or ||. "
                "No writing, no redirection except to /dev/null and 2>&1, no command substitution, variables, "
                "subshells or network. Output is stdout followed by stderr.",
                obj({"command": {"type": "string", "description": "The command line, e.g. `git log --oneline -5 -- src/app.py`."}}, ["command"]),
                bash,
            ),
            Tool(
                "report_back",
                "Finish the search: report the files and line ranges relevant to the query. This ends the episode.",
                obj(
                    {
                        "explanation": {"type": "string", "description": "What you found and why these locations matter."},
                        "files": {
                            "type": "object",
                            "additionalProperties": {"type": "array", "items": _RANGE},
                            "description": "{path: [[start, end], ...]} with 1-based inclusive line ranges.",
                        },
                        # fasbench addition (not in Relace's published schema), optional: the self-confidence
                        # feature of budget-aware best-of-N (fasbench/bon, seed 003)
                        "confidence": {"type": "number", "description": "Optional: your confidence, from 0 to 1, "
                                       "that these locations are the right ones."},
                    },
                    ["explanation", "files"],
                ),
                report_back,
            ),
        ]

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        return (
            "You are a fast code-search agent. Given a task about a repository, explore it with the tools "
            "and find the files and line ranges that someone solving the task must read or change.\n\n"
            "The repository is at /repo; paths may be written /repo/src/x.py or src/x.py.\n"
            "Tools: view_file (numbered lines of a file), view_directory (recursive listing), grep_search "
            "(ripgrep regex search), bash (read-only commands such as ls, grep, find, git log), and "
            "report_back (your final answer).\n\n"
            f"Work in parallel: in every turn make up to {max_calls} tool calls at once — they are independent "
            "and run concurrently, so batch every search and view you already know you need. You have at most "
            f"{max_turns} turns; use few of them.\n\n"
            "Finish by calling report_back(explanation, files) with files = {path: [[start, end], ...]} "
            "(1-based inclusive line ranges) covering the code relevant to the task — precise ranges, no "
            "unrelated files. report_back ends the search."
        )

    def user_prompt(self, query: str) -> str:
        return f"Repository: /repo\n\nTask:\n{query}\n\nFind the relevant files and line ranges, then call report_back."

    def final_turn_note(self) -> str:
        return (
            "This is your last turn. Do not explore further: call report_back now with the files and line "
            "ranges you have found."
        )

    def parse_report(self, text: str, calls: list[ToolCall]) -> Report | None:
        for call in reversed(calls):
            if call.name != self.answer_tool:
                continue
            args = call.arguments
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError:
                    continue
            try:
                import jsonschema

                # the optional confidence is parsed leniently (a malformed one must not void the report)
                checked = {k: v for k, v in args.items() if k != "confidence"} if isinstance(args, dict) else args
                jsonschema.validate(checked, self.tools[self.answer_tool].parameters)
                return _report_from_args(args)
            except (jsonschema.ValidationError, ToolError):
                continue
        return None
