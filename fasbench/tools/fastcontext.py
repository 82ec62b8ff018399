"""The FastContext tool set (Microsoft): Read, Glob, Grep; the answer is a text block.

Tools, schemas and descriptions are Microsoft's release as the published models were trained with it:
GitHub ``T0mSIlver/fastcontext`` @5fb8c1d (the history of a fork; Microsoft's commits end at ``913afd3``),
``src/fastcontext/agent/tool/{read,glob,grep}.py`` and ``{read,glob,grep}.md``; texts in
:mod:`fasbench.tools.fastcontext_published`; the fork's fixed tools are the tool set ``fastcontext-fork``
(:mod:`fasbench.tools.fastcontext_fork`). Every element, its source and each deviation (all forced by
the sandbox or by reproducibility) are in ``fasbench/tools/README.md``; recorded outputs of the
released code are in ``tests/data/fastcontext_release/``. Output formats, as released:

- ``Read``: ```` ```PATH:START-END ```` (the path as written), then ``N|line`` lines; lines longer
  than 2000 characters (with their newline) are cut to 2000 with ``...`` (read.md says 500); at most
  2000 lines, then ``...``; a negative or missing ``offset`` reads from line 1; ``offset`` 0 shows the
  last line as line 0 first; ``limit`` 0 gives an empty block, -1 the whole file; an offset beyond the
  end an empty block; ``File is empty.``; ``Read Tool: file X does not exist.``.
- ``Glob``: ``rg --files DIR --glob PATTERN``: paths spelled from ``DIR`` as written (``/repo/...`` by
  default), at most 100, then ``Results are truncated: ...``; ``No files found``; sorted by path here
  (the release: ripgrep's unsorted parallel order; glob.md says modification time).
- ``Grep``: ``rg PATTERN PATH --heading``: with no ``output_mode`` (and with ``count``, which the
  release never wires up) matching lines without line numbers under each file's path;
  ``content`` adds ``-n`` (unless ``-n`` is false) and ``-C 3`` unless ``-C`` is given (``-C`` comes
  last, so it overrides ``-A``/``-B``); ``files_with_matches`` one path a line; a single file as the
  path prints no path; at most 100 lines, a ``head_limit`` only lowers that, then
  ``Results truncated to first N lines``; the untruncated output keeps rg's final newline;
  ``No matches found``; rg's error text on a bad pattern, type or path.

The answer is read as the release reads it (``training/fastcontext-rl/utils.py``
``parse_final_answer`` @5fb8c1d, the parser behind the RL reward and the judge; the same regular
expressions as ``src/fastcontext/agent/utils.py`` ``parse_citations`` @913afd3): the text's *first*
closed ``<final_answer>…</final_answer>`` block (case-sensitive; an unclosed block is no answer), one
citation a non-blank line, each matched from its start by ``(.+?):(\\d+(?:-\\d+)?)\\s*(.*)``::

    <final_answer>
    /repo/src/app/auth.py:10-45 (login checks the token here)
    /repo/src/app/models.py:120
    </final_answer>

So a path is everything before the first ``:N`` (a bullet or a backtick stays part of it), one range
per line (``a.py:1-5,9-12`` cites 1-5), no ``L`` before numbers, no bare path; ranges are kept as
written (not sorted, merged or clipped), a repeated path keeps every range. Lines that do not match
are ignored (the release counts them as ``n_broken_lines``). The path is kept as written: the reward
strips the workspace path the prompt showed (``/repo/``, the release's ``drop_prefix``) and compares
the rest with the gold paths exactly. fasbench adds one thing that scores nothing: an optional
``confidence: 0.8`` line (best-of-N feature). The parsers live in :mod:`fasbench.records.fastcontext_answer`
(the rewards re-read answers with them; scoring never imports a tool set): ``parse_final_answer_lenient`` is
fasbench's older, looser reading (bullets, backticks, ``L`` numbers, several ranges, bare paths, the last block, an
unclosed block), used only by the ``fastcontext-lenient`` reward.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
from pathlib import Path

from fasbench.base import contain
from fasbench.base.contain import is_inside
from fasbench.records import Report, Shown, ToolCall
from fasbench.records.fastcontext_answer import parse_final_answer
from fasbench.tools.base import Tool, ToolError, ToolLimits, Toolset, ToolText, Workspace
from fasbench.tools.bash.pipeline import Stage, run_pipeline
from fasbench.tools.calls import FastContextCalls
from fasbench.tools.fastcontext_published import (
    FINAL_TURN_MESSAGE,
    GLOB_DESCRIPTION,
    GLOB_LIMIT,
    GLOB_PARAMETERS,
    GREP_CONTEXT,
    GREP_DESCRIPTION,
    GREP_HEAD,
    GREP_PARAMETERS,
    READ_DESCRIPTION,
    READ_MAX_LINE_LENGTH,
    READ_MAX_LINES,
    READ_PARAMETERS,
    WORK_DIR,
    system_prompt,
    user_prompt,
)
from fasbench.tools.fastcontext_query import FC_QUERY, FC_QUERY_SOURCE, PROBLEM_STATEMENT
from fasbench.tools.observed import Canon, Seen, norm, numbered, workspace_canon
from fasbench.tools.rg import ignore_flags, rg_binary

#: Characters one observation may reach (a memory bound, not the release's: its tools print at most
#: 2000 lines of at most 2000 characters from Read, 100 lines or ``head_limit`` from Grep, 100 paths
#: from Glob, and ``tool.py`` passes that through whole; fasbench's 20,000-character cap is not applied).
OBSERVATION_BOUND = 16_000_000

#: Each tool's kind (fasbench.tools.KINDS); the answer is a text block, not a tool.
KINDS = {"Read": "read", "Glob": "list", "Grep": "search"}


# ---------------------------------------------------------------- tools (the release @5fb8c1d)
#
# Each tool is the released code's logic (GitHub T0mSIlver/fastcontext @5fb8c1d,
# src/fastcontext/agent/tool/{read,glob,grep}.py), run inside fasbench's sandbox. The release's
# ToolSet (tool.py @5fb8c1d) shows an exception's str(e) as the observation; those texts are raised
# here as ToolText (shown as is). Containment the release lacked (Read opened any path; Grep's rg
# read its pattern as an option when it began with '-') is fasbench's: see fasbench/tools/README.md.

_MAX_GREP_BYTES = 16 * 2**20  # fasbench: rg's output is read up to 16 MiB (the release read all of it)


def _outside(path: str) -> ToolText:
    """glob.py / grep.py @5fb8c1d's refusal of a path outside the working directory."""
    return ToolText(f"Permission error: `{path}` is not within the working directory `{WORK_DIR}`.")


