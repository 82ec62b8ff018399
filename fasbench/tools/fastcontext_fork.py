"""The fork's fixed FastContext tools: tool set ``fastcontext-fork`` (Read, Glob, Grep as GitHub
``T0mSIlver/fastcontext`` fixed them after Microsoft's last commit ``913afd3``).

The tool set ``fastcontext`` (:mod:`fasbench.tools.fastcontext`) is Microsoft's release, the code the
published models were trained with. This one is the fork's tools at ``058b710`` (the files of
``src/fastcontext/agent/tool/``), each fix from its fork commit (the first hash is the fork's commit,
the second its merge as a pull request):

- Read: lines over 500 characters cut (``e3dcb89``/``35db843``, #9; the release cuts at 2000);
  negative ``offset`` counts from the end (``48cb875``/``24541aa``, #10, pinned by
  ``tests/test_read_negative_offset.py`` @``3d3b8e0``); ``offset`` 0 and ``limit`` <= 0 are errors.
- Glob: ``--sort modified`` (``bcb282f``/``d055c8e``, #5; ``tests/test_glob_sort.py`` @bcb282f).
- Grep: ``content`` the default mode (``0bbeb7c``/``7e5dd95``, #4), no forced ``-C 3``
  (``c3f6c01``/``985e06d``, #6), ``count`` wired to ``--count-matches`` (``5e047ab``/``4b450d7``, #1),
  ``head_limit`` above 100 honoured (``c4034e7``/``3a2db79``, #2), ``--with-filename`` always
  (``0211b44``/``058b710``, #28, ``tests/test_grep_single_file_filename.py``).
- Descriptions: ``read.md``/``glob.md`` as released; ``grep.md`` @6c98019 (#3, #8); the parameters
  @058b710 (:data:`~fasbench.tools.fastcontext_published.FORK_GREP_PARAMETERS`).

fasbench keeps its own sandbox around them (paths resolved inside the root; the fork's mangled-path
resolution ``91ae3c0`` is fasbench's ``resolve``), errors in fasbench's words, and every search sorted
by path (the fork keeps ripgrep's order, except Glob's mtime sort). Output formats:

- ``Read``: ```` ```PATH:START-END ````, then ``N|line`` lines; lines over 500 characters are cut with
  ``...``; at most 2000 lines, then ``...``; an empty file gives ``File is empty.``.
- ``Glob``: absolute paths (``/repo/...``), oldest first, at most 100, then ``Results are truncated:
  ...``; ``No files found``.
- ``Grep``: ``rg --heading`` groups with ``N:match`` / ``N-context`` lines; ``files_with_matches`` one
  path a line; ``count`` ``path:N``; at most ``head_limit`` lines (100 when not given or 0), then
  ``Results truncated to first N lines``; ``No matches found``.
"""

from __future__ import annotations

import re
import time

from fasbench.records import Shown
from fasbench.tools.base import Tool, ToolError, Workspace
from fasbench.tools.bash.pipeline import Stage, decode, display, read_lines, resolve, run_pipeline
from fasbench.tools.fastcontext import FastContextToolset, rg_match_args
from fasbench.tools.fastcontext_published import (
    FORK_GLOB_DESCRIPTION,
    FORK_GLOB_PARAMETERS,
    FORK_GREP_DESCRIPTION,
    FORK_GREP_PARAMETERS,
    FORK_READ_DESCRIPTION,
    FORK_READ_MAX_LINE_LENGTH,
    FORK_READ_PARAMETERS,
    GLOB_LIMIT,
    GREP_HEAD,
    READ_MAX_LINES,
    WORK_DIR,
)
from fasbench.tools.observed import Canon, Seen, norm, numbered, workspace_canon
from fasbench.tools.rg import ignore_flags, rg_argv
from fasbench.tools.rgsearch import run_rg

READ_MAX_LINE_LENGTH = FORK_READ_MAX_LINE_LENGTH


def _abs(rel: str) -> str:
    """A root-relative path as the release prints it: absolute under the workspace path."""
    rel = rel[2:] if rel.startswith("./") else rel
    return WORK_DIR if rel in ("", ".") else f"{WORK_DIR}/{rel}"


