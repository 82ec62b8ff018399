"""Issue 25, deliverables 4 and 7: arguments that name paths are never read as options, globs
never name what is outside the root, and the first wall's own parsing is bounded in time.

The corpus holds files a malicious repository could hold: ``--files``, ``-L``, ``--follow``,
``--pre=sh`` (a shell script), ``--pre=/bin/sh``, ``-f/etc/passwd``, ``--ignore-file=/etc/hosts``
and ``-``; every path argument of both tool sets and every command of the bash allowlist must
treat them as the paths they are. Every test runs with both walls and with the first wall alone
(``FASBENCH_CONFINE=off``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tools_fixture import SECRET, make_repo, snapshot

import fasbench
from fasbench.tools import ToolLimits, make_toolset
from fasbench.tools.base import Workspace
from fasbench.tools.bash import pipeline as sandbox
from fasbench.tools.bash.readonly import ALLOWED, parse_command

PKG_ROOT = str(Path(fasbench.__file__).resolve().parents[1])

#: corpus path -> its text (the path as the model would write it)
HOSTILE = {
    "--files": "login in --files\n",
    "-L": "login in -L\n",
    "--follow": "login in --follow\n",
    "--pre=sh": "touch {pw}\n# login in --pre=sh\n",
    "--pre=/bin/sh": "touch {pw}\n# login in --pre=/bin/sh\n",
    "-f/etc/passwd": "login in -f/etc/passwd\n",
    "--ignore-file=/etc/hosts": "login in --ignore-file\n",
    "-": "login in -\n",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("arguments")
    root = make_repo(b)
    for rel, text in HOSTILE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.format(pw=b / "pwned"))
    (b / "outside" / "exists.txt").write_text(SECRET + "\n")
    return b


@pytest.fixture(params=["both walls", "first wall alone"])
def walls(request, monkeypatch):
    if request.param == "first wall alone":
        monkeypatch.setattr(sandbox, "confine_parts", lambda: {"landlock": False, "seccomp": False})
        monkeypatch.setenv("FASBENCH_CONFINE", "off")  # for the subprocesses of the DoS tests
    return request.param


def _harmless(base, before, *outs):
    for out in outs:
        assert SECRET not in out, out
    assert not (base / "pwned").exists(), "a corpus file was run as a program"
    assert snapshot(base) == before, "the file tree changed"


def _hit_line(rel: str) -> tuple[int, str]:
    lines = HOSTILE[rel].splitlines()
    n = next(i for i, ln in enumerate(lines, 1) if "login" in ln)
    return n, lines[n - 1]


# ---------------------------------------------------------------- the tool sets' path arguments


@pytest.mark.parametrize("ts", ["fastcontext", "fastcontext-fork"])
@pytest.mark.parametrize("rel", list(HOSTILE))
def test_fastcontext_grep_path_is_a_path(base, walls, rel, ts):
    fc = make_toolset(ts, base / "repo")
    before = snapshot(base)
    n, line = _hit_line(rel)
    release = ts == "fastcontext"  # 5fb8c1d: one file prints no path; no output_mode and count print bare lines
    content, err = fc.call("Grep", {"pattern": "login", "path": rel})
    assert not err and content == (f"{line}\n" if release else f"/repo/{rel}\n{n}:{line}"), content
    files, err = fc.call("Grep", {"pattern": "login", "path": rel, "output_mode": "files_with_matches"})
    assert not err and files == (f"{rel}\n" if release else f"/repo/{rel}"), files
    count, err = fc.call("Grep", {"pattern": "login", "path": rel, "output_mode": "count"})
    assert not err and count == (f"{line}\n" if release else f"/repo/{rel}:1"), count
    secret, _ = fc.call("Grep", {"pattern": "TOPSECRET", "path": rel})
    assert secret == "No matches found", secret
    _harmless(base, before, content, files, count, secret)


@pytest.mark.parametrize(
    "value",
    ["--files", "-L", "--follow", "--pre=sh", "--pre=/bin/sh", "-f/etc/passwd", "--ignore-file=/etc/hosts", "-"],
)
def test_values_of_the_tool_sets_are_never_options(base, walls, value):
    """Patterns and globs the model writes (Grep's pattern, glob and type, Glob's pattern,
    grep_search's query and include/exclude patterns) are passed attached to their option. A guard:
    today's rg already took the next argument as the value."""
    fc, rl = make_toolset("fastcontext", base / "repo"), make_toolset("relace", base / "repo")
    before = snapshot(base)
    outs = [
        fc.call("Grep", {"pattern": value})[0],
        fc.call("Grep", {"pattern": "TOPSECRET", "glob": value})[0],
        fc.call("Grep", {"pattern": "TOPSECRET", "type": value})[0],
        fc.call("Glob", {"pattern": value})[0],
        rl.call("grep_search", {"query": value})[0],
        rl.call("grep_search", {"query": "TOPSECRET", "include_pattern": value})[0],
        rl.call("grep_search", {"query": "TOPSECRET", "exclude_pattern": value})[0],
    ]
    glob_out, err = fc.call("Glob", {"pattern": value})
    assert not err and glob_out == f"/repo/{value}", glob_out  # the glob matches the file of that name
    _harmless(base, before, *outs)


@pytest.mark.parametrize("rel", list(HOSTILE))
def test_view_and_read_paths_are_paths(base, walls, rel):
    """A guard: these tools read in-process, and Glob's directory is rg's working directory."""
    fc, rl = make_toolset("fastcontext", base / "repo"), make_toolset("relace", base / "repo")
    n, line = _hit_line(rel)
    out, err = fc.call("Read", {"path": rel})
    assert not err and f"{n}|{line}\n" in out, out
    out, err = rl.call("view_file", {"path": rel})
    assert not err and f"{n}   {line}" in out, out
    top = rel.split("/")[0]
    if (base / "repo" / top).is_dir():
        out, err = rl.call("view_directory", {"path": top})
        assert not err and out.splitlines()[0] == rel.split("/", 1)[1].split("/")[0] + "/", out
        out, err = fc.call("Glob", {"pattern": "*", "directory": top})
        assert not err and out == rel, out  # the release spells paths from the directory as written
        out, err = make_toolset("fastcontext-fork", base / "repo").call("Glob", {"pattern": "*", "directory": top})
        assert not err and out == f"/repo/{rel}", out


# ---------------------------------------------------------------- the bash allowlist

#: per command: a command line whose glob `-*` matches the hostile top-level names
GLOBBED = {
    "ls": "ls -d -*",
    "cat": "cat -*",
    "head": "head -n1 -*",
    "tail": "tail -n1 -*",
    "sed": "sed -n 1p -*",
    "grep": "grep -n login -*",
    "rg": "rg -n login -*",
    "find": "find -* -maxdepth 0",
    "wc": "wc -l -*",
    "sort": "sort -*",
    "uniq": "uniq --fi*",
    "cut": "cut -c1-5 -*",
    "nl": "nl -*",
    "tree": "tree -a -*",
    "file": "file -*",
    "stat": "stat -c %n -*",
    "du": "du -a -*",
    "echo": "echo -*",
    "pwd": None,
    "basename": "basename -a -*",
    "dirname": "dirname -*",
    "tr": None,
    "git": "git ls-files -*",
}
TOP = sorted({rel.split("/")[0] for rel in HOSTILE})  # --files --follow --ignore-file= --pre= --pre=sh - -L -f


def test_every_allowed_command_has_a_glob_case():
    assert set(GLOBBED) == set(ALLOWED)


@pytest.mark.parametrize("name", [n for n in ALLOWED if GLOBBED[n]])
def test_glob_matches_are_operands_for_every_command(base, walls, name):
    command = GLOBBED[name]
    if name == "tree" and shutil.which("tree") is None:
        pytest.skip("tree is not installed")
    ws = Workspace(base / "repo", ToolLimits())
    plan = parse_command(ws, command)
    (argv,) = [c.argv for _, p in plan for c in p]
    want = [f"./{t}" for t in TOP if t.startswith("--fi")] if name == "uniq" else [f"./{t}" for t in TOP]
    assert [a for a in argv if a.startswith("./")] == want, argv
    assert not set(argv) & set(TOP), f"a glob match became an option: {argv}"
    if "--" in argv:
        assert argv.index("--") < argv.index(want[0])
    before = snapshot(base)
    out, _ = make_toolset("relace", base / "repo").call("bash", {"command": command})
    assert "command refused" not in out, out
    _harmless(base, before, out)


def test_glob_matched_options_search_the_files(base, walls):
    rl = make_toolset("relace", base / "repo")
    before = snapshot(base)
    out, err = rl.call("bash", {"command": "rg -l login -*"})
    assert not err and sorted(out.split()) == sorted(f"./{rel}" for rel in HOSTILE), out
    out, err = rl.call("bash", {"command": "cat -*"})
    assert "login in -\n" in out and "login in -L\n" in out, out  # `-` is the file, not standard input
    out, err = rl.call("bash", {"command": "grep -c login [!a-l]*"})
    assert "./--pre=sh:1" in out, out
    _harmless(base, before, out)


@pytest.mark.parametrize(
    "name", [n for n in ALLOWED if n not in ("echo", "pwd", "find", "tr", "basename", "dirname", "git", "tree")]
)
def test_model_operands_after_dashdash_stay_operands(base, walls, name):
    """A guard: a model's operand after ``--`` is re-emitted after ``--``."""
    ws = Workspace(base / "repo", ToolLimits())
    pre = {"grep": "grep -n login", "rg": "rg -n login", "sed": "sed -n 1p"}.get(name, name)
    plan = parse_command(ws, f"{pre} -- -L")
    (argv,) = [c.argv for _, p in plan for c in p]
    assert argv[-2:] == ["--", "-L"] or argv[-3:] in (["--", "login", "-L"], ["--", "1p", "-L"]), argv


def test_find_refuses_operands_it_would_read_as_primaries(base, walls):
    out, err = make_toolset("relace", base / "repo").call("bash", {"command": "find -- -L"})
    assert err and "command refused" in out, out


def test_short_option_with_an_optional_value_keeps_it_attached(base, walls):
    """git blame -M takes an optional value: emitted apart, ``-M--contents=F`` ran as ``-M
    --contents=F`` and read F (first wall alone: the secret came back)."""
    secret = base / "outside" / "secret.txt"
    before = snapshot(base)
    out, err = make_toolset("relace", base / "repo").call(
        "bash", {"command": f"git blame -M--contents={secret} README.md"}
    )
    _harmless(base, before, out)
    out, err = make_toolset("relace", base / "repo").call("bash", {"command": "git blame -M20 README.md"})
    assert not err and "# Demo" in out, out


# ---------------------------------------------------------------- globs name nothing outside


def _oracle_pairs(base) -> list[tuple[str, str]]:
    root = base / "repo"
    up = "../" * (len(root.parts) - 1)  # from the root up to /
    return [
        ("../outside/secret.tx?", "../outside/absent.tx?"),
        ("../outsid?", "../nowher?"),
        ("../outside/*", "../nowhere/*"),
        ("../*", "../nowhere/../*"),
        ("/repo/../outside/secret.tx?", "/repo/../outside/absent.tx?"),
        (f"{root}/../outside/secret.tx?", f"{root}/../outside/absent.tx?"),
        ("src/../../outside/secret.tx?", "src/../../outside/absent.tx?"),
        ("link_out_dir/s2.tx?", "link_out_dir/zz.tx?"),
        ("link_out_dir/*", "link_out_dir/../nowhere/*"),
        (f"/repo/{up}etc/shado?", f"/repo/{up}etc/nothin?"),
        (f"{root}/{up}etc/shado?", f"{root}/{up}etc/nothin?"),
        ("/etc/shado?", "/etc/nothin?"),
        (f"/repo/{up}root/.*", f"/repo/{up}nowhere/.*"),
        ("/root/.*", "/nowhere/.*"),
        (f"/repo/{up}proc/1/*", f"/repo/{up}proc/999999999/*"),
        ("/proc/1/*", "/proc/999999999/*"),
        ("*/../../outside/secret.tx?", "*/../../outside/absent.tx?"),
    ]


@pytest.mark.parametrize("command", ["ls {}", "echo {}", "cat {}", "grep -n x {}", "find {} -maxdepth 0"])
def test_globs_outside_answer_the_same_whether_or_not_anything_is_there(base, walls, command):
    rl = make_toolset("relace", base / "repo")
    before = snapshot(base)
    diffs = []
    for there, absent in _oracle_pairs(base):
        a, _ = rl.call("bash", {"command": command.format(there)})
        b, _ = rl.call("bash", {"command": command.format(absent)})
        for name in ("secret.txt", "exists.txt", "s2.txt", "shadow", "cmdline", "outside/dir"):
            if name in a and name not in there:
                diffs.append((there, f"names {name!r}: {a[:200]}"))
        if a.replace(there, "PATTERN") != b.replace(absent, "PATTERN"):
            diffs.append((there, f"{a[:200]!r} != {b[:200]!r}"))
    assert not diffs, "\n".join(f"{p}: {d}" for p, d in diffs)
    _harmless(base, before)


def test_outside_globs_are_refused_before_listing(base, walls):
    rl = make_toolset("relace", base / "repo")
    for pattern in ["../*", "../outside/secret.tx?", "link_out_dir/*", "/repo/../outside/*"]:
        out, err = rl.call("bash", {"command": f"ls {pattern}"})
        assert err and out == (
            f"Error: command refused: glob {pattern!r} leads outside the workspace ('..' and symlinks may not leave it)"
        ), out
    out, err = rl.call("bash", {"command": "echo [!a-l]*"})
    names = set(out.split())
    assert not err and names <= {"README.md", "src", "tests", *(f"./{t}" for t in TOP)}, out


def test_inside_globs_still_expand(base, walls):
    """A guard: confinement keeps bash's expansion inside the root (``..`` inside, symlinks in)."""
    rl = make_toolset("relace", base / "repo")
    for command, want in [
        ("echo src/*", "src/long.txt src/pkg\n"),
        ("echo src/pkg/../*", "src/pkg/../long.txt src/pkg/../pkg\n"),
        ("echo /repo/src/p*", f"{base / 'repo'}/src/pkg\n"),
        ("echo .hidden/*", ".hidden/h.txt\n"),
        ("echo */*.py", "tests/test_auth.py\n"),
    ]:
        out, err = rl.call("bash", {"command": command})
        assert not err and out == want, (command, out)


# ---------------------------------------------------------------- bounded parsing (DoS)


def _run_in_child(code: str, guard_s: float) -> list:
    """Run ``code`` (which prints one JSON line) in a fresh interpreter under a hang guard: a
    regex holding the GIL cannot be interrupted in-process."""
    env = {**os.environ, "PYTHONPATH": PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=guard_s, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after the {guard_s:g} s hang guard")
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


PATHOLOGICAL = [
    "sed -n '" + " " * 200 + "w pwned.txt' README.md",  # held the first wall's regex 64-86 s
    "sed -n '" + "\n" * 200 + "w pwned.txt' README.md",
    "sed -n '1" + " " * 200 + "!" + " " * 200 + "w pwned.txt' README.md",
    "sed -e '" + " ;" * 2000 + "w x' README.md",
    "echo" + " " * 16000 + "x",
    "echo " + "\"'" * 8000,
    "echo " + "\"a'b'\"" * 2600,
    "echo " + "$(" * 8000,
    "ls " + "*a" * 500,
]


def test_pathological_command_lines_finish(base, walls):
    code = (
        "import json, sys\n"
        "from fasbench.tools import make_toolset\n"
        f"ts = make_toolset('relace', {str(base / 'repo')!r})\n"
        f"out = [ts.call('bash', {{'command': c}}) for c in {PATHOLOGICAL!r}]\n"
        "print(json.dumps(out))\n"
    )
    before = snapshot(base)
    results = _run_in_child(code, guard_s=60)
    for command, (out, err) in zip(PATHOLOGICAL, results):
        if command.startswith("sed"):
            assert err and "sed script" in out and "not allowed" in out, out[:300]
        assert "Traceback" not in out
    assert not (base / "repo" / "pwned.txt").exists()
    _harmless(base, before)


GROWTH = """
import json, sys, time
from fasbench.tools import ToolLimits
from fasbench.tools.base import ToolError, Workspace
from fasbench.tools.bash.readonly import parse_command
ws = Workspace(sys.argv[1], ToolLimits())

def check(k):
    try:
        parse_command(ws, "sed -n '" + " " * k + "w x' README.md")
    except ToolError:
        pass

def per_call(k):  # CPU seconds per call, the best of three runs of at least 40 ms each
    best = float("inf")
    for _ in range(3):
        n, t0 = 0, time.process_time()
        while (t := time.process_time() - t0) < 0.04:
            check(k)
            n += 1
        best = min(best, t / n)
    return best

ratios = {}
for n in (40, 4000):  # the second only when the first is near-linear (the regex would take years)
    ratios[n] = per_call(2 * n) / per_call(n)
    if ratios[n] > 3:
        break
print(json.dumps(ratios))
"""


def test_sed_script_check_grows_linearly(base):
    """Checking a script of 2n blanks costs about twice one of n (the regex grew about n^5);
    compared in one run, by CPU time per call."""
    code = GROWTH.replace("sys.argv[1]", repr(str(base / "repo")))
    ratios = _run_in_child(code, guard_s=120)
    assert set(ratios) == {"40", "4000"} and all(r < 3.0 for r in ratios.values()), ratios


def test_read_with_negative_offset_of_a_huge_sparse_file_is_bounded(base, walls, tmp_path):
    big = tmp_path / "corpus"
    big.mkdir()
    with open(big / "huge.txt", "wb") as f:
        f.write(b"text line\n" * 20_000)  # text first, so that it is not taken for binary
        f.truncate(50 * 2**30)  # a 50 GB sparse file: counting its lines took 92 s
    (big / "small.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    code = (
        "import json\n"
        "from fasbench.tools import make_toolset\n"
        f"ts = make_toolset('fastcontext-fork', {str(big)!r})\n"  # the fork counts back from the end
        "print(json.dumps([ts.call('Read', {'path': 'huge.txt', 'offset': -3}),"
        " ts.call('Read', {'path': 'small.txt', 'offset': -2})]))\n"
    )
    (huge, huge_err), (small, small_err) = _run_in_child(code, guard_s=60)
    assert huge_err and "\n" not in huge and "negative offset" in huge and "64 MiB" in huge, huge
    assert not small_err and small == "```small.txt:9-10\n9|l9\n10|l10\n\n```", small