def _place(ws: Workspace, path: str) -> tuple[Path, str, tuple[str, str] | None]:
    """Where a path as the model wrote it lies: (real path, rg's spelling of it, (what rg prints for
    the start of the path, what the model wrote there) or None when rg prints it as written).
    ``/repo/...`` (or the root's own path) is the workspace; a relative path is relative to it, as in
    the release's CLI (cli.py @5fb8c1d: ``work_dir = os.getcwd()``); any other absolute path, or one
    that resolves outside the root ('..', a symlink out), is outside. A relative path starting with
    ``-`` goes to rg as ``./-…`` (after ``--`` too, rg reads ``-`` as standard input)."""
    if "\x00" in path:
        raise _outside(path.replace("\x00", "\\0"))
    rel, target, spell = path, path, None
    for p in (WORK_DIR, str(ws.root)):
        if path == p or path.startswith(p + "/"):
            rel, target, spell = path[len(p) :].lstrip("/"), "." + path[len(p) :], (".", p)
            break
    else:
        if path.startswith("/"):
            raise _outside(path)
        if path.startswith("-"):
            target, spell = "./" + path, ("./", "")
    real = Path(os.path.realpath(ws.root / rel))
    if not is_inside(ws.root, real):
        raise _outside(path)
    return real, target, spell


