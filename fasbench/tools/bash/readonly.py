"""The read-only ``bash`` tool: a command line is parsed with bashlex, checked against an
allowlist, and executed *without a shell* (argv lists chained with pipes).

What is accepted: simple commands from :data:`ALLOWED`, joined by ``|``, ``|&``, ``;``,
``&&``, ``||``; quoting; unquoted globs (``*.py``, expanded inside the workspace, sorted, left
as is when nothing matches, hidden files only when the pattern names them, never looking outside
the root, matches passed as operands: :mod:`fasbench.tools.bash.glob_paths`); redirections
``>/dev/null``, ``2>/dev/null``, ``&>/dev/null``, ``2>&1``, ``1>&2`` and ``< file`` (a file in
the workspace). Everything else is refused with a reason: other redirections, here-documents,
command/process substitution, variables, ``~``, subshells and compound commands, background
``&``, environment assignments, commands not on the allowlist, and path arguments that leave
the workspace. Brace expansion is not done (``{a,b}`` stays literal).

Safe by construction (the first wall, see ``fasbench/tools/README.md``): each command's options
are parsed the way the program parses them (:mod:`fasbench.tools.bash.options`) against an
allowlist (:mod:`fasbench.tools.bash.commands`), every operand and file-valued option is resolved
and contained, and the command that runs is re-emitted from what was checked (full option
names, ``--`` before the operands). The second wall is the OS confinement every subprocess
runs under (:mod:`fasbench.tools.bash.confine`).

Exit status: a non-zero status of the last command is an error observation, except status 1
of the search commands (grep, rg, git grep), which means "no match".
"""

from __future__ import annotations

import os
import re
import shutil
import time

from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.commands import (
    FIND_PRIMARIES,
    FIND_REFUSED,
    GIT_EXTRA,
    GIT_SPECS,
    GIT_SUBCOMMANDS,
    NO_DASHDASH,
    OPERANDS,
    PATTERN_OPTS,
    SPECS,
    sed_script_ok,
)  # fmt: skip
from fasbench.tools.bash.gitwall import refusal as git_refusal
from fasbench.tools.bash.glob_paths import GlobBudget, contain, expand_glob
from fasbench.tools.bash.options import PATH, emit, parse
from fasbench.tools.bash.pipeline import Stage, decode, resolve, run_pipeline
from fasbench.tools.rg import ignore_flags, rg_binary

# ---------------------------------------------------------------- the allowlist

ALLOWED = (
    "ls", "cat", "head", "tail", "sed", "grep", "rg", "find", "wc", "sort", "uniq", "cut",
    "nl", "tree", "file", "stat", "du", "echo", "pwd", "basename", "dirname", "tr", "git",
)  # fmt: skip

_SEARCHERS = {"grep", "rg"}  # exit status 1 = no match
MAX_COMMAND_CHARS = 16_384  # a longer command line is refused before it is parsed
MAX_ARGS = 4096  # words of one command after glob expansion


def _refuse(msg: str):
    raise ToolError(f"command refused: {msg}")


# ---------------------------------------------------------------- per-command checks


def _check_sed_script(s: str) -> None:
    if not sed_script_ok(s):
        _refuse(
            f"sed script {s!r} is not allowed: only printing commands (p, =, l, q, d, n, "
            "addresses and s/x/y/ with flags g, p, i) are accepted; no w, W, e, r or R"
        )


def _operands(ws: Workspace, name: str, opts, operands: list[str]) -> list[str]:
    role = OPERANDS[name]
    given = {n for o, _ in opts for n in o.names}
    lead: list[str] = []
    if role == "pattern+paths" and not (given & PATTERN_OPTS):
        if not operands:
            _refuse(f"{name} needs a pattern")
        lead, operands = operands[:1], operands[1:]
    elif role == "script+paths":
        if "expression" not in given:
            if not operands:
                _refuse("sed needs a script")
            lead, operands = operands[:1], operands[1:]
            _check_sed_script(lead[0])
    elif role == "strings":
        return operands
    elif role == "none":
        if operands:
            _refuse(f"{name} takes no operands")
        return []
    elif role == "input" and len(operands) > 1:
        _refuse(f"{name} with an OUTPUT file operand is not allowed (it writes files)")
    return lead + [p if p == "-" else contain(ws, p) for p in operands]


