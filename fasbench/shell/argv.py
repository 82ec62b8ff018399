"""Reading one command's argv: the command behind wrappers, options and operands."""

from __future__ import annotations

import re

# Wrappers that run the command after them (their own options skipped).
WRAPPERS = {"sudo", "time", "nohup", "nice", "stdbuf", "command", "exec", "builtin", "timeout", "env", "xvfb-run"}
RUNNERS = ("uv", "poetry", "pipenv", "hatch", "pdm", "conda")  # ``uv run CMD``
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_XARGS_VALUE = ("-I", "-n", "-P", "-d", "-L", "-a", "-s", "-E")


def unwrap(words: list[str]) -> list[str]:
    """The words of the command that actually runs: leading ``VAR=value`` assignments, wrappers
    (``sudo``, ``timeout 10``, ``nice -n 5``, ``env``, ``xargs -n1``, ``uv run`` …) and their options
    dropped."""
    w = list(words)
    while w:
        head = w[0]
        if "=" in head and _ASSIGNMENT.match(head):  # VAR=value cmd
            w = w[1:]
        elif head in WRAPPERS:
            w = w[1:]
            if head == "timeout":
                while w and w[0].startswith("-"):
                    w = w[2:] if w[0] in ("-s", "-k", "--signal", "--kill-after") else w[1:]
                w = w[1:]  # the duration
            elif head == "nice" and w[:1] == ["-n"]:
                w = w[2:]
            else:
                while w and w[0].startswith("-"):
                    w = w[1:]
        elif head in RUNNERS and len(w) > 1 and w[1] == "run":
            w = w[2:]
            while w and w[0].startswith("-"):
                w = w[1:]
        elif head == "xargs":
            w = w[1:]
            while w and w[0].startswith("-"):
                opt = w.pop(0)
                if opt in _XARGS_VALUE and w:
                    w.pop(0)
        else:
            break
    return w


def options(words: list[str], with_value: set[str]) -> tuple[dict[str, str | bool], list[str]]:
    """Options (``{flag: value or True}``) and operands of argv ``words`` (program name excluded).
    ``--x=v``, bundled ``-rn`` and ``-20`` (as ``-n 20``) are understood; flags in ``with_value``
    take the next word; ``--`` ends the options."""
    opts: dict[str, str | bool] = {}
    ops: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "--":
            ops += words[i + 1 :]
            break
        if w.startswith("--") and "=" in w:
            k, v = w.split("=", 1)
            opts[k] = v
        elif w in with_value and i + 1 < len(words):
            opts[w] = words[i + 1]
            i += 1
        elif w.startswith("-") and len(w) > 1 and not w[1:].isdigit():
            if w.startswith("--"):
                opts[w] = True
            else:
                for ch in w[1:]:
                    opts["-" + ch] = True
        elif re.fullmatch(r"-\d+", w):
            opts["-n"] = w[1:]
        else:
            ops.append(w)
        i += 1
    return opts, ops


# Options that take a value, per display/search program.
VALUE_OPTS = {
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "grep": {"-e", "-f", "-m", "-A", "-B", "-C", "--include", "--exclude"},
    "rg": {"-e", "-g", "-t", "-m", "-A", "-B", "-C"},
    "awk": {"-F", "-v"},
    "sed": {"-e", "-f"},
    "nl": {"-b", "-s", "-w"},
}
SCRIPT_FIRST = ("sed", "awk", "grep", "egrep", "rg")  # the first operand is a script or pattern


def operands(words: list[str]) -> list[str]:
    """File operands of a display/search command line ``words`` (program name first): options, their
    values and the script/pattern of sed/awk/grep/rg skipped."""
    if not words:
        return []
    name = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    value_opts = VALUE_OPTS.get(name, set())
    ops, skip, script_taken = [], False, name not in SCRIPT_FIRST
    if any(a in ("-e", "-f") or a.startswith("--regexp") for a in args):
        script_taken = True
    for a in args:
        if skip:
            skip = False
            continue
        if a in value_opts:
            skip = True
            continue
        if a.startswith("-") and a != "-":
            continue
        if not script_taken:
            script_taken = True
            continue
        ops.append(a)
    return ops