def read(ws: Workspace, path: str, offset=None, limit=None, **_ignored) -> str:
    """read.py @5fb8c1d ``ReadTool.call``, line for line."""
    file_path = path
    if not file_path:
        raise ToolText("Read Tool: file path is required.")  # the release's text, marked an error
    try:
        real, _, _ = _place(ws, file_path)
    except ToolText:  # fasbench: the release read any path; here the Grep/Glob refusal (README)
        raise ToolText(f"Permission error: `{file_path}` is not within the working directory `{WORK_DIR}`.") from None
    if not os.path.exists(real):
        raise ToolText(f"Read Tool: file {file_path} does not exist.")  # the release's text, marked an error
    if not os.path.isdir(real) and not os.path.isfile(real):  # fasbench: a FIFO or device would block
        raise ToolError(f"{file_path!r} is not a regular file")
    if os.path.isfile(real) and os.path.getsize(real) > ws.limits.max_read_bytes:
        raise ToolError(  # fasbench: the release read the whole file into memory
            f"{file_path} has {os.path.getsize(real)} bytes, more than the {ws.limits.max_read_bytes / 2**20:g} MiB "
            "one Read looks at; search it with Grep"
        )
    if os.path.isdir(real):  # as released: open() of a directory, [Errno 21] with the path as written
        raise ToolText(f"[Errno 21] Is a directory: {file_path!r}")
    try:  # fasbench: opened through the containment rule, so a file swapped for a symlink out (or a
        # FIFO) since the checks above is refused, not read; its size checked again on what was opened
        raw = contain.open_file(ws.root, str(real))
    except contain.PathRefused as e:
        raise ToolError(f"{file_path!r}: {e.why}") from None
    try:
        with raw:
            if os.fstat(raw.fileno()).st_size > ws.limits.max_read_bytes:
                raise ToolError(
                    f"{file_path} has more than the {ws.limits.max_read_bytes / 2**20:g} MiB one Read "
                    "looks at; search it with Grep"
                )
            # aiofiles.open(file_path, mode="r").readlines(): text mode, universal newlines, strict
            # decoding (the locale's encoding: UTF-8 assumed)
            with io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8") as f:
                raw_lines = f.readlines()
    except OSError as e:
        raise ToolText(f"[Errno {e.errno}] {e.strerror}: {file_path!r}") from e
    except UnicodeDecodeError as e:
        raise ToolText(str(e)) from e
    if len(raw_lines) == 0:
        return "File is empty."
    try:
        end_line = -1
        if offset is None or offset < 0:  # 5fb8c1d: a negative offset reads from line 1 (913afd3: an error)
            offset = 1
        if limit is not None:  # limit 0 or below: an empty block, or (end_line -1) the whole file
            end_line = offset + limit - 1
        if end_line == -1 or end_line > len(raw_lines):
            end_line = len(raw_lines)
        lines = []
        total_read_lines = end_line - offset + 1
        if total_read_lines > READ_MAX_LINES:
            end_line = offset + READ_MAX_LINES - 1
        for i in range(offset - 1, end_line):  # offset 0: i = -1 shows the last line as line 0
            if len(raw_lines[i]) > READ_MAX_LINE_LENGTH:  # counted with the newline; read.md says 500
                line = raw_lines[i][:READ_MAX_LINE_LENGTH] + "...\n"
            else:
                line = raw_lines[i]
            lines.append(f"{i + 1}|{line}")
        if total_read_lines > READ_MAX_LINES:
            lines.append("...")
    except Exception as e:  # noqa: BLE001 — tool.py @5fb8c1d shows any exception as str(e)
        raise ToolText(str(e)) from e
    content = "".join(lines)
    return f"```{file_path}:{offset}-{end_line}\n{content}\n```"