def _check_simple(ws: Workspace, name: str, args: list[str]) -> list[str]:
    if name == "echo":
        return args  # echo prints its arguments and reads nothing
    if name in ("head", "tail"):
        args = [f"--lines={a[1:]}" if re.fullmatch(r"-\d+", a) else a for a in args]  # obsolete -NUM
    elif name == "grep":
        args = [f"--context={a[1:]}" if re.fullmatch(r"-\d+", a) else a for a in args]
    sp = SPECS[name]
    opts, operands, _ = parse(name, sp, args)
    checked = []
    for o, v in opts:
        if o.kind == PATH:
            if v == "-":
                _refuse(f"option {o.canonical} of {name} may not read standard input; name a file")
            v = contain(ws, v, f"the file of {o.canonical}")
        elif "expression" in o.names:
            _check_sed_script(v)
        checked.append((o, v))
    ops = _operands(ws, name, opts, operands)
    tail = ops if (name in NO_DASHDASH or not ops) else ["--", *ops]
    if name == "sed":
        return ["--sandbox", *emit(checked), *tail]  # GNU sed itself then refuses e, w and r too
    return [*emit(checked), *tail]


def _check_find(ws: Workspace, args: list[str]) -> list[str]:
    """find [-P] [paths] [expression]: paths contained, primaries from the allowlist with their
    arguments (paths among them contained)."""
    i = 0
    out: list[str] = []
    while i < len(args) and args[i] in ("-P", "-H", "-L", "-O0", "-O1", "-O2", "-O3", "-D"):
        if args[i] != "-P" and not args[i].startswith("-O"):
            _refuse(f"find {args[i]} is not allowed ({FIND_REFUSED.get(args[i], 'debug options are not allowed')})")
        out.append(args[i])
        i += 1
    paths = []
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ")", ",")):
        paths.append(contain(ws, args[i]))
        i += 1
    out += paths
    while i < len(args):
        a = args[i]
        if a in FIND_REFUSED or a.startswith("-fprint"):
            _refuse(f"find {a} is not allowed ({FIND_REFUSED.get(a, 'it writes files')})")
        arity = FIND_PRIMARIES.get(a)
        if arity is None and re.fullmatch(r"-newer[acmB][acmBt]", a):
            arity = 1 if a.endswith("t") else "p"
        if arity is None:
            _refuse(f"find {a} is not allowed here (unknown, or it writes, executes or follows symlinks)")
        out.append(a)
        i += 1
        if arity:
            if i >= len(args):
                _refuse(f"find {a} needs an argument")
            out.append(contain(ws, args[i]) if arity == "p" else args[i])
            i += 1
    return out


