"""The Relace FAS tool set: view_file, view_directory, grep_search, bash (read-only), report_back.

The schemas the model sees, the system prompt and the user prompt template are Relace's published
ones, verbatim (https://docs.relace.ai/docs/fast-agentic-search/agent: "Tool Schema Definition",
"System Prompt", "User Prompt Template"; the published text lives in
:mod:`fasbench.tools.relace_published`). Where fasbench deviates (what it accepts, notes the
documentation does not define, a read-only bash) is listed in ``fasbench/tools/README.md``.
Paths may be written ``/repo/...`` (the repository is presented at ``/repo``), root-relative, or as
the absolute workspace path. The episode ends with a ``report_back`` call whose ``files`` maps paths
to line ranges.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque

from fasbench.base.contain import is_inside, root_path
from fasbench.records import Report, Shown, ToolCall, parse_confidence
from fasbench.tools.base import Tool, ToolError, Toolset, Workspace
from fasbench.tools.bash.pipeline import display, read_lines, resolve
from fasbench.tools.bash.readonly import run_bash
from fasbench.tools.bash.shown import bash_seen
from fasbench.tools.calls import RelaceCalls
from fasbench.tools.compact import SCHEMAS as COMPACT_SCHEMAS
from fasbench.tools.compact import SYSTEM_PROMPT as COMPACT_SYSTEM_PROMPT
from fasbench.tools.compact import user_prompt as compact_user_prompt
from fasbench.tools.observed import Canon, Seen, norm, numbered, workspace_canon
from fasbench.tools.relace_published import (
    DIR_LIMIT,
    GREP_LIMIT,
    SCHEMAS,
    SYSTEM_PROMPT,
    TRUNCATED_NOTE,
    VIEW_DEFAULT,
    user_prompt,
)
from fasbench.tools.rgsearch import run_rg
from fasbench.tools.schema import SchemaError, validate

#: Each tool's kind (fasbench.tools.KINDS). ``bash`` is "search": Relace gives it for read-only
#: exploration (finding files, grepping); what one bash call showed (file content, matches, paths)
#: is in its result's ``shown``, parsed from the commands it ran (fasbench.tools.bash.shown).
KINDS = {
    "view_file": "read",
    "view_directory": "list",
    "grep_search": "search",
    "bash": "search",
    "report_back": "report",
}


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
    # Relace's documented line format (the view_file description's example and the reference
    # handler): the number, three spaces, the line.
    body = "\n".join(f"{n}   {text}" for n, text in got.lines)
    last = got.lines[-1][0]
    notes = list(got.notes)
    if last < got.total:
        notes.append(TRUNCATED_NOTE)  # the documented note when the view stops before the end
    if got.stopped_at is not None:
        notes.append(
            f"[output limit reached: showing lines {start}-{last} of {got.total}; "
            f"continue with view_range [{last + 1}, ...]]"
        )
    return body + ("\n" + "\n".join(notes) if notes else "")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def list_directory(ws: Workspace, real, include_hidden: bool, limit: int) -> tuple[list[str], bool]:
    """Up to ``limit`` entries under ``real``, breadth-first (so a cut keeps the top levels),
    returned sorted, relative to ``real``, directories with a trailing ``/``. ``.git`` is never
    descended into; symlinks are listed, not followed. Each subdirectory is opened relative to its
    parent's descriptor with ``O_NOFOLLOW``: one replaced by a symlink out after it was listed is
    not entered (by path, its outside names were listed)."""
    found: list[tuple[tuple[str, ...], bool]] = []
    try:
        top = os.open(real, _DIR_FLAGS)
    except OSError:
        return [], False
    if not is_inside(root_path(ws.root), os.readlink(f"/proc/self/fd/{top}")):  # swapped after resolve
        os.close(top)
        return [], False
    queue = deque([(top, ())])
    cut = False
    try:
        while queue and not cut:
            fd, prefix = queue.popleft()
            try:
                with os.scandir(fd) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError:
                items = []
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
                    try:
                        queue.append((os.open(e.name, _DIR_FLAGS, dir_fd=fd), parts))
                    except OSError:  # gone, or no longer a directory (a symlink: ELOOP)
                        pass
            os.close(fd)
    finally:
        for fd, _ in queue:
            os.close(fd)
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
        out += f"\n[listing cut at {DIR_LIMIT} entries (breadth-first); view a subdirectory to see more]"
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
    if include_pattern:  # values attached to their options: none can be read as an option
        args.append(f"--glob={include_pattern}")
    if exclude_pattern:
        args.append(f"--glob=!{exclude_pattern}")
    args += [f"--regexp={query}", "--", "./"]
    lines, cut = run_rg(ws, args, max_lines=GREP_LIMIT)
    if not lines:
        where = "".join(f", {k} {v!r}" for k, v in (("include", include_pattern), ("exclude", exclude_pattern)) if v)
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


# ---------------------------------------------------------------- what a result showed

# view_file's `N   line` (the published format); traces written before fasbench matched it hold
# `cat -n`'s right-aligned `     N\tline`, read the same
_VIEW_LINE = re.compile(r"^ *(?P<n>\d+)(?:   |\t)(?P<text>.*)$")
_GREP_LINE = re.compile(r"^(?P<path>.+?):(?P<n>\d+):(?P<text>.*)$")  # grep_search's `path:N:text`
_EMPTY_DIR = re.compile(r"^.*/ is empty(?: \(hidden entries not shown\))?$")


def observe(name: str, args: dict, text: str, canon: Canon = norm) -> Seen:
    """What the output ``text`` of a successful call ``name(**args)`` showed: the Relace tool set's one
    parser of its output formats (run on every result when the tool runs, and on old traces)."""
    seen = Seen()
    rows = text.split("\n")
    if name == "view_file":
        seen.view(canon(str(args.get("path", ""))), numbered(text, _VIEW_LINE))
    elif name == "view_directory":
        base = canon(str(args.get("path", ".")))
        if not (len(rows) == 1 and _EMPTY_DIR.match(rows[0])):
            seen.listed(e if base == "." else f"{base}/{e}" for e in rows if e and not e.startswith("["))
    elif name == "grep_search" and not text.startswith("No matches found for "):
        for row in rows:
            m = _GREP_LINE.match(row)
            if m and not row.startswith("["):
                seen.hit(norm(m.group("path")), int(m.group("n")), m.group("text"))
    elif name == "bash":
        return bash_seen(str(args.get("command", "")), text)
    return seen


# ---------------------------------------------------------------- the tool set


def _lenient(schema: dict) -> dict:
    """The published parameters as fasbench validates them: the same properties and types, but a
    field that has a default may be left out (it takes the default). The published schemas are
    ``strict`` and list every field as required, so a strict server never produces such a call;
    SFT data, scripted policies and non-strict servers do. ``view_range`` must hold two numbers."""
    out = json.loads(json.dumps(schema))
    props = out["properties"]
    out["required"] = [
        k
        for k in out["required"]
        if "default" not in props[k]
        and "null" not in (props[k].get("type") if isinstance(props[k].get("type"), list) else [])
    ]
    if "view_range" in props:
        props["view_range"].update(minItems=2, maxItems=2)
    return out


class PublishedTool(Tool):
    """A tool whose schema for the model is the published one (with ``strict``), while calls are
    validated against :func:`_lenient`."""

    def __init__(self, name: str, fn, published: dict, shown: dict | None = None):
        super().__init__(name, published["description"], _lenient(published["parameters"]), fn)
        self.published = published
        self.shown = shown or published  # what the model sees: the published schema, or the compact one

    def schema(self) -> dict:
        return {"type": "function", "function": json.loads(json.dumps(self.shown))}


class RelaceToolset(Toolset):
    name = "relace"
    answer_tool = "report_back"
    kinds = KINDS
    shell_tool = "bash"
    prompts = ("published", "compact")
    observe = staticmethod(observe)
    calls = RelaceCalls

    @property
    def compact(self) -> bool:
        """True under the compact protocol (``ToolLimits(prompt="compact")``, :mod:`fasbench.tools.compact`)."""
        return self.limits.prompt == "compact"

    def shown_of(self, name: str, args: dict, text: str) -> Shown:
        return observe(name, args, text, workspace_canon(self.ws)).shown

    def make_tools(self) -> list[Tool]:
        fns = {
            "view_file": view_file,
            "view_directory": view_directory,
            "grep_search": grep_search,
            "bash": bash,
            "report_back": report_back,
        }
        compact = (
            {s["name"]: s for s in COMPACT_SCHEMAS} if self is not None and self.compact else {}
        )  # self None: _templates
        tools = [PublishedTool(s["name"], fns[s["name"]], s, compact.get(s["name"])) for s in SCHEMAS]
        for t in tools:
            if t.name == "report_back":
                # fasbench addition, accepted but not shown: the published schema the model sees has no
                # confidence; a policy may add one (the heuristic does), the self-confidence feature of
                # budget-aware best-of-N (fasbench/bon, seed 003). Any value; parsed leniently.
                t.parameters["properties"]["confidence"] = {}
        return tools

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        """Relace's published system prompt, verbatim. It names no turn or call limit ("aim to call
        4-12 tools in parallel"); the harness enforces ``max_turns``/``max_calls`` itself. Under the
        compact protocol, :data:`fasbench.tools.compact.SYSTEM_PROMPT`."""
        return COMPACT_SYSTEM_PROMPT if self.compact else SYSTEM_PROMPT

    def user_prompt(self, query: str) -> str:
        """Relace's published user prompt template with ``{{repo_root}}`` = ``/repo`` (the compact one under
        the compact protocol)."""
        return compact_user_prompt(query, "/repo") if self.compact else user_prompt(query, "/repo")

    def final_turn_note(self) -> str:
        # Relace publishes no last-turn message; this one is fasbench's.
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
                # the schema accepts any confidence; _report_from_args parses it leniently
                validate(args, self.tools[self.answer_tool].parameters)
                return _report_from_args(args)
            except (SchemaError, ToolError):
                continue
        return None
