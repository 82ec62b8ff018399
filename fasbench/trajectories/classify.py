"""One category per coding-agent action: read, search, edit, test or other.

The rubric (issue 4; FastContext's analysis of mini-swe-agent runs):

- read: displays located files: cat, head, tail, ``sed -n``, nl, less, awk printing; SWE-agent
  open, goto, scroll_*; git show/blame.
- search: locates: grep/rg/ag/ack/git grep, find, ls, tree; SWE-agent search_dir, search_file,
  find_file.
- edit: creates/changes/moves/deletes files: ``sed -i``, ``perl -i``, redirection into a file other
  than /dev/null, tee, heredoc into a file, patch, git apply, git checkout/restore of paths, mv, cp,
  rm, mkdir, touch, chmod, python that writes files; SWE-agent edit/create/insert.
- test: runs code: python scripts, ``python -m``, ``python -c``, pytest, tox, runtests, build/test
  tools, java, node.
- delegate: a tool call that hands work to a subagent (Claude Code ``Task``/``Agent``, OpenHands
  ``delegate``); only tool calls, never shell text.
- other: git status/diff/log, pip, echo, cd alone, submit, exit, empty.

A compound action (``&&``, ``||``, ``;``, ``|``, several lines, subshells, loops, command
substitutions) takes the highest of its parts in the order edit > test > search > read > other.

Shell text is parsed by ``fasbench.shell`` (a regex lexer for the regular subset, tree-sitter-bash
for the rest, tolerant fallbacks that never raise); ``Action.parser`` says which path was taken
(``lexer``, ``tree-sitter``, ``fallback``, ``unparsable``: classified by its first word) so that the
analysis can count them, or ``tool`` / ``empty``.
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import NamedTuple

from fasbench import shell
from fasbench.shell import WRITE_OPS, Simple, unwrap

#: The categories by priority, highest first: a call that does several things counts as the highest.
CATEGORIES_BY_PRIORITY = ("edit", "test", "search", "read", "delegate", "other")
#: The same categories in the order the figures and tables show them ("delegate" added where present).
CATEGORIES_PLOT_ORDER = ("read", "search", "edit", "test", "other")
RANK = {c: len(CATEGORIES_BY_PRIORITY) - i for i, c in enumerate(CATEGORIES_BY_PRIORITY)}  # edit 6 … other 1
PARSERS = ("tree-sitter", "lexer", "fallback", "unparsable", "tool", "empty")


class Action(NamedTuple):
    """What one action does.

    category: the rubric's category. parts: the category of each simple command, in order.
    targets: files the action writes, where the command names them. code_writes: code (python -c,
    a python heredoc, a patch without named files) that writes files it does not name plainly.
    created: (path, text) for files written from a heredoc (scripts the agent later runs).
    runs: script paths the action executes (python x.py, bash x.sh, ./x).
    parser: lexer | tree-sitter | fallback | unparsable | tool | empty. unknown: command names the
    rubric does not know (classified other).
    """

    category: str
    parser: str
    parts: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    code_writes: bool = False
    created: tuple[tuple[str, str], ...] = ()
    runs: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()


def top(categories) -> str:
    """The highest category of several (``other`` for none)."""
    best = "other"
    for c in categories:
        if RANK[c] > RANK[best]:
            best = c
    return best


# ------------------------------------------------------------------ command tables

READ = {
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "nl",
    "bat",
    "batcat",
    "view",
    "od",
    "hexdump",
    "xxd",
    "strings",
    "wc",
    "diff",
    "cmp",
    "tac",
    "sort",
    "uniq",
    "cut",
    "column",
    "fold",
    "jq",
    "colordiff",
    "zcat",
    "zless",
    "open",
    "goto",
    "scroll_up",
    "scroll_down",  # SWE-agent
}
SEARCH = {
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "rg",
    "ag",
    "ack",
    "ack-grep",
    "find",
    "fd",
    "fdfind",
    "ls",
    "ll",
    "tree",
    "locate",
    "mlocate",
    "du",
    "stat",
    "file",
    "realpath",
    "readlink",
    "which",
    "whereis",
    "ctags",
    "search_dir",
    "search_file",
    "find_file",  # SWE-agent
}
EDIT = {
    "mv",
    "cp",
    "rm",
    "rmdir",
    "mkdir",
    "touch",
    "chmod",
    "chown",
    "ln",
    "install",
    "truncate",
    "unlink",
    "dos2unix",
    "patch",
    "rsync",
    "unzip",
    "edit",
    "create",
    "insert",
    "append",  # last four: SWE-agent
}
TEST = {
    "pytest",
    "py.test",
    "tox",
    "nox",
    "nosetests",
    "trial",
    "coverage",
    "make",
    "cmake",
    "ctest",
    "ninja",
    "meson",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "node",
    "nodejs",
    "deno",
    "bun",
    "tsc",
    "java",
    "javac",
    "mvn",
    "gradle",
    "gradlew",
    "go",
    "cargo",
    "rustc",
    "gcc",
    "g++",
    "cc",
    "clang",
    "clang++",
    "ruby",
    "rspec",
    "rake",
    "bundle",
    "php",
    "phpunit",
    "sphinx-build",
    "django-admin",
    "mypy",
    "flake8",
    "pylint",
    "ruff",
    "ipython",
    "jupyter",
    "julia",
    "Rscript",
    "dotnet",
    "swift",
    "scala",
    "sbt",
    "lua",
    "runtests",
}
OTHER = {
    "cd",
    "pushd",
    "popd",
    "echo",
    "printf",
    "pwd",
    "export",
    "source",
    ".",
    "set",
    "unset",
    "true",
    "false",
    ":",
    "sleep",
    "pip",
    "pip3",
    "conda",
    "mamba",
    "apt",
    "apt-get",
    "yum",
    "brew",
    "env",
    "whoami",
    "date",
    "clear",
    "exit",
    "history",
    "alias",
    "kill",
    "ps",
    "jobs",
    "wait",
    "trap",
    "yes",
    "seq",
    "tr",
    "test",
    "[",
    "[[",
    "submit",
    "exit_cost",
    "exit_forfeit",
    "exit_context",
    "exit_format",
    "skip",
    "basename",
    "dirname",
    "id",
    "uname",
    "hostname",
    "read",
    "shift",
    "return",
    "local",
    "declare",
    "eval",
    "git",
    "xargs",
}
NULL_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")
GIT_SEARCH = {"grep", "ls-files", "ls-tree"}
GIT_READ = {"show", "blame", "cat-file", "annotate"}
GIT_EDIT = {
    "apply",
    "am",
    "restore",
    "rm",
    "mv",
    "clean",
    "stash",
    "reset",
    "checkout",
    "cherry-pick",
    "revert",
    "merge",
    "rebase",
    "pull",
}

# Commands whose category does not depend on their arguments.
_FIXED = {
    **{n: "other" for n in OTHER - {"git", "xargs", "env"}},
    **{n: "test" for n in TEST},
    **{n: "read" for n in READ},
    **{n: "search" for n in SEARCH - {"find"}},
}
_SED_INPLACE = re.compile(r"-[a-zA-Z]*i|--in-place(?:=|$)")
_SED_SCRIPT_OPT = re.compile(r"-e$|--expression|-f$|-[a-zA-Z]*e$")
_PERL_INPLACE = re.compile(r"-(?![MmIx])[0-9a-zA-Z]*i")
_PERL_LOOP = re.compile(r"-[0-9a-zA-Z]*[np]")
_PY = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")
# open(<one level of parentheses>, 'w' | "a" | 'r+' | mode='wb' …), pathlib writes, file-moving
# calls. Each pattern starts with a literal so that the regex engine can skip ahead quickly.
_CODE_WRITES = [
    re.compile(r"""open\((?:[^()\n]|\([^()\n]*\))*?,\s*(?:mode\s*=\s*)?[bBrRuU]?['"][rbt]*[wax+][rwaxbt+]*['"]"""),
    re.compile(r"\.write_(?:text|bytes)\("),
    re.compile(r"shutil\.(?:copy\w*|move|rmtree)\("),
    re.compile(r"os\.(?:remove|unlink|rename|replace|makedirs|mkdir|rmdir)\("),
    re.compile(r"\.(?:unlink|touch|to_csv)\("),
    re.compile(r"inplace\s*=\s*(?:True|1)"),
]
_DIFF_TARGET = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)


