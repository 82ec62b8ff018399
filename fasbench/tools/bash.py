"""The read-only ``bash`` tool: a command line is parsed with bashlex, checked against an
allowlist, and executed *without a shell* (argv lists chained with pipes).

What is accepted: simple commands from :data:`ALLOWED`, joined by ``|``, ``|&``, ``;``,
``&&``, ``||``; quoting; unquoted globs (``*.py``, expanded inside the workspace, sorted, left
as is when nothing matches, hidden files only when the pattern names them); redirections
``>/dev/null``, ``2>/dev/null``, ``&>/dev/null``, ``2>&1``, ``1>&2`` and ``< file`` (a file in
the workspace). Everything else is refused with a reason: other redirections, here-documents,
command/process substitution, variables, ``~``, subshells and compound commands, background
``&``, environment assignments, commands not on the allowlist, options that write, execute or
follow symlinks, and path arguments that leave the workspace. Brace expansion is not done
(``{a,b}`` stays literal).

Exit status: a non-zero status of the last command is an error observation, except status 1
of the search commands (grep, rg, git grep), which means "no match".
"""

from __future__ import annotations

import glob as globmod
import os
import re
import shutil
import time

import bashlex

from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.sandbox import Stage, _relative_spelling, decode, is_inside, run_pipeline

# ---------------------------------------------------------------- the allowlist

GIT_SUBCOMMANDS = ("ls-files", "ls-tree", "log", "show", "grep", "diff", "blame", "rev-parse")

ALLOWED = (
    "ls", "cat", "head", "tail", "sed", "grep", "rg", "find", "wc", "sort", "uniq", "cut",
    "nl", "tree", "file", "stat", "du", "echo", "pwd", "basename", "dirname", "tr", "git",
)  # fmt: skip

# Per command: short option letters that are refused, long options refused (exact or
# ``--opt=``), and short options that take a value (the rest of a cluster after them is a value).
_SPEC: dict[str, dict] = {
    "ls": dict(short="L", long=["--dereference"], value="ITw"),
    "cat": dict(),
    "head": dict(value="nc"),
    "tail": dict(short="fF", long=["--follow", "--pid", "--retry"], value="ncs"),
    "grep": dict(short="R", long=["--dereference-recursive"], value="ABCefmdD"),
    "rg": dict(
        short="L",
        long=["--pre", "--pre-glob", "--follow", "--hostname-bin", "--search-zip"],
        value="ABCefgjmMrtTEd",
        shortban_extra="z",
    ),
    "find": dict(),  # checked by _check_find
    "wc": dict(),
    "sort": dict(short="oT", long=["--output", "--temporary-directory", "--compress-program"], value="kStoTy"),
    "uniq": dict(value="fsw"),
    "cut": dict(value="bcdf"),
    "nl": dict(value="bdfhilnsvw"),
    "tree": dict(short="olRH", long=["--fromfile", "--output"], value="LPIoH"),
    "file": dict(short="C", long=["--compile"], value="mfFeP"),
    "stat": dict(value="cf"),
    "du": dict(short="L", long=["--dereference"], value="BdtX"),
    "echo": dict(),
    "pwd": dict(),
    "basename": dict(value="s"),
    "dirname": dict(),
    "tr": dict(),
    "sed": dict(),  # checked by _check_sed
    "git": dict(),  # checked by _check_git
}

_FIND_BANNED = {
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    "-L", "-follow",
}  # fmt: skip

_SEARCHERS = {"grep", "rg"}  # exit status 1 = no match


def _refuse(msg: str):
    raise ToolError(f"command refused: {msg}")


# ---------------------------------------------------------------- option checks

def _check_options(cmd: str, args: list[str]) -> None:
    spec = _SPEC[cmd]
    short_ban = spec.get("short", "") + spec.get("shortban_extra", "")
    long_ban = spec.get("long", [])
    value = spec.get("value", "")
    for a in args:
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            if name in long_ban:
                _refuse(f"option {name} of {cmd} is not allowed (it writes, executes or follows symlinks)")
        elif a.startswith("-") and len(a) > 1 and not a[1:].lstrip("-").isdigit():
            for ch in a[1:]:
                if ch in short_ban:
                    _refuse(f"option -{ch} of {cmd} is not allowed (it writes, executes or follows symlinks)")
                if ch in value:
                    break
    if cmd == "uniq":
        positional, skip = [], False
        for a in args:
            if skip:
                skip = False
            elif a.startswith("-") and len(a) > 1:
                skip = a[-1] in value and len(a) == 2
            else:
                positional.append(a)
        if len(positional) > 1:
            _refuse("uniq with an OUTPUT file argument is not allowed")


