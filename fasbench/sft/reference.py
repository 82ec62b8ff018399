"""Real main-agent trajectories → harness episodes (FastContext-style reference traces).

The exploration prefix (the actions before the first edit, as ``fasbench.data.agent_traces``
recorded it; the calls read by ``fasbench.trajectories.raw.read_actions``) of a mini-swe-agent trajectory is turned into tool calls of a harness tool set:

- ``grep``/``egrep``/``rg``/``git grep`` → a search call (BRE patterns translated to Rust regex);
- ``cat`` / ``nl`` / ``sed -n 'A,Bp'`` / ``head`` / ``tail`` (alone or piped) → a read call with a
  line range;
- ``find … -name P`` → a find-by-name call, ``ls`` / ``find`` without ``-name`` → a listing call
  (the tool set's own tools and arguments come from ``fasbench.tools.calls``).

Command lines are parsed by ``fasbench.shell``; a heredoc, a command inside a loop, subshell or
command substitution, or text no shell grammar accepts is unconvertible.

Consecutive independent reads are grouped into one parallel turn: a read opens a new turn when it
targets something that only appeared in the output of a read of the current turn, when an
unconvertible action (running code, writing a file) comes between, or when the turn is full.
``cd`` is followed. Every other action is counted by program name in ``unconvertible``, never
guessed. The calls are then re-executed by the harness on the task's corpus (so observations are
exactly the harness's), and the final report cites the files the agent went on to edit, with the
gold line ranges relocated onto the corpus.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from fasbench import shell
from fasbench.base import contain
from fasbench.data.agent_traces import RUNS, trajectory_dir
from fasbench.records import ToolCall
from fasbench.shell import options
from fasbench.tools import calls_for
from fasbench.trajectories.agent_paths import ROOT, agent_path
from fasbench.trajectories.raw import load_json, read_actions

NOOPS = {"cd", "echo", "pwd", "true", "clear"}


@dataclass
class Conversion:
    """The tool-call turns of one trajectory's exploration prefix and what could not be converted."""

    turns: list[list[dict]] = field(default_factory=list)  # each: [{"name", "arguments"}, ...]
    unconvertible: Counter = field(default_factory=Counter)  # program name -> count
    n_actions: int = 0  # actions in the exploration prefix
    n_converted: int = 0  # actions that gave at least one call


# ---------------------------------------------------------------- shell parsing

# Compound constructs whose commands a tool call cannot express (named in ``unconvertible``).
_CONSTRUCTS = {
    "for_statement": "for",
    "c_style_for_statement": "for",
    "while_statement": "while",
    "if_statement": "if",
    "case_statement": "case",
    "subshell": "(subshell)",
    "compound_statement": "{ group }",
    "command_substitution": "$(...)",
    "process_substitution": "<(...)",
    "function_definition": "function",
}
_DROPPED_TARGETS = ("/dev/null", "1", "2")


def pipelines(cmd: str) -> list[list[list[str]]]:
    """The pipelines of a command line (``fasbench.shell``), each a list of commands' words. A
    redirection is kept as one word ``>TARGET`` (``2>&1`` and ``>/dev/null`` dropped); a heredoc,
    text no shell grammar accepts, or a command inside a loop, subshell or substitution raises
    Unconvertible."""
    parsed = shell.parse(cmd)
    first = cmd.split()
    if parsed.parser == "unparsable":
        raise Unconvertible("unparsable command")
    out: list[list[list[str]]] = []
    for pl in shell.pipelines(parsed.commands):
        words_pl = []
        for s in pl:
            if s.heredoc is not None:
                raise Unconvertible(posixpath.basename(first[0]) + " (heredoc)")
            if s.inside is not None:
                raise Unconvertible(_CONSTRUCTS.get(s.inside, s.inside))
            words = list(s.words)
            words += [">" + t for op, t in s.redirects if op != ">&" and t not in _DROPPED_TARGETS]
            if words:
                words_pl.append(words)
        if words_pl:
            out.append(words_pl)
    return out


def bre_to_rust(pattern: str, mode: str = "bre") -> str:
    """A grep pattern as a Rust regex: ``bre`` (grep default) swaps escaped/unescaped meta
    characters, ``ere`` (-E, rg) is kept, ``fixed`` (-F) is escaped."""
    if mode == "fixed":
        return re.escape(pattern)
    if mode == "ere":
        return pattern
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            n = pattern[i + 1]
            out.append(n if n in "|(){}+?" else "\\" + n)
            i += 2
            continue
        out.append("\\" + c if c in "|(){}+?" else c)
        i += 1
    return "".join(out)


# ---------------------------------------------------------------- one pipeline → calls


class Unconvertible(Exception):
    """An action that is not a read the tool sets can express; the message names the program."""