def _run(ws: Workspace, tool: str, args: list[str]) -> tuple[str, bool]:
    """``rg args`` in the workspace root as ``subprocess.run(..., text=True)`` gives it: (stdout if the
    exit status is 0 else stderr, decoded strictly with universal newlines; whether it was stderr)."""
    r = run_pipeline(
        ws,
        [Stage([rg_binary(), "--no-config", *ignore_flags(ws.root), "--sort=path", *args])],
        max_lines=None,
        max_bytes=_MAX_GREP_BYTES,
    )
    if r.timed_out:  # tool.py @5fb8c1d's timeout text (glob.py's own reads the same)
        raise ToolText(f"Tool `{tool}` timed out after {ws.limits.timeout_s:g}s.")
    err = not r.cut and r.returncode != 0
    data = r.stderr if err else r.stdout
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolText(str(e)) from e
    return text.replace("\r\n", "\n").replace("\r", "\n"), err


def _unprefix(line: str, spell: tuple[str, str] | None) -> str:
    """A path rg printed, spelled from the path the model wrote (see :func:`_place`)."""
    return spell[1] + line[len(spell[0]) :] if spell and line.startswith(spell[0]) else line


def glob(ws: Workspace, pattern: str, directory: str | None = None, **_ignored) -> str:
    """glob.py @5fb8c1d: ``rg --files DIRECTORY --glob PATTERN``, the first 100 lines."""
    directory = WORK_DIR if directory is None else directory
    real, target, spell = _place(ws, directory)
    if not os.path.isdir(real):
        return f"The directory `{directory}` does not exist or is not a directory."
    output, err = _run(ws, "Glob", ["--files", f"--glob={pattern}", "--", target])
    # fasbench: sorted by path (the release printed rg's parallel walk order, which varies run to run)
    matched_files = [ln if err else _unprefix(ln, spell) for ln in output.splitlines()]
    if len(matched_files) > GLOB_LIMIT:
        matched_files = matched_files[:GLOB_LIMIT]
        matched_files.append(
            f"Results are truncated: showing first {GLOB_LIMIT} results. "
            "Consider using a more specific path or pattern."
        )
    if not matched_files:
        return "No files found"
    if err:  # rg's error text (a bad glob): the release returned it as the observation
        raise ToolText("\n".join(matched_files))
    return "\n".join(matched_files)


def _headings(data: str, spell: tuple[str, str] | None, paths_only: bool) -> str:
    """rg's ``--null`` output back in its ``--heading`` layout, each path spelled as the model's."""
    if paths_only:
        return "".join(_unprefix(p, spell) + "\n" for p in data.split("\0") if p)
    return re.sub(r"(^|\n)([^\n\0]*)\0", lambda m: m[1] + _unprefix(m[2], spell) + "\n", data)


def rg_match_args(pattern: str, glob: str | None, ignore_case: bool, type: str | None, multiline: bool) -> list[str]:
    """The argv of what a Grep call matches, in the release's order, each value attached to its option
    (``--regexp=…``: no pattern can be read as a flag); shared by the release's and the fork's Grep."""
    args = [f"--regexp={pattern}"]
    if glob:
        args.append(f"--glob={glob}")
    if ignore_case:
        args.append("--ignore-case")
    if type:
        args.append(f"--type={type}")
    if multiline:
        args += ["--multiline", "--multiline-dotall"]
    return args