def _count_lines(ws: Workspace, real, label: str) -> int:
    """Lines in a file as ``readlines()`` counts them (a last line without a newline counts),
    within the byte budget and time limit of one view (``max_read_bytes``, ``timeout_s``, as
    :func:`read_lines`): a file longer than that is refused (a negative offset on a 50 GB file
    counted for 92 s), a binary file too."""
    cap, deadline = ws.limits.max_read_bytes, time.monotonic() + ws.limits.timeout_s
    n, last, read_ = 0, b"", 0
    with open(real, "rb") as f:
        while chunk := f.read(min(1 << 20, cap + 1 - read_)):
            if not read_ and b"\x00" in chunk[:8192]:
                break  # read_lines refuses it with its own message
            read_ += len(chunk)
            if read_ > cap or time.monotonic() > deadline:
                raise ToolError(
                    f"a negative offset counts lines from the end of {label}, which is longer than the "
                    f"{cap / 2**20:g} MiB one Read looks at; read it with a positive offset or search it with Grep"
                )
            n += chunk.count(b"\n")
            last = chunk
    return n + (1 if last and not last.endswith(b"\n") else 0)


def read(ws: Workspace, path: str, offset: int = 1, limit: int | None = None, **_ignored) -> str:
    if offset == 0:
        raise ToolError("offset must be a non-zero integer")
    if limit is not None and limit <= 0:
        raise ToolError("limit must be a positive integer")
    real = resolve(ws, path, kind="file")
    label = display(ws, real)
    if offset < 0:  # counts back from the end; an over-long one clamps to the first line
        offset = max(1, _count_lines(ws, real, label) + offset + 1)
    end = offset + limit - 1 if limit is not None else -1
    got = read_lines(ws, real, offset, end, label)
    if got.total == 0:
        return "File is empty."
    if offset > got.total:
        raise ToolError(f"offset {offset} is beyond the end of {label} ({got.total} lines)")
    want_end = got.total if end == -1 or end > got.total else end
    shown = got.lines[:READ_MAX_LINES]
    # read.py's "..." marks the 2000-line cut (not the harness's output cap, which has its own note)
    over = want_end - offset + 1 > READ_MAX_LINES and len(shown) == READ_MAX_LINES
    out = []
    for n, text in shown:
        # read.py cuts a line whose length *with its newline* exceeds 500 characters
        if len(text) + 1 > READ_MAX_LINE_LENGTH:
            text = text[:READ_MAX_LINE_LENGTH] + "..."
        out.append(f"{n}|{text}\n")
    last = shown[-1][0]
    body = "".join(out) + ("..." if over else "")
    notes = list(got.notes)
    if got.stopped_at is not None and last < want_end:
        notes.append(f"[output limit reached at line {last} of {got.total}; continue with offset={last + 1}]")
    text = f"```{path}:{offset}-{last}\n{body}\n```"
    return text + ("\n" + "\n".join(notes) if notes else "")


def _rg(ws: Workspace, args: list[str], max_lines: int | None, cwd=None) -> tuple[list[str], bool]:
    """Lines of ``rg args`` in rg's own order (Glob's ``--sort modified``; at most ``max_lines``,
    ``cut`` when there were more), run in the workspace with the harness's fixed flags and ignore rules."""
    r = run_pipeline(
        ws,
        [Stage(rg_argv(*ignore_flags(ws.root), *args))],
        max_lines=None if max_lines is None else max_lines + 1,
        max_bytes=16 * 2**20,
        cwd=cwd,
    )
    if r.timed_out:
        raise ToolError(f"search timed out after {ws.limits.timeout_s:g}s; narrow the pattern or the path")
    if not r.cut and r.returncode not in (0, 1):
        raise ToolError(decode(r.stderr).strip() or f"ripgrep failed with exit status {r.returncode}")
    text = decode(r.stdout)
    if r.cut:
        text = text[: text.rfind("\n") + 1]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cut = r.cut
    if max_lines is not None and len(lines) > max_lines:
        lines, cut = lines[:max_lines], True
    return lines, cut


def glob(ws: Workspace, pattern: str, directory: str | None = None, **_ignored) -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    real = resolve(ws, directory if directory is not None else ".", kind="dir")
    base = display(ws, real)
    files, cut = _rg(ws, ["--files", f"--glob={pattern}", "--sort=modified", "--", "./"], GLOB_LIMIT, cwd=real)
    if not files:
        return "No files found"
    files = [_abs(f[2:] if base == "." else f"{base}/{f[2:]}") if f.startswith("./") else _abs(f) for f in files]
    if cut:
        files.append(
            f"Results are truncated: showing first {GLOB_LIMIT} results. "
            "Consider using a more specific path or pattern."
        )
    return "\n".join(files)