_ADDR = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*)"
_SED_CMD = (
    rf"(?:{_ADDR}(?:\s*,\s*(?:{_ADDR}|[+~]\d+))?)?\s*!?\s*"
    r"(?:[pP=lqQdDnNgGhHxz]|s/(?:[^/\\\n]|\\.)*/(?:[^/\\\n]|\\.)*/[gpiI0-9]*|[{}])?"
)
_SED_SCRIPT = re.compile(rf"\s*{_SED_CMD}(?:\s*[;\n]\s*{_SED_CMD})*\s*;?\s*", re.S)


def _check_sed(args: list[str]) -> None:
    scripts, files, i = [], [], 0
    flags_ok = {"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate",
                "-u", "--unbuffered", "-z", "--null-data", "--posix", "--debug", "--sandbox"}  # fmt: skip
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression"):
            if i + 1 >= len(args):
                _refuse("sed -e needs a script")
            scripts.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a.startswith("-e") and len(a) > 2:
            scripts.append(a[2:])
        elif a.startswith("-") and len(a) > 1:
            if a in flags_ok or (re.fullmatch(r"-[nErsuz]+", a) is not None):
                pass
            elif a.startswith("-i") or a.startswith("--in-place"):
                _refuse("sed -i (in-place editing) is not allowed")
            elif a in ("-f", "--file") or a.startswith("--file="):
                _refuse("sed -f (a script file) is not allowed; give the script inline")
            else:
                _refuse(f"sed option {a} is not allowed")
        else:
            files.append(a)
        i += 1
    if not scripts:
        if not files:
            _refuse("sed needs a script")
        scripts.append(files.pop(0))
    for s in scripts:
        if not _SED_SCRIPT.fullmatch(s):
            _refuse(
                f"sed script {s!r} is not allowed: only printing commands (p, =, l, q, d, n, "
                "addresses and s/x/y/ with flags g, p, i) are accepted; no w, W, e, r or R"
            )


def _check_find(args: list[str]) -> None:
    for a in args:
        if a in _FIND_BANNED or a.startswith("-fprint"):
            _refuse(f"find {a} is not allowed (it writes, deletes, executes or follows symlinks)")


