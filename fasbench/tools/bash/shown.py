"""What one read-only bash call showed (the bash tool's part of :mod:`fasbench.tools.observed`).

A bash call's output is the concatenated stdout/stderr of its commands, so what it showed can be
said only where the command line tells how to read it. A single pipeline is read by its first
command, through filters that keep the kind of its lines:

- **paths**: ``find``, ``rg --files``, ``git ls-files``, ``grep -l``/``rg -l`` (files with matches),
  ``ls`` of one directory (short format) — one path a line;
- **hits**: ``grep``/``rg``/``git grep`` with line numbers (``-n``) — ``path:N:text`` lines, or
  ``N:text`` when one file is searched without ``-H``; context lines (``path-N-text``) are ranges;
- **ranges**: ``cat``/``head`` of one file (lines ``1..k``), ``sed -n 'A,Bp'`` / ``sed -n Ap`` of one
  file (lines ``A..A+k-1``), ``cat -n`` (numbered lines);

followed by any of ``grep`` (without ``-n``/``-c``), ``sort``, ``uniq``, ``head`` (and ``tail`` for
paths and hits). Anything else (several commands joined by ``;``/``&&``/``||``, ``wc``, ``tail`` of
a file, ``git log``...) gives an empty record: nothing is claimed that the text does not say.
Option clusters are read letter by letter (``-rn`` has ``n``), long options by name.
"""

from __future__ import annotations

import os
import re
import shlex

from fasbench.tools.observed import Seen, norm

_FILTERS = {"grep", "sort", "uniq", "head", "tail", "cut"}
_SEP = {";", "&&", "||", "&", "\n"}
_HIT = re.compile(r"^(?P<path>.+?):(?P<n>\d+):(?P<text>.*)$")
_LINE_HIT = re.compile(r"^(?P<n>\d+):(?P<text>.*)$")
_CONTEXT = re.compile(r"^(?P<path>.+?)-(?P<n>\d+)-(?P<text>.*)$")  # `path-N-text` (grep -C)
_LINE_CONTEXT = re.compile(r"^(?P<n>\d+)-(?P<text>.*)$")
_CAT_N = re.compile(r"^\s*(?P<n>\d+)\t(?P<text>.*)$")
_SED_RANGE = re.compile(r"^(?P<a>\d+)(?:,(?P<b>\d+|\$))?p$")


def _pipelines(command: str) -> list[list[list[str]]] | None:
    """Command line → [pipeline → [argv]]; None when it cannot be split."""
    try:
        lex = shlex.shlex(command, posix=True, punctuation_chars="|&;")
        lex.whitespace_split = True
        words = list(lex)
    except ValueError:
        return None
    out: list[list[list[str]]] = [[[]]]
    for w in words:
        if w in _SEP:
            out.append([[]])
        elif w in ("|", "|&"):
            out[-1].append([])
        elif w.startswith(("<", ">", "2>", "1>")) or w in ("2>&1", "1>&2", "&>/dev/null"):
            continue
        else:
            out[-1][-1].append(w)
    out = [[argv for argv in p if argv] for p in out]
    return [p for p in out if p]


_TAKES = {  # options that take the next word as their value, per command
    "grep": {"-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count", "--include", "--exclude"},
    "rg": {
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-g",
        "-t",
        "-T",
        "-M",
        "--regexp",
        "--glob",
        "--type",
        "--type-not",
        "--max-count",
        "--max-columns",
    },
    "git": {"-e", "-C"},
    "head": {"-n", "-c", "--lines", "--bytes"},
    "tail": {"-n", "-c", "--lines", "--bytes"},
    "sed": {"-e", "--expression"},
    "cut": {"-d", "-f", "-c", "-b"},
    "sort": {"-k", "-t"},
}


def _split(argv: list[str]) -> tuple[set[str], list[str]]:
    """(option names: short letters and long names, operands); ``--`` ends the options; the
    values of the options in ``_TAKES`` are skipped. ``find``'s primaries are its options."""
    name = os.path.basename(argv[0])
    takes = _TAKES.get(name, set())
    opts: set[str] = set()
    operands: list[str] = []
    args = iter(argv[1:])
    done = False
    for a in args:
        if done or a == "-" or not a.startswith("-"):
            operands.append(a)
        elif a == "--":
            done = True
        elif a.startswith("--") or name == "find":
            opt = a.split("=", 1)[0]
            opts.add(opt)
            if "=" not in a and (opt in takes or name == "find"):
                next(args, None)
        else:
            letters = a[1:]
            for k, c in enumerate(letters):
                if not c.isalpha():
                    break
                opts.add("-" + c)
                if "-" + c in takes:
                    if k == len(letters) - 1:
                        next(args, None)  # the value is the next word (else it is attached)
                    break
    return opts, operands


