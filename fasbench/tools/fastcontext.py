"""The FastContext tool set (Microsoft): Read, Glob, Grep; the answer is a text block.

Schemas, descriptions, prompts, limits and output formats follow the public FastContext code release
(see :mod:`fasbench.tools.fastcontext_published` for the files and commits); deviations are listed in
``fasbench/tools/README.md``. Output formats, as released:

- ``Read``: a fenced block headed by the path as the model wrote it and the line range shown,
  ```` ```PATH:START-END ````, then ``N|line`` lines; lines over 500 characters are cut with ``...``;
  at most 2000 lines, then ``...``; a negative ``offset`` counts from the end of the file (-1 = the
  last line), one beyond the start clamps to line 1; ``offset`` 0 is an error; an empty file gives
  ``File is empty.``.
- ``Glob``: ``rg --files DIR --glob PATTERN --sort modified``: absolute paths (``/repo/...``), oldest
  first, at most 100, then ``Results are truncated: ...``; ``No files found``.
- ``Grep``: ``rg --heading``: each file's path on its own line, then its ``N:match`` / ``N-context``
  lines (``-n`` defaults to true), a blank line between files; ``files_with_matches`` one path a line,
  ``count`` ``path:N`` (``--count-matches``); ``type`` (``rg --type``), ``multiline``
  (``--multiline --multiline-dotall``); at most ``head_limit`` output lines (100 when not given or 0),
  then ``Results truncated to first N lines``; ``No matches found``. The default mode is ``content``.

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
``confidence: 0.8`` line (best-of-N feature). :func:`parse_final_answer_lenient` is fasbench's older,
looser reading (bullets, backticks, ``L`` numbers, several ranges, bare paths, the last block, an
unclosed block), used only by the ``fastcontext-lenient`` reward.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time

from fasbench.records import Report, Shown, ToolCall, parse_confidence
from fasbench.tools.base import Tool, ToolError, ToolLimits, Toolset, Workspace
from fasbench.tools.fastcontext_published import (
    FINAL_TURN_MESSAGE, GLOB_DESCRIPTION, GLOB_LIMIT, GLOB_PARAMETERS, GREP_DESCRIPTION, GREP_HEAD,
    GREP_PARAMETERS, READ_DESCRIPTION, READ_MAX_LINE_LENGTH, READ_MAX_LINES, READ_PARAMETERS, WORK_DIR,
    system_prompt, user_prompt,
)
from fasbench.tools.fastcontext_query import FC_QUERY, FC_QUERY_SOURCE, PROBLEM_STATEMENT
from fasbench.tools.observed import Canon, Seen, norm, numbered, workspace_canon
from fasbench.tools.rg import ignore_flags, rg_argv
from fasbench.tools.rgsearch import run_rg
from fasbench.tools.sandbox import Stage, decode, display, read_lines, resolve, run_pipeline

#: Characters one observation may reach (a memory bound, not the release's: its tools print at most
#: 2000 lines of at most 2000 characters from Read, 100 lines or ``head_limit`` from Grep, 100 paths
#: from Glob, and ``tool.py`` passes that through whole; fasbench's 20,000-character cap is not applied).
OBSERVATION_BOUND = 16_000_000

#: Each tool's kind (fasbench.tools.KINDS); the answer is a text block, not a tool.
KINDS = {"Read": "read", "Glob": "list", "Grep": "search"}


# ---------------------------------------------------------------- tools

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
    r = run_pipeline(ws, [Stage(rg_argv(*ignore_flags(ws.root), *args))],
                     max_lines=None if max_lines is None else max_lines + 1, max_bytes=16 * 2**20, cwd=cwd)
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
        files.append(f"Results are truncated: showing first {GLOB_LIMIT} results. "
                     "Consider using a more specific path or pattern.")
    return "\n".join(files)


def grep(ws: Workspace, pattern: str, path: str | None = None, glob: str | None = None,
         output_mode: str = "content", head_limit: float | None = None, type: str | None = None,
         multiline: bool | None = None, **flags) -> str:
    if not pattern:
        raise ToolError("pattern must not be empty")
    real = resolve(ws, path if path is not None else ".")
    target = display(ws, real)
    # every value attached to its option and the path after `--`, spelled `./…`: no path or value
    # the model writes (a corpus file named `--pre=sh`, `-L` or `-`) can be read as an option
    args = [f"--regexp={pattern}"]
    if glob:
        args.append(f"--glob={glob}")
    if flags.get("-i"):
        args.append("--ignore-case")
    if type:
        args.append(f"--type={type}")
    if multiline:
        args += ["--multiline", "--multiline-dotall"]
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
    lines, cut = run_rg(ws, args, max_lines=limit, paths_only=output_mode == "files_with_matches",
                        heading=_abs if output_mode == "content" else None)
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


#: utils.py parse_final_answer @5fb8c1d: the block and one citation line, as released.
_RELEASED_BLOCK = re.compile(r"<final_answer>(.*?)</final_answer>", re.DOTALL)
_RELEASED_LINE = re.compile(r"(.+?):(\d+(?:-\d+)?)\s*(.*)")


def parse_final_answer(text: str) -> Report | None:
    """The report in ``text`` as the release reads it (see the module docstring): None without a
    closed block; a Report whose ``files`` map each path as written to its ranges in answer order
    (``[start, end]`` as written, a single line ``N`` as ``[N, N]``), else empty."""
    m = _RELEASED_BLOCK.search(text or "")
    if m is None:
        return None
    files: dict[str, list[list[int]]] = {}
    reasons = []
    confidence = None
    for entry in m.group(1).strip().splitlines():
        if not entry.strip():
            continue
        cm = _RELEASED_LINE.match(entry.strip())
        if not cm:
            c = _CONFIDENCE.match(entry)  # fasbench addition, on a line the release counts as broken
            if c:
                confidence = parse_confidence(c.group(1))
            continue  # the release's n_broken_lines
        path, rng, why = cm.group(1).strip(), cm.group(2).strip(), (cm.group(3) or "").strip()
        s, e = rng.split("-") if "-" in rng else (rng, rng)
        files.setdefault(path, []).append([int(s), int(e)])
        if why:
            reasons.append(f"{path}: {why.strip('()')}")
    return Report(files=files, explanation="\n".join(reasons), confidence=confidence)


def parse_final_answer_lenient(text: str) -> Report | None:
    """fasbench's looser reading (not the release's): the report in the last ``<final_answer>``
    block of ``text`` (an unclosed one runs to the end), accepting bullets, backticks, ``L`` numbers,
    several ranges a line and bare paths; None without a block."""
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
                ranges.append([s, e])
        rest = line[m.end("ranges") if m.group("ranges") else m.end("path"):].strip(" `")
        if rest:
            reasons.append(f"{path}: {rest.strip('()')}")
    for p in files:  # duplicates dropped and sorted in one pass (a membership test per range was quadratic)
        files[p] = [list(r) for r in sorted({tuple(r) for r in files[p]})]
    return Report(files=files, explanation="\n".join(reasons), confidence=confidence)


# ---------------------------------------------------------------- the tool set

class FastContextToolset(Toolset):
    """The loop rules are the release's (``src/fastcontext/agent/agent.py`` ``_agent_loop`` @5fb8c1d,
    unchanged at 913afd3): the last-turn message on an extra turn ``max_turns + 1``, a reply without
    tool calls ends the episode (answer or not), and no cap on an observation beyond the tools' own
    limits (``tool.py`` ``ToolSet.call`` passes every output through whole)."""

    name = "fastcontext"
    answer_tool = None
    kinds = KINDS
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
        return observe(name, args, text, workspace_canon(self.ws)).shown

    def make_tools(self) -> list[Tool]:
        return [
            Tool("Read", READ_DESCRIPTION, READ_PARAMETERS, read),
            Tool("Glob", GLOB_DESCRIPTION, GLOB_PARAMETERS, glob),
            Tool("Grep", GREP_DESCRIPTION, GREP_PARAMETERS, grep),
        ]

    def workspace_listing(self) -> str:
        """``ls`` of the workspace root, as the release puts in the prompt (``cd WORKSPACE && ls``):
        names one per line, sorted byte-wise (the C locale), hidden names left out."""
        return "\n".join(sorted((n for n in os.listdir(self.root) if not n.startswith(".")),
                                key=lambda n: n.encode("utf-8", "surrogateescape")))

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