def _grep_calls(words: list[str], cwd: str, toolset: str) -> list[dict]:
    prog = words[0]
    args = words[1:]
    if prog == "git":
        args = args[1:]
    opts, ops = options(
        args,
        {"-e", "-f", "-m", "-A", "-B", "-C", "--include", "--exclude", "-g", "-t", "--exclude-dir", "--glob", "--type"},
    )
    pat = opts.get("-e")
    if not isinstance(pat, str):
        if not ops:
            raise Unconvertible(prog)
        pat, ops = ops[0], ops[1:]
    mode = (
        "fixed"
        if opts.get("-F") or prog == "fgrep"
        else "ere"
        if opts.get("-E") or prog in ("egrep", "rg") or opts.get("-P")
        else "bre"
    )
    if prog == "git" and not opts.get("-E") and not opts.get("-F"):
        mode = "bre"
    pattern = bre_to_rust(pat, mode)
    if opts.get("-w"):
        pattern = rf"\b(?:{pattern})\b"
    ignore = bool(opts.get("-i"))
    include = opts.get("--include") or opts.get("-g") or opts.get("--glob")
    include = include if isinstance(include, str) else None
    paths = [agent_path(o, cwd, "any") for o in ops] or ["."]
    if any(p is None for p in paths):
        raise Unconvertible(prog + " (outside the repository)")
    context = {k: int(opts[k]) for k in ("-A", "-B", "-C") if isinstance(opts.get(k), str) and opts[k].isdigit()}
    return [
        _call(
            calls_for(toolset).search(
                "", pattern, include, ignore, path=p, files_only=bool(opts.get("-l")), context=context
            )
        )
        for p in paths
    ]


def _call(c: ToolCall) -> dict:
    return {"name": c.name, "arguments": c.arguments}


_SED_RANGE = re.compile(r"^(\d+)(?:,(\d+))?p$")


def _sed_ranges(script: str) -> list[tuple[int, int]]:
    out = []
    for part in script.split(";"):
        m = _SED_RANGE.match(part.strip())
        if not m:
            raise Unconvertible("sed (script)")
        a = int(m.group(1))
        out.append((a, int(m.group(2) or a)))
    return out


def _file_lines(root: Path | None, path: str) -> int | None:
    if root is None:
        return None
    try:  # a path from a trajectory: through fasbench.base.contain (inside the root, no FIFO, bounded)
        return contain.count_lines(root, path)
    except contain.PathRefused:
        return None


def pipeline_calls(cmds: list[list[str]], cwd: str, toolset: str, root: Path | None = None) -> list[dict]:
    """The tool calls of one pipeline; raises Unconvertible for anything but a read."""
    first = cmds[0]
    prog = posixpath.basename(first[0])
    for c in cmds:
        if any(w.startswith(">") for w in c):
            raise Unconvertible(prog + " (writes a file)")
    if prog in ("grep", "egrep", "fgrep", "rg") or (prog == "git" and len(first) > 1 and first[1] == "grep"):
        return _grep_calls(first, cwd, toolset)
    if prog in ("cat", "nl", "head", "tail") or (prog == "sed" and "-n" in first):
        if prog == "sed":
            opts, ops = options(first[1:], {"-e"})
            script = opts.get("-e") if isinstance(opts.get("-e"), str) else (ops.pop(0) if ops else "")
            ranges = _sed_ranges(script)
        else:
            opts, ops = options(first[1:], {"-n", "-c", "-b", "-s", "-w"})
            n = int(opts["-n"]) if isinstance(opts.get("-n"), str) and opts["-n"].lstrip("+").isdigit() else 10
            ranges = [(1, n)] if prog == "head" else [(-n, -1)] if prog == "tail" else [(1, 0)]
        if prog in ("cat", "nl") and len(cmds) == 2 and posixpath.basename(cmds[1][0]) in ("grep", "egrep", "rg"):
            return _grep_calls(cmds[1] + ops, cwd, toolset)  # nl FILE | grep PAT == grep PAT FILE
        # the rest of the pipeline narrows the range: | sed -n 'A,Bp' | head -n N
        for c in cmds[1:]:
            p2 = posixpath.basename(c[0])
            if p2 == "sed" and "-n" in c:
                o2, a2 = options(c[1:], {"-e"})
                ranges = _sed_ranges(o2["-e"] if isinstance(o2.get("-e"), str) else (a2[0] if a2 else ""))
            elif p2 == "head":
                o2, _ = options(c[1:], {"-n"})
                n = int(o2["-n"]) if isinstance(o2.get("-n"), str) and o2["-n"].isdigit() else 10
                ranges = [(a, min(b, a + n - 1) if b > 0 else a + n - 1) for a, b in ranges[:1]]
            elif p2 in ("grep", "wc", "awk", "sort", "uniq", "cut", "tr", "xargs"):
                raise Unconvertible(f"{prog} | {p2}")
        if not ops:
            raise Unconvertible(prog + " (no file)")
        out = []
        for o in ops:
            p = agent_path(o, cwd, "any")
            if p is None or p == ".":
                raise Unconvertible(prog + " (outside the repository)")
            for a, b in ranges:
                if a < 0:  # tail -n N: needs the file length
                    n_lines = _file_lines(root, p)
                    if n_lines is None:
                        raise Unconvertible("tail (unknown file length)")
                    a, b = max(1, n_lines + a + 1), n_lines
                out.append(_call(calls_for(toolset).read("", p, a, b if b > 0 else None)))
        return out
    if prog in ("ls", "tree"):
        opts, ops = options(first[1:], {"-I", "-L"})
        out = []
        for o in ops or ["."]:
            p = agent_path(o, cwd, "any")
            if p is None:
                raise Unconvertible(prog + " (outside the repository)")
            is_file = "." in posixpath.basename(p) and p != "."
            c = calls_for(toolset)
            out.append(_call(c.exists("", p) if is_file else c.list_dir("", p, recursive=False)))
        return out
    if prog == "find":
        if any(posixpath.basename(c[0]) not in ("head", "sort", "tail") for c in cmds[1:]):
            raise Unconvertible("find | " + posixpath.basename(cmds[1][0]))
        words = first[1:]
        starts = []
        while words and not words[0].startswith(("-", "(", "!")):
            starts.append(words.pop(0))
        name = None
        for i, w in enumerate(words):
            if w in ("-name", "-iname") and i + 1 < len(words):
                name = words[i + 1]
            elif w in ("-exec", "-execdir", "-delete", "-path", "-regex"):
                raise Unconvertible(f"find {w}")
        d = agent_path(starts[0] if starts else ".", cwd, "any")
        if d is None:
            raise Unconvertible("find (outside the repository)")
        c = calls_for(toolset)
        return [_call(c.list_dir("", d, recursive=False) if name is None else c.find("", name, d))]
    raise Unconvertible(prog)


