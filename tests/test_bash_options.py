"""Generated: every allowed command x every allowed option x every way of spelling it (full
long name, shortest unique abbreviation, ``=`` and separate values, short alone, in a cluster,
with an attached and a separate value) is checked for containment.

The value given to every value-taking option is the path of a FIFO outside the workspace: a
program that opened it to read or write would block until the call's timeout, so an option that
reads or writes a file named in its value, wrongly allowed as a plain value, shows up as a
timeout. File-valued options (``grep -f``) must refuse it as outside the workspace. These tests
check the first wall alone: the OS confinement is turned off for them."""

from __future__ import annotations

import os

import pytest
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import ToolLimits, make_toolset
from fasbench.tools.base import ToolError
from fasbench.tools.bash import pipeline as sandbox
from fasbench.tools.bash.commands import FIND_PRIMARIES, GIT_SPECS, OPERANDS, SPECS
from fasbench.tools.bash.options import FLAG, OPTIONAL, PATH, Spec, _long, parse
from fasbench.tools.bash.readonly import parse_command


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("options")
    make_repo(b)
    os.mkfifo(b / "outside" / "canary.fifo")
    return b


@pytest.fixture()
def first_wall_only(monkeypatch):
    monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})


def _unique_prefix(sp: Spec, name: str) -> str:
    known = set(sp.long) | {n for n in sp.refused if len(n) > 1}
    for k in range(1, len(name) + 1):
        p = name[:k]
        if [n for n in known if n.startswith(p)] == [name] or p == name:
            return p
    return name  # pragma: no cover


def spellings(sp: Spec, value: str) -> list[tuple[list[str], object, str | None]]:
    """(argv, the option, the value the program must see) for every spelling of every option."""
    flag = next((o.names[0] for o in sp.opts if o.kind == FLAG and len(o.names[0]) == 1), None)
    out = []
    for o in sp.opts:
        longs = [n for n in o.names if len(n) > 1]
        shorts = [n for n in o.names if len(n) == 1]
        for n in longs:
            forms = {n, _unique_prefix(sp, n)} if sp.abbrev else {n}
            for f in sorted(forms):
                if o.kind == FLAG:
                    out.append(([f"--{f}"], o, None))
                elif o.kind == OPTIONAL:
                    out += [([f"--{f}"], o, None), ([f"--{f}={value}"], o, value)]
                else:
                    out += [([f"--{f}={value}"], o, value), ([f"--{f}", value], o, value)]
        for s in shorts:
            other = flag if flag and flag != s else None
            if o.kind == FLAG:
                out.append(([f"-{s}"], o, None))
                if other:
                    out += [([f"-{other}{s}"], o, None), ([f"-{s}{other}"], o, None)]
            elif o.kind == OPTIONAL:
                out += [([f"-{s}"], o, None), ([f"-{s}{value}"], o, value)]
            else:
                out += [([f"-{s}{value}"], o, value), ([f"-{s}", value], o, value)]
                if other:
                    out += [([f"-{other}{s}{value}"], o, value), ([f"-{other}{s}", value], o, value)]
    return out


COMMANDS = [(name, SPECS[name]) for name in sorted(SPECS)] + [(f"git {s}", sp) for s, sp in sorted(GIT_SPECS.items())]