def _source(argv: list[str]) -> tuple[str, list[str]]:
    """(what the first command prints: paths | hits | view | "", its file operands)."""
    name = os.path.basename(argv[0])
    opts, operands = _split(argv)
    if name == "git":
        sub = operands[0] if operands else ""
        if sub == "ls-files":
            return "paths", []
        if sub == "grep" and opts & {"-n", "--line-number"}:
            return "hits", []
        return "", []
    if name == "find":
        return "paths", []
    if name == "ls" and not opts & {"-l", "-R", "-d", "-s", "-i", "-g", "-o", "-C", "-m", "-x"} and len(operands) <= 1:
        return "ls", operands
    if name in ("grep", "rg", "egrep", "fgrep"):
        if name == "rg" and "--files" in opts:
            return "paths", []
        if opts & {"-l", "--files-with-matches"}:
            return "paths", []
        if opts & {"-c", "--count", "--count-matches", "-L", "--files-without-match", "-o", "--only-matching"}:
            return "", []
        if opts & {"-n", "--line-number"}:
            files = operands[1:] if not opts & {"-e", "--regexp", "-f"} else operands
            return "hits", files
        return "", []
    if name in ("cat", "head", "sed") and len(operands) == (2 if name == "sed" else 1):
        if name == "cat" and opts - {"-n", "--number"}:
            return "", []
        return "view", operands
    return "", []


def bash_seen(command: str, text: str) -> Seen:
    """What the output ``text`` of the bash call ``command`` showed (see the module doc)."""
    seen = Seen()
    plan = _pipelines(command)
    if not plan or len(plan) != 1 or text == "(no output)":
        return seen
    stages = plan[0]
    kind, files = _source(stages[0])
    for f in stages[1:]:
        name = os.path.basename(f[0])
        fo, _ = _split(f)
        if name not in _FILTERS or (name == "grep" and fo & {"-n", "-c", "--count", "-o"}):
            return seen
        if kind == "view" and name != "head":
            return seen
    rows = [r for r in text.split("\n") if r and not r.startswith("[")]
    argv = stages[0]
    name = os.path.basename(argv[0])
    if kind == "paths":
        seen.listed(norm(r) for r in rows if not r.startswith(f"{name}: "))
    elif kind == "ls":
        base = norm(files[0]) if files else "."
        seen.listed(r if base == "." else f"{base}/{r}" for r in rows if not r.startswith("ls: "))
    elif kind == "hits":
        # one file searched prints `N:text`; a directory (or -H) prints `path:N:text` under it
        op = norm(files[0]) if len(files) == 1 else None
        one = (
            op is not None
            and not _split(argv)[0] & {"-H", "--with-filename"}
            and not any(
                (m := _HIT.match(r)) and (op == "." or (norm(m.group("path")) + "/").startswith(op.rstrip("/") + "/"))
                for r in rows
            )
        )
        context = []
        for r in rows:
            m = (_LINE_HIT if one else _HIT).match(r)
            if m:
                seen.hit(op if one else norm(m.group("path")), int(m.group("n")), m.group("text"))
            elif c := (_LINE_CONTEXT if one else _CONTEXT).match(r):
                context.append(c)
        matched = {p for p, _ in seen.shown.hits}
        for c in context:  # context lines (-A/-B/-C): content shown, not matches; of a file that matched
            path = op if one else norm(c.group("path"))
            if path in matched:
                seen.view(path, [(int(c.group("n")), c.group("text"))])
    elif kind == "view":
        opts, operands = _split(argv)
        path = norm(operands[-1])
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if name == "cat" and opts & {"-n", "--number"}:
            got = [(int(m.group("n")), m.group("text")) for m in map(_CAT_N.match, lines) if m]
        elif name == "sed":
            m = _SED_RANGE.match(operands[0].strip())
            if not m or opts - {"-n", "--quiet", "--silent"} or not opts:
                return seen
            got = [(int(m.group("a")) + i, t) for i, t in enumerate(lines)]
        else:
            got = [(i + 1, t) for i, t in enumerate(lines)]
        seen.view(path, got)
    return seen
