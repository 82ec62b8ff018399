"""Command-line options parsed the way the program itself parses them, against an allowlist.

A command's options are described by a small spec string (see :func:`spec`). :func:`parse`
reads an argument list like GNU ``getopt_long`` (and git's parse-options) does:

- a long option may be written as any unambiguous prefix (``--outp`` is ``--output``) when the
  program accepts abbreviations (GNU tools, git; not ripgrep or find); the prefix is expanded
  against the program's *allowed* options, and an exact name always wins;
- ``--name=value`` and ``--name value`` for options that take a value; an optional value only
  with ``=``;
- short options cluster (``-inr``); the rest of a cluster after an option that takes a value
  is the value (``-zm/path`` is ``-z -m /path``, ``-iO'cmd'`` is ``-i -O cmd``), else the next
  argument is;
- ``--`` ends the options; ``-`` alone is an operand; options and operands may be mixed
  (GNU argument permutation).

Anything not in the allowlist is refused, so an option the checker does not know can never
reach the program. The checked command is re-emitted in one canonical spelling
(:func:`emit`): every option by its full name with its value attached, then ``--`` and the
operands, so that what runs is exactly what was checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fasbench.tools.base import ToolError

FLAG, VALUE, PATH, OPTIONAL = "flag", "value", "path", "optional"


@dataclass(frozen=True)
class Opt:
    names: tuple[str, ...]  # short letters and long names (without dashes)
    kind: str  # FLAG, VALUE (free text), PATH (a file read by the program), OPTIONAL (long: =value)

    @property
    def canonical(self) -> str:
        longs = [n for n in self.names if len(n) > 1]
        return "--" + longs[0] if longs else "-" + self.names[0]


@dataclass
class Spec:
    """The allowed options of one program and how it parses them."""

    opts: list[Opt]
    abbrev: bool = True  # long options may be abbreviated to a unique prefix (getopt_long, git)
    refused: dict[str, str] = field(default_factory=dict)  # known option -> why it is refused
    short: dict[str, Opt] = field(init=False)
    long: dict[str, Opt] = field(init=False)

    def __post_init__(self):
        self.short = {n: o for o in self.opts for n in o.names if len(n) == 1}
        self.long = {n: o for o in self.opts for n in o.names if len(n) > 1}


def spec(text: str, *, abbrev: bool = True, refused: dict[str, str] | None = None) -> Spec:
    """A :class:`Spec` from entries like ``n|lines:`` separated by whitespace: names joined by
    ``|`` (one letter = short option), then ``:`` (takes a value), ``:p`` (takes a path the
    program reads), ``::`` (optional value, ``--name=value`` only) or nothing (a flag)."""
    opts = []
    for entry in text.split():
        kind = FLAG
        for suffix, k in (("::", OPTIONAL), (":p", PATH), (":", VALUE)):
            if entry.endswith(suffix):
                entry, kind = entry[: -len(suffix)], k
                break
        opts.append(Opt(tuple(entry.split("|")), kind))
    return Spec(opts, abbrev=abbrev, refused=refused or {})


def _refuse(msg: str):
    raise ToolError(f"command refused: {msg}")


def _long(cmd: str, sp: Spec, name: str) -> Opt:
    if name in sp.long:
        return sp.long[name]
    if sp.abbrev:
        hits = {o for n, o in sp.long.items() if n.startswith(name)}
        known = [n for n in sp.refused if len(n) > 1 and n.startswith(name) and n not in sp.long]
        if len(hits) == 1 and not known:
            return hits.pop()
        if len(hits) > 1 or (hits and known):
            cands = sorted({n for n, o in sp.long.items() if n.startswith(name)} | set(known))
            _refuse(f"{cmd} --{name} is ambiguous ({', '.join('--' + c for c in cands)}); write it in full")
        if len(known) == 1:
            name = known[0]
    why = sp.refused.get(name)
    if why:
        _refuse(f"{cmd} --{name} is not allowed ({why})")
    _refuse(f"{cmd} --{name} is not allowed here (unknown, or it writes, executes or reads other files)")


def _short(cmd: str, sp: Spec, ch: str) -> Opt:
    o = sp.short.get(ch)
    if o is None:
        why = sp.refused.get(ch)
        _refuse(
            f"{cmd} -{ch} is not allowed"
            + (f" ({why})" if why else " here (unknown, or it writes, executes or reads other files)")
        )
    return o


def parse(cmd: str, sp: Spec, args: list[str]) -> tuple[list[tuple[Opt, str | None]], list[str], int | None]:
    """(options with their values, operands, index in operands where an explicit ``--`` stood
    or None) of ``args``; ToolError for any option that is not allowed or lacks its value."""
    opts: list[tuple[Opt, str | None]] = []
    operands: list[str] = []
    dashdash = None
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if dashdash is not None or a == "-" or not a.startswith("-"):
            operands.append(a)
            continue
        if a == "--":
            dashdash = len(operands)
            continue
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            o = _long(cmd, sp, name)
            if o.kind == FLAG:
                if eq:
                    _refuse(f"option {o.canonical} of {cmd} takes no value")
                opts.append((o, None))
            elif o.kind == OPTIONAL:
                opts.append((o, val if eq else None))
            else:
                if not eq:
                    if i >= len(args):
                        _refuse(f"option {o.canonical} of {cmd} needs a value")
                    val, i = args[i], i + 1
                opts.append((o, val))
            continue
        j = 1
        while j < len(a):
            o = _short(cmd, sp, a[j])
            j += 1
            if o.kind in (FLAG, OPTIONAL):
                opts.append((o, None) if o.kind == FLAG or j == len(a) else (o, a[j:]))
                if o.kind == OPTIONAL:
                    break
                continue
            val = a[j:]
            if not val:
                if i >= len(args):
                    _refuse(f"option -{a[j - 1]} of {cmd} needs a value")
                val, i = args[i], i + 1
            opts.append((o, val))
            break
    return opts, operands, dashdash


def emit(opts: list[tuple[Opt, str | None]]) -> list[str]:
    """The options in canonical spelling: ``--name``, ``--name=value``; an option with no long
    name as ``-x value`` (a required value: the program takes the next argument whatever it
    starts with), or ``-xvalue`` (an optional value, which only an attached one can be: apart,
    ``git blame -M--contents=F`` would run as ``-M --contents=F``)."""
    out: list[str] = []
    for o, v in opts:
        c = o.canonical
        if v is None:
            out.append(c)
        elif c.startswith("--"):
            out.append(f"{c}={v}")
        elif o.kind == OPTIONAL:
            out.append(c + v)
        else:
            out += [c, v]
    return out
