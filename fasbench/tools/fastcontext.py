"""The FastContext tool set (Microsoft): Read, Glob, Grep; the answer is a text block.

The answer is the assistant text's last ``<final_answer>`` block, one citation a line::

    <final_answer>
    src/app/auth.py:10-45 (login checks the token here)
    src/app/models.py:120 (the User model)
    src/app/urls.py (routes; file-level citation)
    </final_answer>

Accepted line forms: ``path:START-END``, ``path:N`` (one line), several ranges
``path:1-5,9-12``, an optional ``L`` before numbers, a bare ``path`` (a file cited without line
ranges: an empty range list), each optionally bulleted (``-``, ``*``, ``1.``), in backticks, and
followed by a reason. Lines that do not look like a citation (no ``/`` and no file extension in
the path) are ignored. Duplicate paths are merged. A block with no closing tag runs to the end
of the text.

Defaults (documented in the schemas): Read offset 1, limit 2000 lines (the output cap cuts
earlier, with a note saying where to continue); Glob at most 200 paths; Grep mode
``files_with_matches`` and ``head_limit`` 100 output lines.
"""

from __future__ import annotations

import re

from fasbench.records import Report, ToolCall, parse_confidence
from fasbench.tools.base import Tool, ToolError, Toolset, Workspace, obj
from fasbench.tools.rg import run_rg
from fasbench.tools.sandbox import display, read_lines, resolve

READ_LIMIT = 2000
GLOB_LIMIT = 200
GREP_HEAD = 100
MAX_HEAD = 1000


# ---------------------------------------------------------------- tools

def read(ws: Workspace, path: str, offset: int = 1, limit: int = READ_LIMIT) -> str:
    real = resolve(ws, path, kind="file")
    label = display(ws, real)
    got = read_lines(ws, real, offset, offset + limit - 1, label)
    if got.total == 0:
        return f"{label} is empty (0 lines)"
    if offset > got.total:
        raise ToolError(f"offset {offset} is beyond the end of {label} ({got.total} lines)")
    body = "\n".join(f"{n}|{text}" for n, text in got.lines)
    last = got.lines[-1][0]
    notes = list(got.notes)
    if got.stopped_at is not None:
        notes.append(f"[output limit reached at line {last} of {got.total}; continue with offset={last + 1}]")
    elif last < got.total:
        notes.append(f"[showing lines {offset}-{last} of {got.total}; continue with offset={last + 1}]")
    return body + ("\n" + "\n".join(notes) if notes else "")


def glob(ws: Workspace, pattern: str, directory: str = ".") -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    real = resolve(ws, directory, kind="dir")
    base = display(ws, real)
    args = ["--files", "--hidden", "--glob", "!.git", "--glob", pattern, "./"]
    files, cut = run_rg(ws, args, max_lines=GLOB_LIMIT, cwd=real, paths_only=True)
    if not files:
        return f"No files match {pattern!r} in {base}/"
    if base != ".":
        files = [f"{base}/{f}" for f in files]
    out = "\n".join(files)
    if cut:
        out += f"\n[more than {GLOB_LIMIT} files match; showing the first {GLOB_LIMIT} — use a narrower pattern or directory]"
    return out


def grep(
    ws: Workspace,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    output_mode: str = "files_with_matches",
    head_limit: int | None = None,
    **flags,
) -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    real = resolve(ws, path)
    target = display(ws, real)
    args = ["--with-filename"]
    if flags.get("-i"):
        args.append("--ignore-case")
    if output_mode == "content":
        args += ["--line-number", "--no-heading"]
        for k in ("-A", "-B", "-C"):
            if flags.get(k) is not None:
                args += [k, str(flags[k])]
    elif output_mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        args.append("--count")
    if glob:
        args += ["--glob", glob]
    args += ["--regexp", pattern, "./" if target == "." else target]
    limit = head_limit or GREP_HEAD
    lines, cut = run_rg(ws, args, max_lines=limit, paths_only=output_mode == "files_with_matches")
    if not lines:
        return f"No matches for {pattern!r} in {target}" + (f" (glob {glob!r})" if glob else "")
    out = "\n".join(lines)
    if cut:
        out += f"\n[output cut at {limit} lines (head_limit); narrow the pattern, path or glob]"
    return out


# ---------------------------------------------------------------- the answer block

_BLOCK = re.compile(r"<final_answer>(.*?)(?:</final_answer>|\Z)", re.S | re.I)
_NUM = r"L?\d+"
_RANGES = rf"{_NUM}(?:\s*[-–]\s*{_NUM})?(?:\s*,\s*{_NUM}(?:\s*[-–]\s*{_NUM})?)*"
_LINE = re.compile(
    rf"^\s*(?:[-*•+]\s+|\d+[.)]\s+)?`?(?P<path>[^\s`:()]+?)`?"
    rf"(?::(?P<ranges>{_RANGES}))?`?(?:\s*[(\-–—:].*|\s+.*)?$"
)


_CONFIDENCE = re.compile(r"^\s*confidence\s*[:=]\s*([0-9.]+%?)\s*$", re.I)


def _looks_like_path(p: str) -> bool:
    return "/" in p or re.search(r"\w\.\w+$", p) is not None