def grep(
    ws: Workspace,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    output_mode: str | None = None,
    head_limit=None,
    type: str | None = None,
    multiline=None,
    **flags,
) -> str:
    """grep.py @5fb8c1d ``GrepTool.call`` and ``run_rg``."""
    path = WORK_DIR if path is None else path
    real, target, spell = _place(ws, path)
    if not os.path.exists(real):  # rg's own message for a missing path (exit status 2)
        return _limited(
            f"rg: {path}: IO error for operation on {path}: No such file or directory (os error 2)\n",
            head_limit,
            err=True,
        )
    context = flags.get("-C", GREP_CONTEXT)
    # the release's argv order, every value attached or after its flag and the path after `--`: no
    # pattern or path can be read as an option (the release passed the pattern bare: '-x' was a flag)
    args = rg_match_args(pattern, glob, bool(flags.get("-i", False)), type, multiline)
    if output_mode == "content":
        for k, v in (("-B", flags.get("-B")), ("-A", flags.get("-A")), ("-C", context)):
            if v is not None:
                args += [k, str(v)]  # str(2.0) == "2.0": rg refuses it, as it refused the release's
        if flags.get("-n", True):
            args.append("-n")
    elif output_mode == "files_with_matches":
        args.append("--files-with-matches")
    # output_mode "count" adds nothing: run_rg @5fb8c1d tests `output_mode == "count_matches"`, so
    # count (like no output_mode) prints matching lines without line numbers, grouped by file
    args += ["--heading", "--color", "never", "--null", "--", target]
    output, err = _run(ws, "Grep", args)
    if not err:
        output = _headings(output, spell, output_mode == "files_with_matches")
    if not output:
        return "No matches found"
    return _limited(output, head_limit, err)


def _limited(output: str, head_limit, err: bool) -> str:
    """grep.py @5fb8c1d's cut: 100 lines, or head_limit when it is below 100 (above 100 it is
    ignored, 0 is 100); the untruncated output as rg printed it (a final newline included)."""
    limit = GREP_HEAD
    if head_limit is not None:
        if head_limit < limit and head_limit > 0:
            limit = head_limit
    lines = output.splitlines()  # str.splitlines: \x0c, \x1c-\x1e, \x85, U+2028/9 end lines too
    if len(lines) > limit:
        try:
            output = "\n".join(lines[:limit])  # a float head_limit (5.0) fails here, as released
        except TypeError as e:
            raise ToolText(str(e)) from e
        output += f"\nResults truncated to first {limit} lines"
    if err:
        raise ToolText(output)
    return output


# ---------------------------------------------------------------- what a result showed

_READ_LINE = re.compile(r"^(?P<n>\d+)\|(?P<text>.*)$")  # Read's `N|line`
_MATCH_LINE = re.compile(r"^(?P<n>\d+)(?P<sep>[:-])(?P<text>.*)$")  # `rg -n --heading` `N:match` / `N-context`
_NOTES = ("Results truncated to first ", "Results are truncated: ", "No files found", "No matches found")


def _looks_like_file(path: str) -> bool:
    """For traces without a workspace: a Grep target with an extension is taken for one file."""
    return bool(os.path.splitext(path.rstrip("/"))[1])


def observe(name: str, args: dict, text: str, canon: Canon = norm, is_file=_looks_like_file) -> Seen:
    """What the output ``text`` of a successful call ``name(**args)`` showed, in the release's formats:
    the FastContext tool set's one parser of its output (run on every result when the tool runs, and
    on old traces). ``is_file(path)``: whether a Grep target is one file (rg then prints no path)."""
    seen = Seen()
    rows = [r for r in text.split("\n") if not r.startswith(_NOTES)]
    if name == "Read" and text.startswith("```"):
        seen.view(
            canon(str(args.get("path", ""))), [(n, t) for n, t in numbered(text, _READ_LINE, skip_first=True) if n >= 1]
        )
    elif name == "Glob":
        seen.listed([canon(r) for r in rows if r])
    elif name == "Grep":
        mode = args.get("output_mode")
        target = str(args.get("path") or WORK_DIR)
        single = is_file(target)
        if mode == "files_with_matches":
            seen.listed([canon(r) for r in rows if r])
        elif mode == "content" and args.get("-n", True):  # `N:match` / `N-context` lines
            path = canon(target) if single else None
            for row in rows:
                m = _MATCH_LINE.match(row)
                if m and path is not None:
                    if m.group("sep") == ":":
                        seen.hit(path, int(m.group("n")), m.group("text"))
                    else:  # a context line: content shown, not a match
                        seen.view(path, [(int(m.group("n")), m.group("text"))])
                elif row and row != "--" and not single:
                    path = canon(row)
        elif single:  # lines without numbers (no output_mode, count, -n false): the file was searched
            if text.strip():
                seen.listed([canon(target)])
        else:  # each group's path: the first row and the row after each blank one
            head = True
            for row in rows:
                if head and row:
                    seen.listed([canon(row)])
                head = row == ""
    return seen