def _check_git(ws: Workspace, args: list[str]) -> list[str]:
    """Checked git argv (without 'git'); adds flags that keep diff drivers, pagers and hooks
    from running."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in ("--no-pager", "-P"):
            _refuse(f"git option {args[i]} is not allowed before the subcommand (no -c, -C, --git-dir, …)")
        i += 1
    if i >= len(args):
        _refuse("git needs a subcommand")
    sub, rest = args[i], args[i + 1 :]
    if sub not in GIT_SUBCOMMANDS:
        _refuse(f"git {sub} is not allowed; read-only subcommands: {', '.join(GIT_SUBCOMMANDS)}")
    if sub in ("log", "show", "grep"):  # -NUM: the number of commits, or grep's context lines
        num = "--max-count" if sub != "grep" else "--context"
        cut = rest.index("--") if "--" in rest else len(rest)
        rest = [f"{num}={a[1:]}" if k < cut and re.fullmatch(r"-\d+", a) else a for k, a in enumerate(rest)]
    opts, operands, dashdash = parse(f"git {sub}", GIT_SPECS[sub], rest)
    for o, v in opts:
        if o.kind == PATH:  # pragma: no cover - no git option with a file value is allowed
            _refuse(f"git {sub} {o.canonical} is not allowed")
        if {"pretty", "format"} & set(o.names) and v and "%G" in v:
            _refuse(f"git {sub} {o.canonical} with %G is not allowed (it runs gpg)")
    why = git_refusal(ws)  # the repository's own layout and config (fasbench/tools/bash/gitwall.py)
    if why:
        _refuse(f"git is not available here: {why}")
    given = {n for o, _ in opts for n in o.names}
    if sub == "grep" and not given & {"e"} and operands and (dashdash is None or dashdash > 0):
        pattern, operands = [operands[0]], operands[1:]
        dashdash = None if dashdash is None else dashdash - 1
    else:
        pattern = []
    checked = []
    for k, a in enumerate(operands):
        after = dashdash is not None and k >= dashdash
        revision = re.match(r"^[^/]*[:@^~]", a) is not None  # HEAD~1, main@{1}, HEAD:src/x.py
        if after or (not revision and ("/" in a or os.path.lexists(ws.root / a))):
            a = contain(ws, a)
        checked.append(a)
    if dashdash is not None:
        checked.insert(dashdash, "--")
    extra = GIT_EXTRA.get(sub, [])
    return ["--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", sub, *extra,
            *emit(opts), *pattern, *checked]  # fmt: skip


# ---------------------------------------------------------------- parsing


class _Cmd:
    def __init__(self, argv, stdin_path=None, stdout="out", stderr="err"):
        self.argv, self.stdin_path, self.stdout, self.stderr = argv, stdin_path, stdout, stderr


def _words(ws: Workspace, command: str, node, budget: GlobBudget) -> tuple[list[str], dict]:
    argv: list[str] = []
    fds = {1: "out", 2: "err"}
    stdin_path = None
    for part in node.parts:
        kind = part.kind
        if kind == "assignment":
            _refuse(f"environment assignments ({part.word!r}) are not allowed")
        if kind == "word":
            for sub in getattr(part, "parts", []) or []:
                _check_word_part(sub)
            raw = command[part.pos[0] : part.pos[1]]
            if any(ch in raw for ch in "*?[") and not any(q in raw for q in "'\"\\") and argv:
                argv.extend(expand_glob(ws, part.word, budget))
            else:
                argv.append(part.word)
        elif kind == "redirect":
            stdin_path = _redirect(ws, part, fds, stdin_path)
        else:
            _refuse(f"{kind} is not supported")
    return argv, {"fds": fds, "stdin": stdin_path}


def _check_word_part(sub) -> None:
    k = sub.kind
    if k == "commandsubstitution":
        _refuse("command substitution ($(...) or backticks) is not allowed")
    if k == "processsubstitution":
        _refuse("process substitution (<(...) or >(...)) is not allowed")
    if k == "parameter":
        _refuse("variables ($NAME) are not supported")
    if k == "tilde":
        _refuse("~ is not supported; paths are relative to the repository root")
    _refuse(f"{k} is not supported")


def _redirect(ws: Workspace, r, fds: dict, stdin_path):
    t = r.type
    out = r.output
    target = getattr(out, "word", None) if not isinstance(out, int) else None
    if target is not None and getattr(out, "parts", None):
        for sub in out.parts:
            _check_word_part(sub)
    if t in (">", ">>", ">|", "&>") and target == "/dev/null":
        if t == "&>":
            fds[1] = fds[2] = "null"
        else:
            fds[r.input if isinstance(r.input, int) else 1] = "null"
        if (r.input if isinstance(r.input, int) else 1) not in (1, 2):
            _refuse("redirections of file descriptors other than 1 and 2 are not allowed")
        return stdin_path
    if t == ">&" and isinstance(out, int):
        src = r.input if isinstance(r.input, int) else 1
        if (src, out) in ((2, 1), (1, 2)):
            fds[src] = fds[out]
            return stdin_path
        _refuse(f"redirection {src}>&{out} is not allowed; only 2>&1 and 1>&2")
    if t == "<" and target is not None:
        contain(ws, target, "the file of <")  # decided without looking outside the root
        return resolve(ws, target, kind="file")
    if t in ("<<", "<<-", "<<<"):
        _refuse("here-documents and here-strings are not supported")
    _refuse(
        f"redirection {t}{' ' + target if target else ''} is not allowed; output may only go to "
        "/dev/null (>/dev/null, 2>/dev/null, 2>&1)"
    )


def _pipeline(ws: Workspace, command: str, node, budget: GlobBudget) -> list[_Cmd]:
    if node.kind == "command":
        nodes, pipes = [node], []
    elif node.kind == "pipeline":
        nodes = [p for p in node.parts if p.kind != "pipe"]
        pipes = [p.pipe for p in node.parts if p.kind == "pipe"]
        for p in node.parts:
            if p.kind == "reservedword":
                _refuse(f"{p.word!r} is not supported")
    elif node.kind == "compound":
        _refuse("subshells, groups and compound commands ((...), {...}, if, for, while) are not allowed")
    elif node.kind == "function":
        _refuse("function definitions are not allowed")
    else:
        _refuse(f"{node.kind} is not supported")
    cmds = []
    for i, n in enumerate(nodes):
        if n.kind != "command":
            _refuse("subshells, groups and compound commands are not allowed inside a pipeline")
        argv, io = _words(ws, command, n, budget)
        if not argv:
            _refuse("empty command")
        fds = io["fds"]
        if i < len(pipes) and pipes[i] == "|&" and fds[2] == "err":
            fds[2] = fds[1]
        cmds.append(_Cmd(_check_command(ws, argv), io["stdin"], fds[1], fds[2]))
    return cmds


def _check_command(ws: Workspace, argv: list[str]) -> list[str]:
    name, args = argv[0], argv[1:]
    if name not in ALLOWED:
        _refuse(f"{name!r} is not an allowed command; allowed (read-only): {', '.join(ALLOWED)}")
    if len(args) > MAX_ARGS:
        _refuse(f"{name} has more than {MAX_ARGS} arguments; narrow the globs")
    for a in args:
        if "\x00" in a:
            _refuse("NUL character in an argument")
    if name == "find":
        args = _check_find(ws, args)
    elif name == "git":
        args = _check_git(ws, args)
    else:
        args = _check_simple(ws, name, args)
    if name == "rg":
        # confined like the tools' own rg; sorted by path unless the command sorts, so that the same
        # command shows the same output on every run (rg's parallel walk prints in a varying order)
        sort = [] if any(a.startswith(("--sort", "--sortr")) for a in args) else ["--sort=path"]
        return [rg_binary(), "--no-config", *ignore_flags(ws.root), *sort, *args]
    exe = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
    if exe is None:
        raise ToolError(f"{name} is not installed on this machine")
    return [exe, *args]


def parse_command(ws: Workspace, command: str, deadline: float | None = None) -> list[tuple[str | None, list[_Cmd]]]:
    """The checked plan of a command line: [(operator before it, pipeline), ...]; ToolError
    with the reason when any part is refused. Glob expansion stops at ``deadline``."""
    if not command.strip():
        _refuse("empty command")
    if "\x00" in command:
        _refuse("NUL character in the command")
    if len(command) > MAX_COMMAND_CHARS:
        _refuse(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    budget = GlobBudget(deadline or time.monotonic() + ws.limits.timeout_s)
    # bashlex is heavy to import (ply builds its grammar tables; benchmarks/README.md), which every
    # tool set and every `fasbench tool` call would pay though only bash calls parse
    import bashlex  # local import: heavy (see above), needed by bash calls only

    try:
        trees = bashlex.parse(command)
    except Exception as e:  # bashlex raises ParsingError and NotImplementedError
        msg = str(e) or type(e).__name__
        raise ToolError(f"command refused: could not parse it ({msg}); use simple read-only commands and pipes") from e
    plan: list[tuple[str | None, list[_Cmd]]] = []
    for tree in trees:
        if tree.kind == "list":
            op = ";" if plan else None
            for part in tree.parts:
                if part.kind == "operator":
                    if part.op == "&":
                        _refuse("background jobs (&) are not allowed")
                    if part.op not in (";", "&&", "||"):
                        _refuse(f"operator {part.op!r} is not supported")
                    op = part.op
                else:
                    plan.append((op, _pipeline(ws, command, part, budget)))
        else:
            plan.append((";" if plan else None, _pipeline(ws, command, tree, budget)))
    if len(plan) > 16 or sum(len(p) for _, p in plan) > 16:
        _refuse("too many commands in one call (at most 16)")
    return plan


def run_bash(ws: Workspace, command: str) -> str:
    """Check and run a read-only command line; the observation text (stdout, then stderr)."""
    deadline = time.monotonic() + ws.limits.timeout_s
    plan = parse_command(ws, command, deadline)
    chunks: list[str] = []
    status = 0
    budget = ws.limits.max_output_chars * 4
    last_name = ""
    for op, cmds in plan:
        if (op == "&&" and status != 0) or (op == "||" and status == 0):
            continue
        stages = [Stage(c.argv, c.stdin_path, c.stdout, c.stderr) for c in cmds]
        r = run_pipeline(ws, stages, max_bytes=budget, timeout=ws.limits.timeout_s, deadline=deadline)
        out = _show(r.stdout) + _show(r.stderr)
        chunks.append(out)
        if r.timed_out:
            raise ToolError(f"command timed out after {ws.limits.timeout_s:g}s; output so far:\n" + "".join(chunks))
        if r.cut:
            chunks.append(f"\n[output cut at {budget} bytes; narrow the command]")
            status = 0
            break
        status = r.returncode or 0
        last_name = os.path.basename(cmds[-1].argv[0])
        if last_name == "git" and "grep" in cmds[-1].argv:
            last_name = "grep"
    text = "".join(chunks)
    if status != 0 and not (status == 1 and last_name in _SEARCHERS):
        raise ToolError(f"exit status {status}\n{text}".rstrip())
    return text if text.strip() else "(no output)"


def _show(data: bytes) -> str:
    if b"\x00" in data:
        return f"[binary output ({len(data)} bytes) not shown]\n"
    return decode(data)