def parse_final_answer(text: str) -> Report | None:
    """The report in the last ``<final_answer>`` block of ``text``, or None without a block."""
    blocks = _BLOCK.findall(text or "")
    if not blocks:
        return None
    files: dict[str, list[list[int]]] = {}
    reasons = []
    confidence = None
    for line in blocks[-1].splitlines():
        c = _CONFIDENCE.match(line)  # fasbench addition: an optional `confidence: 0.8` line (bon feature)
        if c:
            confidence = parse_confidence(c.group(1))
            continue
        m = _LINE.match(line)
        if not m or not _looks_like_path(m.group("path")):
            continue
        path = m.group("path").rstrip(".,;")
        ranges = files.setdefault(path, [])
        if m.group("ranges"):
            for part in m.group("ranges").split(","):
                nums = [int(x.strip().lstrip("L")) for x in re.split(r"[-–]", part)]
                s, e = (nums[0], nums[0]) if len(nums) == 1 else (nums[0], nums[1])
                s, e = max(1, min(s, e)), max(1, max(s, e))
                if [s, e] not in ranges:
                    ranges.append([s, e])
        rest = line[m.end("ranges") if m.group("ranges") else m.end("path"):].strip(" `")
        if rest:
            reasons.append(f"{path}: {rest.strip('()')}")
    for p in files:
        files[p].sort()
    return Report(files=files, explanation="\n".join(reasons), confidence=confidence)


# ---------------------------------------------------------------- the tool set

class FastContextToolset(Toolset):
    name = "fastcontext"
    answer_tool = None

    def make_tools(self) -> list[Tool]:
        return [
            Tool(
                "Read",
                "Read a text file. Each line is shown as `LINE|content` (1-based line numbers). Reads "
                f"`limit` lines (default {READ_LIMIT}) from line `offset` (default 1); long output is cut "
                "with a note saying which offset to continue from. Binary files are refused.",
                obj(
                    {
                        "path": {"type": "string", "description": "File path, relative to the repository root (or /repo/...)."},
                        "offset": {"type": "integer", "minimum": 1, "default": 1, "description": "First line to read (1-based)."},
                        "limit": {"type": "integer", "minimum": 1, "default": READ_LIMIT, "description": "Number of lines to read."},
                    },
                    ["path"],
                ),
                read,
            ),
            Tool(
                "Glob",
                "Find files by glob pattern (gitignore-style: `*.py` matches at any depth, `src/**/*.ts` "
                "is relative to `directory`), skipping .gitignored files. Returns paths relative to the "
                f"repository root, sorted, at most {GLOB_LIMIT}.",
                obj(
                    {
                        "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.py` or `test_*.py`."},
                        "directory": {"type": "string", "default": ".", "description": "Directory to search in (default: the root)."},
                    },
                    ["pattern"],
                ),
                glob,
            ),
            Tool(
                "Grep",
                "Search file contents with ripgrep (Rust regex), skipping .gitignored, hidden and binary "
                "files; results sorted by path. output_mode: `files_with_matches` (default; paths), "
                "`content` (`path:line:text`, context lines `path-line-text`), or `count` (`path:count`). "
                f"At most head_limit output lines (default {GREP_HEAD}).",
                obj(
                    {
                        "pattern": {"type": "string", "description": "Regular expression to search for."},
                        "path": {"type": "string", "default": ".", "description": "File or directory to search (default: the root)."},
                        "glob": {"type": ["string", "null"], "default": None, "description": "Only search files matching this glob, e.g. `*.py`."},
                        "output_mode": {
                            "type": "string", "enum": ["content", "files_with_matches", "count"],
                            "default": "files_with_matches", "description": "What to return.",
                        },
                        "-A": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context after each match (content mode)."},
                        "-B": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context before each match (content mode)."},
                        "-C": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context around each match (content mode)."},
                        "-i": {"type": "boolean", "default": False, "description": "Case-insensitive search."},
                        "head_limit": {
                            "type": "integer", "minimum": 1, "maximum": MAX_HEAD, "default": GREP_HEAD,
                            "description": "Return at most this many output lines.",
                        },
                    },
                    ["pattern"],
                ),
                grep,
            ),
        ]

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        return (
            "You are a fast code-search subagent. Given a task about a repository, explore it with the tools "
            "and find the code locations that someone solving the task must read or change.\n\n"
            "Tools: Read (numbered lines of a file), Glob (find files by name pattern), Grep (ripgrep regex "
            "search; modes files_with_matches, content, count). Paths are relative to the repository root.\n\n"
            f"Work in parallel: in every turn make up to {max_calls} tool calls at once — they are independent "
            "and run concurrently, so batch every search and read you already know you need. You have at most "
            f"{max_turns} turns; use few of them.\n\n"
            "When you are done, answer without tool calls, with a block of one citation per line:\n"
            "<final_answer>\n"
            "path/to/file.py:START-END (why this range matters)\n"
            "</final_answer>\n"
            "Line numbers are 1-based and inclusive; cite precise ranges and no unrelated files."
        )

    def user_prompt(self, query: str) -> str:
        return f"Task:\n{query}\n\nFind the relevant code locations and answer with a <final_answer> block."

    def final_turn_note(self) -> str:
        return (
            "This is your last turn. Do not call any more tools: answer now with a <final_answer> block "
            "listing path:START-END (reason) for the locations you have found."
        )

    def parse_report(self, text: str, calls: list[ToolCall]) -> Report | None:
        return parse_final_answer(text)