def grep(
    ws: Workspace,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    output_mode: str = "content",
    head_limit: float | None = None,
    type: str | None = None,
    multiline: bool | None = None,
    **flags,
) -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    real = resolve(ws, path if path is not None else ".")
    target = display(ws, real)
    # every value attached to its option and the path after `--`, spelled `./…`: no path or value
    # the model writes (a corpus file named `--pre=sh`, `-L` or `-`) can be read as an option
    args = rg_match_args(pattern, glob, bool(flags.get("-i")), type, multiline)
    if output_mode == "content":
        for k in ("-B", "-A", "-C"):
            if flags.get(k) is not None:
                args += [k, str(int(flags[k]))]
        if flags.get("-n", True):
            args.append("--line-number")
    elif output_mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        args.append("--count-matches")
    args += ["--with-filename", "--", "./" if target == "." else "./" + target]
    limit = int(head_limit) if head_limit is not None and head_limit > 0 else GREP_HEAD
    # sorted by path (run_rg: a parallel pass sorted here, or a sorted pass when the output is big)
    lines, cut = run_rg(
        ws,
        args,
        max_lines=limit,
        paths_only=output_mode == "files_with_matches",
        heading=_abs if output_mode == "content" else None,
    )
    if output_mode == "files_with_matches":
        lines = [_abs(ln) for ln in lines]
    elif output_mode == "count":
        lines = [_abs(p) + ":" + n for p, _, n in (ln.rpartition(":") for ln in lines)]
    if not lines:
        return "No matches found"
    if len(lines) > limit:
        lines, cut = lines[:limit], True
    out = "\n".join(lines)
    if cut:
        out += f"\nResults truncated to first {limit} lines"
    return out


# ---------------------------------------------------------------- what a result showed

_READ_LINE = re.compile(r"^(?P<n>\d+)\|(?P<text>.*)$")  # Read's `N|line`
_MATCH_LINE = re.compile(r"^(?P<n>\d+)(?P<sep>[:-])(?P<text>.*)$")  # `rg --heading` `N:match` / `N-context`


def _listed(rows: list[str]) -> list[str]:
    return [norm(r) for r in rows if r.startswith(WORK_DIR + "/")]


def observe(name: str, args: dict, text: str, canon: Canon = norm) -> Seen:
    """What the output ``text`` of a successful call ``name(**args)`` showed: the FastContext tool
    set's one parser of its output formats (run on every result when the tool runs, and on old traces)."""
    seen = Seen()
    rows = text.split("\n")
    if name == "Read" and text.startswith("```"):
        seen.view(canon(str(args.get("path", ""))), numbered(text, _READ_LINE, skip_first=True))
    elif name == "Glob":
        seen.listed(_listed(rows))
    elif name == "Grep":
        mode = args.get("output_mode") or "content"
        if mode == "files_with_matches":
            seen.listed(_listed(rows))
        elif mode == "count":
            seen.listed(_listed([r.rpartition(":")[0] for r in rows]))
        else:  # rg --heading groups: a path line first and after each blank line, then its lines
            numbered_lines = args.get("-n", True) is not False
            path, head = None, True
            for row in rows:
                if head and row.startswith(WORK_DIR + "/"):
                    path, head = norm(row), False
                    if not numbered_lines:
                        seen.listed([path])
                    continue
                head = row == ""
                m = _MATCH_LINE.match(row) if numbered_lines and path is not None else None
                if m and m.group("sep") == ":":
                    seen.hit(path, int(m.group("n")), m.group("text"))
                elif m:  # a context line: content shown, not a match
                    seen.view(path, [(int(m.group("n")), m.group("text"))])
    return seen


class FastContextForkToolset(FastContextToolset):
    """The fork's fixed tools; prompts, answer block and kinds as the ``fastcontext`` tool set."""

    name = "fastcontext-fork"
    observe = staticmethod(observe)  # the fork's own parser (its Grep has no forced context, its Read cuts)

    def shown_of(self, name: str, args: dict, text: str) -> Shown:
        return observe(name, args, text, workspace_canon(self.ws)).shown

    def make_tools(self) -> list[Tool]:
        return [
            Tool("Read", FORK_READ_DESCRIPTION, FORK_READ_PARAMETERS, read),
            Tool("Glob", FORK_GLOB_DESCRIPTION, FORK_GLOB_PARAMETERS, glob),
            Tool("Grep", FORK_GREP_DESCRIPTION, FORK_GREP_PARAMETERS, grep),
        ]