def _check_git(args: list[str]) -> list[str]:
    """Checked git argv (without 'git'); adds flags that keep diff drivers from running."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in ("--no-pager", "-P"):
            _refuse(f"git option {args[i]} is not allowed before the subcommand (no -c, -C, --git-dir, …)")
        i += 1
    if i >= len(args):
        _refuse("git needs a subcommand")
    sub, rest = args[i], args[i + 1:]
    if sub not in GIT_SUBCOMMANDS:
        _refuse(f"git {sub} is not allowed; read-only subcommands: {', '.join(GIT_SUBCOMMANDS)}")
    for a in rest:
        name = a.split("=", 1)[0]
        if name in ("--output", "--ext-diff", "--open-files-in-pager", "--textconv", "--exec", "--upload-pack"):
            _refuse(f"git {sub} {name} is not allowed")
        if sub == "grep" and (a == "-O" or (a.startswith("-O") and not a.startswith("--"))):
            _refuse("git grep -O (open files in a pager) is not allowed")
    extra = {"log": ["--no-ext-diff", "--no-textconv"], "show": ["--no-ext-diff", "--no-textconv"],
             "diff": ["--no-ext-diff", "--no-textconv"], "grep": ["--no-textconv"],
             "blame": ["--no-textconv"]}.get(sub, [])  # fmt: skip
    return ["--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", sub, *extra, *rest]


# ---------------------------------------------------------------- paths in arguments

def _check_path_arg(ws: Workspace, a: str) -> str:
    """``a`` itself (or rewritten to the root path when it is an absolute workspace spelling);
    ToolError when it names something outside the workspace."""
    if "\x00" in a:
        _refuse("NUL character in an argument")
    cands = [a]
    if a.startswith("--") and "=" in a:
        cands = [a.split("=", 1)[1]]
    elif a.startswith("-") and not a.startswith("--") and len(a) > 2:
        cands = [a[2:]]
    elif a.startswith("-"):
        return a
    root = ws.root
    for c in cands:
        if not c:
            continue
        if c.startswith("/"):
            if is_inside(root, c) or c.startswith(str(root) + "/"):
                real = os.path.realpath(c)
                if not is_inside(root, real):
                    _refuse(f"{c!r} leads outside the workspace")
                continue
            mapped = root / _relative_spelling(root, c)
            if os.path.lexists(mapped):
                if not is_inside(root, os.path.realpath(mapped)):
                    _refuse(f"{c!r} leads outside the workspace")
                if c is a:
                    return str(mapped)
                continue
            if os.path.lexists(c) or ".." in c.split("/"):
                _refuse(f"{c!r} is outside the workspace; paths are relative to the repository root")
            continue
        parts = c.split("/")
        if ".." in parts or os.path.lexists(root / c):
            if not is_inside(root, os.path.realpath(root / c)):
                _refuse(f"{c!r} leads outside the workspace ('..' and symlinks may not leave it)")
    return a


def _expand_glob(ws: Workspace, word: str) -> list[str]:
    pat = word
    absolute = pat.startswith("/")
    if absolute:
        pat = _relative_spelling(ws.root, pat)
    hidden = any(part.startswith(".") for part in pat.split("/"))
    hits = sorted(globmod.glob(pat, root_dir=ws.root, include_hidden=hidden))
    if not hits:
        return [word]
    out = []
    for h in hits:
        if not is_inside(ws.root, os.path.realpath(ws.root / h)):
            _refuse(f"glob {word!r} matches {h!r}, which leads outside the workspace")
        out.append(str(ws.root / h) if absolute else h)
    return out


# ---------------------------------------------------------------- parsing

class _Cmd:
    def __init__(self, argv, stdin_path=None, stdout="out", stderr="err"):
        self.argv, self.stdin_path, self.stdout, self.stderr = argv, stdin_path, stdout, stderr


def _words(ws: Workspace, command: str, node) -> tuple[list[str], dict]:
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
            raw = command[part.pos[0]:part.pos[1]]
            if any(ch in raw for ch in "*?[") and not any(q in raw for q in "'\"\\") and argv:
                argv.extend(_expand_glob(ws, part.word))
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
        from fasbench.tools.sandbox import resolve

        return resolve(ws, target, kind="file")
    if t in ("<<", "<<-", "<<<"):
        _refuse("here-documents and here-strings are not supported")
    _refuse(
        f"redirection {t}{' ' + target if target else ''} is not allowed; output may only go to "
        "/dev/null (>/dev/null, 2>/dev/null, 2>&1)"
    )


def _pipeline(ws: Workspace, command: str, node) -> list[_Cmd]:
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
        argv, io = _words(ws, command, n)
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
        _refuse(
            f"{name!r} is not an allowed command; allowed (read-only): {', '.join(ALLOWED)}"
        )
    args = [_check_path_arg(ws, a) for a in args]
    if name == "sed":
        _check_sed(args)
        args = ["--sandbox", *args]  # GNU sed itself then refuses e, w and r (defence in depth)
    elif name == "find":
        _check_find(args)
    elif name == "git":
        args = _check_git(args)
    else:
        _check_options(name, args)
    if name == "rg":
        from fasbench.tools.rg import ignore_flags, rg_binary

        return [rg_binary(), "--no-config", *ignore_flags(ws.root), *args]  # confined like the tools' own rg
    exe = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
    if exe is None:
        raise ToolError(f"{name} is not installed on this machine")
    return [exe, *args]


def parse_command(ws: Workspace, command: str) -> list[tuple[str | None, list[_Cmd]]]:
    """The checked plan of a command line: [(operator before it, pipeline), ...]; ToolError
    with the reason when any part is refused."""
    if not command.strip():
        _refuse("empty command")
    if "\x00" in command:
        _refuse("NUL character in the command")
    try:
        trees = bashlex.parse(command)
    except Exception as e:  # bashlex raises ParsingError and NotImplementedError
        msg = str(e) or type(e).__name__
        raise ToolError(f"command refused: could not parse it ({msg}); use simple read-only commands and pipes")
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
                    plan.append((op, _pipeline(ws, command, part)))
        else:
            plan.append((";" if plan else None, _pipeline(ws, command, tree)))
    if len(plan) > 16 or sum(len(p) for _, p in plan) > 16:
        _refuse("too many commands in one call (at most 16)")
    return plan


def run_bash(ws: Workspace, command: str) -> str:
    """Check and run a read-only command line; the observation text (stdout, then stderr)."""
    plan = parse_command(ws, command)
    deadline = time.monotonic() + ws.limits.timeout_s
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