# ---------------------------------------------------------------- the tool set


class FastContextToolset(Toolset):
    """The loop rules are the release's (``src/fastcontext/agent/agent.py`` ``_agent_loop`` @5fb8c1d,
    unchanged at 913afd3): the last-turn message on an extra turn ``max_turns + 1``, a reply without
    tool calls ends the episode (answer or not), and no cap on an observation beyond the tools' own
    limits (``tool.py`` ``ToolSet.call`` passes every output through whole)."""

    name = "fastcontext"
    answer_tool = None
    kinds = KINDS
    observe = staticmethod(observe)
    calls = FastContextCalls
    extra_final_turn = True
    silent_reply_ends = True
    caps_output = False

    def __init__(self, root, limits: ToolLimits | None = None):
        # no fasbench output cap: the shared readers' budgets (sandbox.read_lines, run_pipeline) get
        # OBSERVATION_BOUND instead of limits.max_output_chars, far above what the released tools print
        lim = limits or ToolLimits()
        super().__init__(root, dataclasses.replace(lim, max_output_chars=max(lim.max_output_chars, OBSERVATION_BOUND)))

    def episode_query(self, task) -> tuple[str, str]:
        """``task.meta["fc_query"]`` (the generated query, :mod:`fasbench.tools.fastcontext_query`)
        with its recorded source; else the task's query, recorded as ``problem_statement``."""
        meta = task.meta if isinstance(task.meta, dict) else {}
        q = meta.get(FC_QUERY)
        if isinstance(q, str) and q.strip():
            return q, str(meta.get(FC_QUERY_SOURCE) or "generated")
        return task.query, PROBLEM_STATEMENT

    def shown_of(self, name: str, args: dict, text: str) -> Shown:
        canon = workspace_canon(self.ws)
        return observe(name, args, text, canon, lambda p: (self.root / canon(p)).is_file()).shown

    def make_tools(self) -> list[Tool]:
        return [
            Tool("Read", READ_DESCRIPTION, READ_PARAMETERS, read),
            Tool("Glob", GLOB_DESCRIPTION, GLOB_PARAMETERS, glob),
            Tool("Grep", GREP_DESCRIPTION, GREP_PARAMETERS, grep),
        ]

    def workspace_listing(self) -> str:
        """``ls`` of the workspace root, as the release puts in the prompt (``cd WORKSPACE && ls``):
        names one per line, sorted byte-wise (the C locale), hidden names left out."""
        return "\n".join(
            sorted(
                (n for n in os.listdir(self.root) if not n.startswith(".")),
                key=lambda n: n.encode("utf-8", "surrogateescape"),
            )
        )

    def system_prompt(self, max_turns: int, max_calls: int) -> str:
        """The released system.md with the workspace at ``/repo`` and its listing; it names no
        turn or call limit (the harness enforces them)."""
        return system_prompt(self.workspace_listing())

    def user_prompt(self, query: str) -> str:
        return user_prompt(query)

    def final_turn_note(self) -> str:
        return FINAL_TURN_MESSAGE

    def parse_report(self, text: str, calls: list[ToolCall]) -> Report | None:
        """The answer of a reply without tool calls (agent.py and the RL rollout run the calls of a
        reply that has both, and go on); None for a reply with calls."""
        return None if calls else parse_final_answer(text)