@pytest.mark.parametrize("name, sp", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_every_spelling_parses_to_its_option(name, sp):
    for argv, o, v in spellings(sp, "/x/value"):
        opts, operands, _ = parse(name, sp, argv)
        got = [(p, w) for p, w in opts if p is o]
        assert got and got[-1][1] == v and not operands, (argv, opts, operands)


@pytest.mark.parametrize("name, sp", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_abbreviations_expand_like_getopt_long(name, sp):
    """Every prefix of every known long option (allowed or refused): an exact name, or (where
    the program accepts abbreviations) a prefix of exactly one known option, resolves to that
    option when it is allowed; anything else is refused (ambiguous, not allowed, unknown)."""
    known = set(sp.long) | {n for n in sp.refused if len(n) > 1}
    for full in sorted(known):
        for k in range(1, len(full) + 1):
            p = full[:k]
            hits = {sp.long.get(n, n) for n in known if n.startswith(p)}  # aliases are one option
            target = p if p in known else None
            if target is None and sp.abbrev and len(hits) == 1:
                target = next(n for n in known if n.startswith(p))
            if target is not None and target in sp.long:
                assert _long(name, sp, p) is sp.long[target], (p, target)
            else:
                with pytest.raises(ToolError):
                    _long(name, sp, p)


def _operands(cmd: str) -> str:
    role = OPERANDS.get(cmd.split()[0], "paths")
    if cmd.startswith("git"):
        return {"git grep": "Login", "git blame": "README.md", "git ls-tree": "HEAD"}.get(cmd, "")
    return {"paths": "README.md", "pattern+paths": "login README.md", "script+paths": "p README.md",
            "strings": "a", "none": "", "input": "README.md"}[role]  # fmt: skip


@pytest.mark.parametrize("name, sp", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_no_option_spelling_reaches_a_file_outside(base, first_wall_only, name, sp):
    ts = make_toolset("relace", base / "repo", ToolLimits(timeout_s=3))
    fifo = str(base / "outside" / "canary.fifo")
    before = snapshot(base)
    bad = []
    # every spelling parses to (option, value) (test above) and is re-emitted canonically, so one
    # spelling with a value per option shows what the program does with the value
    seen = set()
    for argv, o, v in spellings(sp, fifo):
        if v is None or o in seen:
            continue
        seen.add(o)
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
        command = f"{name} {quoted} {_operands(name)}".strip()
        out, err = ts.call("bash", {"command": command})
        if o.kind == PATH and v is not None:
            if not (err and "outside the workspace" in out):
                bad.append((command, "file option not contained", out[:200]))
        elif "timed out" in out or SECRET in out:
            bad.append((command, "opened the value as a file", out[:200]))
    assert not bad, "\n".join(map(str, bad))
    assert snapshot(base) == before


def test_file_valued_options_accept_files_inside(base):
    ts = make_toolset("relace", base / "repo")
    for command in ["grep -f README.md README.md", "grep --file=README.md README.md", "rg -f README.md README.md",
                    "grep -cfREADME.md README.md"]:  # fmt: skip
        out, err = ts.call("bash", {"command": command})
        assert not err, (command, out)
    for command in [
        "grep -f link_out_file README.md",
        "grep -f ../outside/secret.txt README.md",
        "grep -f - README.md",
    ]:
        out, err = ts.call("bash", {"command": command})
        assert err and SECRET not in out


def test_find_primaries_with_outside_values(base, first_wall_only):
    ts = make_toolset("relace", base / "repo", ToolLimits(timeout_s=3))
    fifo = str(base / "outside" / "canary.fifo")
    before = snapshot(base)
    for prim, arity in FIND_PRIMARIES.items():
        if prim in ("(", ")", "!", ","):
            continue
        command = f"find src {prim} '{fifo}'" if arity else f"find src {prim}"
        out, err = ts.call("bash", {"command": command})
        if arity == "p":
            assert err and "outside the workspace" in out, (command, out)
        assert "timed out" not in out and SECRET not in out, (command, out)
    assert snapshot(base) == before


def test_checked_argv_is_canonical(base):
    """What runs is what was checked: full names, values attached, -- before the operands."""
    ws = make_toolset("relace", base / "repo").ws
    ((_, [cmd]),) = parse_command(ws, "grep -inm1 --col=never -e x -- -y README.md")
    assert cmd.argv[1:] == ["--ignore-case", "--line-number", "--max-count=1", "--color=never", "--regexp=x",
                            "--", "-y", "README.md"]  # fmt: skip
    ((_, [cmd]),) = parse_command(ws, "sort -rk2,2 -t: README.md")
    assert cmd.argv[1:] == ["--reverse", "--key=2,2", "--field-separator=:", "--", "README.md"]
