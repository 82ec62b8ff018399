"""Fuzz test of the bash tool: random command lines from the allowed grammar (allowed and refused
options in every spelling, operands that lead inside and outside, pipes, lists, redirections)
against a workspace with a secret outside it, a FIFO canary outside it (a program that opened it
would block until the timeout) and symlinks leading out. Zero leaks, zero writes, zero opens of
the canary, whatever the checker accepts or refuses.

Bounded for CI: ``FASBENCH_FUZZ_EXAMPLES`` command lines (default 300) and at most
``FASBENCH_FUZZ_SECONDS`` seconds (default 20); the first wall is fuzzed alone (the OS
confinement off), then a smaller run with both walls."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools_fixture import SECRET, make_repo, snapshot

from fasbench.tools import ToolLimits, make_toolset
from fasbench.tools.bash import pipeline as sandbox
from fasbench.tools.bash.commands import GIT_SPECS, SPECS
from fasbench.tools.bash.readonly import ALLOWED

EXAMPLES = int(os.environ.get("FASBENCH_FUZZ_EXAMPLES", "300"))
SECONDS = float(os.environ.get("FASBENCH_FUZZ_SECONDS", "20"))

BASE = None  # set by the fixture; hypothesis strategies need the paths at definition time


def _paths(base) -> tuple[list[str], list[str]]:
    """(operands that stay inside, operands that lead outside or write); the FIFO canary is the
    most frequent outside name: any open of it (read or write) blocks and shows as a timeout."""
    out = base / "outside"
    fifo = str(out / "canary.fifo")
    inside = ["README.md", "src", "src/pkg/auth.py", ".", "*", "src/*", "src/*/*.py", ".hidden/*", "-",
              "/repo/README.md", "/README.md", "login", "Login", "HEAD", "HEAD~1", "HEAD:README.md", "--", "-x",
              "1", "'*.py'", str(base / "repo" / "README.md"), "link_in"]  # fmt: skip
    outside = [fifo, fifo, fifo, "../outside/canary.fifo", "link_out_dir/../canary.fifo", "..",
               "../outside/secret.txt", str(out / "secret.txt"), str(out), "link_out_file", "link_out_dir",
               "link_out_dir/s2.txt", "link_out_dir/*", "src/../../outside", "/etc/passwd", "/tmp/fasbench-fuzz-new",
               "pwned.txt", f"HEAD:{out}/secret.txt", "/repo/../outside/secret.txt"]  # fmt: skip
    return inside, outside


def _option_words(cmd: str) -> list[str]:
    """Allowed options in several spellings (most of the draws), then refused and stray ones."""
    sp = _spec(cmd)
    stray = ["--files0-from=-", "-f", "-", "--", "-o", "--o=pwned.txt", "-L", "-R", "--der", "--pre=sh", "-O",
             "-exec", "-delete", "-fprint", "-files0-from", "--compress-prog=sh", "--output=pwned.txt", "-i"]  # fmt: skip
    if sp is None:
        allowed = ["-name", "-type", "f", "-newer", "-path", "-print0", "-maxdepth", "2", "-samefile", "-iname",
                   "-print", "-mindepth", "-empty", "-size", "-regex", "-lname", "-ls"]  # fmt: skip
        return allowed * 4 + stray + ["-xtype", "-L", "-follow", "-fls"]
    allowed = []
    for o in sp.opts:
        for n in o.names:
            allowed.append(f"-{n}" if len(n) == 1 else f"--{n}")
            if len(n) > 3 and sp.abbrev:
                allowed.append(f"--{n[:4]}")
    refused = [f"--{n}" for n in sp.refused if len(n) > 1] + [f"-{n}" for n in sp.refused if len(n) == 1]
    return allowed + refused + stray


COMMANDS = [c for c in ALLOWED if c != "git"] + [f"git {s}" for s in GIT_SPECS]


def _spec(cmd: str):
    return GIT_SPECS.get(cmd.split()[1]) if cmd.startswith("git ") else SPECS.get(cmd)


@st.composite
def well_formed_option(draw, sp, values):
    """One allowed option of ``sp`` in a random spelling, with a value when it takes one."""
    o = draw(st.sampled_from(sp.opts))
    name = draw(st.sampled_from(o.names))
    v = (
        draw(st.sampled_from(values))
        if o.kind in ("value", "path") or (o.kind == "optional" and draw(st.booleans()))
        else None
    )
    if len(name) > 1:
        if sp.abbrev and draw(st.booleans()):
            name = name[: draw(st.integers(min(3, len(name)), len(name)))]
        if v is None:
            return f"--{name}"
        return f"--{name}={v}" if (o.kind == "optional" or draw(st.booleans())) else f"--{name} {v}"
    if v is None:
        return f"-{name}"
    return f"-{name}{v}" if (o.kind == "optional" or draw(st.booleans())) else f"-{name} {v}"


@st.composite
def simple_command(draw, paths, after_pipe: bool = False):
    inside, outside = paths
    values = [outside[0]] * 6 + ["-"] * 2 + outside + inside
    cmd = draw(st.sampled_from(COMMANDS))
    sp = _spec(cmd)
    words = []
    if sp is not None and draw(st.integers(0, 9)) < 7:  # well formed: allowed options only
        words = draw(st.lists(well_formed_option(sp, values), max_size=2))
    else:  # anything: refused and stray options too
        opts = _option_words(cmd)
        for _ in range(draw(st.integers(0, 3))):
            w = draw(st.sampled_from(opts))
            if draw(st.booleans()):  # a value (mostly a name outside): attached, after =, or separate
                v = draw(st.sampled_from(values))
                w = draw(st.sampled_from([w + v, f"{w}={v}", f"{w} {v}"]))
            words.append(w)
    n = draw(st.sampled_from([0, 0, 1, 2] if after_pipe else [0, 1, 1, 2, 3]))
    words += [draw(st.sampled_from(inside if draw(st.booleans()) else outside)) for _ in range(n)]
    redir = draw(st.sampled_from(["", "", "", " 2>&1", " 1>&2", " >/dev/null", " < README.md",
                                  " < ../outside/secret.txt", " > pwned.txt", " 2>/dev/null"]))  # fmt: skip
    return " ".join([cmd, *words]) + redir


@st.composite
def command_line(draw, paths):
    # half the time, names supplied on standard input by a producer first
    names = paths[1]
    producer = draw(st.sampled_from(["", "echo -ne '{}\\x00' | ", "echo {} | ", "echo -e '{}' | "]))
    out = producer.format(draw(st.sampled_from(names))) if producer else ""
    out += draw(simple_command(paths, after_pipe=bool(producer)))
    for _ in range(draw(st.integers(0, 2))):
        out += draw(st.sampled_from([" | ", " ; ", " && ", " || ", " |& "])) + draw(simple_command(paths))
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("fuzz")
    make_repo(b)
    os.mkfifo(b / "outside" / "canary.fifo")
    return b


def _fuzz(base, examples: int, seconds: float, at_least: int):
    """Up to ``examples`` random command lines; past ``seconds`` the rest are skipped, but never the
    first ``at_least`` (a busy machine runs fewer a second: the time budget bounds the test's length,
    it does not decide how much is checked)."""
    ts = make_toolset("relace", base / "repo", ToolLimits(timeout_s=3))
    before = snapshot(base)
    end = time.monotonic() + seconds
    seen = {"n": 0, "accepted": 0}

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
    @given(command_line(_paths(base)))
    def run(command):
        if time.monotonic() > end and seen["n"] >= at_least:
            return
        out, err = ts.call("bash", {"command": command})
        seen["n"] += 1
        seen["accepted"] += not err
        assert SECRET not in out, (command, out)
        assert "timed out" not in out, (command, out)  # the FIFO canary was opened (or a hang)
        assert not os.path.exists(base / "repo" / "pwned.txt") and not os.path.exists("/tmp/fasbench-fuzz-new")

    run()
    assert snapshot(base) == before, "the file tree changed"
    return seen


@pytest.mark.slow
def test_fuzz_first_wall_alone(base, monkeypatch):
    monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
    seen = _fuzz(base, EXAMPLES, SECONDS * 0.7, min(50, EXAMPLES))
    assert seen["n"] >= min(50, EXAMPLES) and seen["accepted"] > 0, seen


def test_fuzz_both_walls(base):
    seen = _fuzz(base, max(1, EXAMPLES // 3), SECONDS * 0.3, min(20, EXAMPLES // 3))
    assert seen["n"] >= min(20, EXAMPLES // 3), seen