# ---------------------------------------------------------------- grouping into turns


def _target(call: dict) -> str:
    a = call["arguments"]
    return str(a.get("path") or a.get("query") or a.get("pattern") or a.get("command") or "")


def convert_actions(
    actions: list, toolset: str, query: str = "", root: Path | None = None, max_calls_per_turn: int = 6
) -> Conversion:
    """Tool-call turns from (command, output) actions (``fasbench.data.agent_traces.Action``)."""
    conv = Conversion(n_actions=len(actions))
    cwd = ROOT
    group: list[dict] = []
    group_out = ""  # outputs of the current turn's original actions
    seen: set[str] = set()

    def close():
        nonlocal group, group_out
        if group:
            conv.turns.append(group)
        group, group_out = [], ""

    for act in actions:
        calls: list[dict] = []
        bad = None
        try:
            pls = pipelines(act.command)
        except Unconvertible as e:
            conv.unconvertible[str(e)] += 1
            close()
            continue
        for pl in pls:
            prog = posixpath.basename(pl[0][0])
            if prog == "cd" and len(pl) == 1:
                cwd = posixpath.normpath(posixpath.join(cwd, pl[0][1] if len(pl[0]) > 1 else ROOT))
                continue
            if prog in NOOPS and not any(w.startswith(">") for c in pl for w in c):
                continue
            try:
                calls += pipeline_calls(pl, cwd, toolset, root)
            except Unconvertible as e:
                bad = str(e)
                break
        if bad is not None or not calls:
            if bad is not None:
                conv.unconvertible[bad] += 1
                close()  # running code / writing breaks the run of independent reads
            continue
        conv.n_converted += 1
        fresh = []
        for c in calls:
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                fresh.append(c)
        if not fresh:
            continue
        dependent = any((t := _target(c)) and t in group_out and t not in query for c in fresh)
        if dependent or len(group) + len(fresh) > max_calls_per_turn:
            close()
        group.extend(fresh[:max_calls_per_turn])
        group_out += act.output
    close()
    return conv


# ---------------------------------------------------------------- trajectories on disk


def trajectory_actions(task) -> list:
    """The exploration prefix (actions before the first edit) of an agent-traces task's trajectory."""
    iid, run = task.meta.get("instance_id"), task.meta.get("agent_run")
    if not iid or run not in RUNS:
        raise ValueError(f"task {task.id} is not an agent-traces task (needs meta instance_id and agent_run)")
    d = trajectory_dir(run) / "trajs"
    files = sorted(d.glob(f"{iid}.traj.json*"))
    if not files:
        raise FileNotFoundError(f"no trajectory for {iid} in {d}")
    traj = load_json(files[0])
    actions = read_actions(traj)
    first = task.meta.get("first_edit_action")
    return actions[:first] if first is not None else actions