def code_writes(code: str) -> bool:
    """Whether python source writes, moves or deletes files."""
    return any(p.search(code) for p in _CODE_WRITES)


def _is_null(dest: str) -> bool:
    return dest.startswith(NULL_DEVICES) or dest.lstrip("&").isdigit() or dest in ("-", "")


def _nonopts(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-")]


class _Acc:
    __slots__ = ("parts", "targets", "code_writes", "created", "runs", "unknown")

    def __init__(self):
        self.parts: list[str] = []
        self.targets: list[str] = []
        self.code_writes = False
        self.created: list[tuple[str, str]] = []
        self.runs: list[str] = []
        self.unknown: list[str] = []


def _simple(cmd: Simple, acc: _Acc) -> str:
    """Classify one simple command, recording what it writes and runs into ``acc``."""
    writes = [d for op, d in cmd.redirects if op in WRITE_OPS and not _is_null(d)]
    if writes:
        acc.targets.extend(writes)
        if cmd.heredoc is not None:
            acc.created.extend((d, cmd.heredoc) for d in writes)
    words = unwrap(cmd.words)
    cat = _command(words, cmd, acc) if words else "other"
    return "edit" if writes else cat


def _command(words: list[str], cmd: Simple, acc: _Acc) -> str:
    w0 = words[0]
    name = w0.rsplit("/", 1)[-1] if "/" in w0 else w0
    fixed = _FIXED.get(name)
    if fixed is not None and not w0.startswith(("./", "/")):
        return fixed
    args = words[1:]
    if _PY.match(name):
        return _python(args, cmd, acc)
    if name in ("bash", "sh", "zsh", "dash"):
        c = next((i for i, a in enumerate(args) if a[:1] == "-" and a[1:2] != "-" and "c" in a), None)
        if c is not None and c + 1 < len(args):  # bash -c CMD, bash -lc CMD, sh -ec CMD
            sub = analyze(args[c + 1])
        elif cmd.heredoc is not None and not _nonopts(args):
            sub = analyze(cmd.heredoc)
        elif _nonopts(args):
            acc.runs.append(_nonopts(args)[0])
            return "test"
        else:
            return "other"
        acc.targets.extend(sub.targets)
        acc.code_writes |= sub.code_writes
        acc.created.extend(sub.created)
        acc.runs.extend(sub.runs)
        return sub.category
    if name == "git":
        return _git(args, cmd, acc)
    if name == "sed":
        if any(_SED_INPLACE.match(a) for a in args if a[:1] == "-"):
            acc.targets.extend(_sed_files(args))
            return "edit"
        return "read"
    if name == "perl":
        opts = [a for a in args if a[:1] == "-"]
        if any(_PERL_INPLACE.match(a) for a in opts):
            acc.code_writes = True
            acc.targets.extend(a for a in _nonopts(args)[1:])
            return "edit"
        return "read" if any(_PERL_LOOP.match(a) for a in opts) else "test"
    if name in ("awk", "gawk", "mawk"):
        if "inplace" in args:
            acc.targets.extend(_nonopts(args)[1:])
            return "edit"
        return "read"
    if name == "tee":
        files = [a for a in _nonopts(args) if not _is_null(a)]
        acc.targets.extend(files)
        if cmd.heredoc is not None:
            acc.created.extend((f, cmd.heredoc) for f in files)
        return "edit" if files else "other"
    if name == "find":
        for op in ("-exec", "-execdir", "-ok", "-okdir"):
            if op in args:
                i = args.index(op) + 1
                j = i
                while j < len(args) and args[j] not in (";", "\\;", "+"):
                    j += 1
                sub = Simple([a for a in args[i:j] if a != "{}"])
                return top(["search", _simple(sub, acc)])
        if "-delete" in args:
            acc.code_writes = True
            return "edit"
        return "search"
    if name == "patch" or name == "str_replace_editor" or name == "str_replace_based_edit_tool":
        if name != "patch":
            sub = args[0] if args else ""
            if sub == "view":
                return "read"
            acc.targets.extend(_nonopts(args[1:2]))
            return "edit"
        if "--dry-run" in args or "-C" in args:
            return "other"
        acc.targets.extend(_DIFF_TARGET.findall(cmd.heredoc or ""))
        if not cmd.heredoc:
            acc.code_writes = True
        return "edit"
    if name in EDIT:
        files = _nonopts(args)
        if name in ("chmod", "chown"):
            files = files[1:]
        elif name in ("cp", "install", "ln", "rsync"):  # only the destination is written
            files = files[-1:]
        acc.targets.extend(files if name != "edit" else [])
        if name in ("edit", "insert", "append", "unzip", "rsync", "ln", "install"):
            acc.code_writes = acc.code_writes or name in ("unzip", "rsync")
        return "edit"
    if name in SEARCH:
        return "search"
    if name in READ:
        return "read"
    if name in TEST or name.startswith("runtests") or name.endswith((".py", ".sh")) or words[0].startswith(("./", "/")):
        if name.endswith((".py", ".sh")) or words[0].startswith(("./", "/")):
            acc.runs.append(words[0])
        return "test"
    if name in OTHER:
        return "other"
    acc.unknown.append(name)
    return "other"


def _sed_files(args: list[str]) -> list[str]:
    """The file operands of a sed command line (the script is the first operand unless -e/-f gave it)."""
    files, script_given, skip = [], False, False
    for a in args:
        if skip:
            skip = False
        elif a in ("-e", "-f", "--expression", "--file"):
            script_given, skip = True, True
        elif a.startswith(("--expression=", "--file=")) or (a[:1] == "-" and _SED_SCRIPT_OPT.match(a)):
            script_given = True
            skip = a[:1] == "-" and not a.startswith("--") and a.endswith(("e", "f"))
        elif a[:1] != "-":
            files.append(a)
    return files if script_given else files[1:]


def _python(args: list[str], cmd: Simple, acc: _Acc) -> str:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-V", "--version", "-h", "--help"):
            return "other"
        if a == "-m":
            mod = args[i + 1] if i + 1 < len(args) else ""
            return "other" if mod in ("pip", "venv", "ensurepip", "site") else "test"
        if a == "-c" or (a.startswith("-") and not a.startswith("--") and a.endswith("c") and len(a) <= 4):
            code = args[i + 1] if i + 1 < len(args) else ""
            if code_writes(code):
                acc.code_writes = True
                return "edit"
            return "test"
        if a in ("-W", "-X", "-Q"):
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        if a == "-" or a is None:
            break
        acc.runs.append(a)  # a script
        return "test"
    if cmd.heredoc is not None:  # python - <<EOF / python <<EOF
        if code_writes(cmd.heredoc):
            acc.code_writes = True
            return "edit"
        return "test"
    return "test"  # the REPL, or stdin from a pipe/file


_SWE_EDIT_BLOCK = re.compile(r"^(edit|insert|append)\b[^\n]*\n.*\bend_of_(edit|insert|append)\s*$", re.S)


def _git(args: list[str], cmd: Simple, acc: _Acc) -> str:
    a = list(args)
    while a and a[0].startswith("-"):
        opt = a.pop(0)
        if opt in ("-C", "-c") and a:
            a.pop(0)
    if not a:
        return "other"
    sub, rest = a[0], a[1:]
    if sub in GIT_SEARCH:
        return "search"
    if sub in GIT_READ:
        return "read"
    if sub in GIT_EDIT:
        if sub == "checkout" and any(r in ("-b", "-B", "--orphan") for r in rest):
            return "other"
        if sub == "stash" and rest[:1] in (["list"], ["show"]):
            return "other"
        if sub == "apply" and any(r in ("--check", "--stat", "--numstat", "--summary") for r in rest):
            return "other"
        if sub == "reset" and not ("--hard" in rest or "--" in rest):
            return "other"
        if sub == "apply":
            acc.targets.extend(_DIFF_TARGET.findall(cmd.heredoc or ""))
            if not cmd.heredoc:
                acc.code_writes = True
        elif "--" in rest:
            acc.targets.extend(rest[rest.index("--") + 1 :])
        elif sub in ("checkout", "restore", "rm", "mv"):
            acc.targets.extend(_nonopts(rest))
        else:
            acc.code_writes = True
        return "edit"
    return "other"


@functools.lru_cache(maxsize=1 << 16)
def analyze(action: str) -> Action:
    """Classify one shell action (a command line, possibly several lines) and say what it writes."""
    text = (action or "").strip()
    if not text:
        return Action("other", "empty")
    if _SWE_EDIT_BLOCK.match(text):  # SWE-agent's edit/insert block: its body is code, not shell
        return Action("edit", "tool", ("edit",))
    cmds, parser = shell.parse(text)
    if parser == "unparsable":  # classified by its first word
        cmds = [Simple(cmds[0].words[:1])] if cmds else []
    acc = _Acc()
    for c in cmds:
        acc.parts.append(_simple(c, acc))
    return Action(
        top(acc.parts),
        parser,
        tuple(acc.parts),
        tuple(dict.fromkeys(acc.targets)),
        acc.code_writes,
        tuple(acc.created),
        tuple(acc.runs),
        tuple(acc.unknown),
    )


def classify(action: str) -> str:
    """The rubric's category of one shell action."""
    return analyze(action).category


# Tool-call agents (Claude Code, SWE-agent's editor tools, OpenHands …); fasbench's own tool sets are
# asked for the kind of their tools (fasbench.tools.tool_kind).
TOOL_CATEGORIES = {
    "read": {
        "read",
        "read_file",
        "open_file",
        "notebookread",
        "view",
        "cat",
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
    },
    "search": {
        "grep",
        "glob",
        "ls",
        "list_dir",
        "list_directory",
        "find_file",
        "search_dir",
        "search_file",
        "codebase_search",
        "file_search",
        "search",
        "find",
        "list_files",
    },
    "edit": {
        "edit",
        "multiedit",
        "write",
        "notebookedit",
        "create_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "str_replace",
        "insert",
        "create",
        "replace_in_file",
    },
    # a call that hands work to a subagent (Claude Code's Task/Agent, OpenHands' delegate, FastContext's
    # subagent): its own category, never "other"; the analysis counts the subagent's work beside it
    "delegate": {"task", "agent", "delegate", "agentdelegateaction", "subagent", "dispatch_agent"},
    "other": {
        "submit",
        "finish",
        "think",
        "todowrite",
        "todoread",
        "exitplanmode",
        "webfetch",
        "websearch",
        "bashoutput",
        "killshell",
        "killbash",
    },
}
KIND_CATEGORY = {"read": "read", "search": "search", "list": "search", "report": "other"}
# Shell tools of foreign agents (mini-swe-agent v2, SWE-agent, OpenHands, Claude Code's Bash).
SHELL_TOOLS = {
    "bash",
    "shell",
    "execute_bash",
    "run_command",
    "terminal",
    "exec",
    "run",
    "bash_command",
    "run_shell_command",
    "execute_command",
    "cmd",
}
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file")


def analyze_call(name: str, arguments) -> Action:
    """Classify one tool call: shell tools by their command, the others by the tool's name."""
    n = (name or "").strip()
    key = n.lower()
    args = arguments if isinstance(arguments, dict) else {}
    if key in SHELL_TOOLS:
        cmd = args.get("command", args.get("cmd", arguments if isinstance(arguments, str) else ""))
        if isinstance(cmd, list):
            cmd = " ".join(map(shlex.quote, map(str, cmd)))
        return analyze(str(cmd))
    if key in ("str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor"):
        sub = str(args.get("command", ""))
        if sub == "view":
            return Action("read", "tool", ("read",))
        return Action("edit", "tool", ("edit",), tuple(str(args[k]) for k in _PATH_KEYS if k in args))
    for cat, names in TOOL_CATEGORIES.items():
        if key in names:
            targets = tuple(str(args[k]) for k in _PATH_KEYS if k in args) if cat == "edit" else ()
            return Action(cat, "tool", (cat,), targets)
    # Only fasbench's own tool names (and unknown ones) get here, never a shell action.
    # local import: fasbench.tools is heavy to import, which every `fasbench`
    # command would pay through trajectories.cli; only fasbench's own tool names get here
    from fasbench.tools import TOOLSETS, tool_kind

    for toolset in TOOLSETS:
        kind = tool_kind(toolset, n)
        if kind is not None:
            return Action(KIND_CATEGORY[kind], "tool", (KIND_CATEGORY[kind],))
    return Action("other", "tool", ("other",), unknown=(n,))
