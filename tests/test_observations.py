"""Structured observations (issue #16): every tool of both tool sets records what it showed
(``ToolResult.shown``: paths, line ranges, match lines) beside its text, on a real corpus with real
ripgrep; the record round-trips and old traces load; the text parser (``fasbench.tools.seen``, what
policies and old traces use) agrees with the record; tools have kinds; and code outside
``fasbench/tools/`` names no tool and imports at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.policies.dialect import observations
from fasbench.records import Gold, Shown, Task, ToolCall, ToolResult, Trace
from fasbench.tools import (
    KINDS,
    TOOLSETS,
    answer_tool,
    calls_for,
    make_toolset,
    seen,
    shown,
    tool_kind,
    tool_names,
    toolset_of,
)
from fasbench.tools.base import ToolLimits

PKG = Path(__file__).resolve().parents[1] / "fasbench"

FILES = {
    "pkg/__init__.py": "from .core import run\n",
    "pkg/core.py": 'import os\n\n\ndef run(x):\n    """Run it."""\n    return helper(x) + 1\n\n\ndef helper(x):\n'
    "    return x * 2\n",
    "pkg/util/text.py": "def helper_text(s):\n    return s.strip()\n",
    "README.md": "# demo\nrun things\n",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("obs")
    for p, text in FILES.items():
        (r / p).parent.mkdir(parents=True, exist_ok=True)
        (r / p).write_text(text)
    (r / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    return r


def run(root, toolset, name, args, limits=None):
    ts = make_toolset(toolset, root, limits)
    call = ToolCall("c", name, args)
    res = ts.execute(call)
    assert not res.is_error, res.output
    # the record equals the tool set's parse of the text (what policies and old traces get)
    assert seen(toolset, call, res).shown == res.shown, (name, args, res.output)
    return res.shown, res


# ---------------------------------------------------------------- the record


def test_shown_round_trips_and_old_results_load_unchanged():
    r = ToolResult("c1", "out", shown=Shown(["a.py", "d/"], {"a.py": [[1, 5]]}, [["a.py", 3]]))
    d = r.to_dict()
    assert d["shown"] == {"paths": ["a.py", "d/"], "ranges": {"a.py": [[1, 5]]}, "hits": [["a.py", 3]]}
    assert ToolResult.from_dict(d) == r
    old = {"call_id": "c1", "output": "out", "is_error": False, "started_at": 1.0, "ended_at": 2.0}
    assert ToolResult.from_dict(old).shown is None
    assert "shown" not in ToolResult.from_dict(old).to_dict()
    assert Shown(["a.py", "d/"], {"b.py": [[1, 2]]}, [["c.py", 1], ["a.py", 2]]).files() == ["a.py", "b.py", "c.py"]


def test_traces_written_before_get_shown_from_their_text(root):
    ts = make_toolset("relace", root)
    call = ToolCall("c", "grep_search", {"query": "def helper"})
    res = ts.execute(call)
    old = ToolResult.from_dict({k: v for k, v in res.to_dict().items() if k != "shown"})
    assert old.shown is None
    assert shown("relace", call, old) == res.shown == Shown(hits=[["pkg/core.py", 9], ["pkg/util/text.py", 1]])


# ---------------------------------------------------------------- relace


def test_relace_view_file(root):
    s, _ = run(root, "relace", "view_file", {"path": "/repo/pkg/core.py", "view_range": [4, 6]})
    assert s == Shown(ranges={"pkg/core.py": [[4, 6]]})
    s, _ = run(root, "relace", "view_file", {"path": "./pkg/core.py", "view_range": [8, -1]})
    assert s == Shown(ranges={"pkg/core.py": [[8, 10]]})
    s, res = run(root, "relace", "view_file", {"path": "big.txt"})  # default [1, 100], truncated note
    assert s == Shown(ranges={"big.txt": [[1, 100]]}) and "rest of file truncated" in res.output


def test_relace_view_after_the_output_cap_is_what_survived_the_cut(root):
    s, res = run(
        root, "relace", "view_file", {"path": "big.txt", "view_range": [1, 300]}, ToolLimits(max_output_chars=500)
    )
    last = max(int(ln.split()[0]) for ln in res.output.splitlines() if ln[:1].isdigit())
    assert last < 300 and s == Shown(ranges={"big.txt": [[1, last]]})


def test_relace_view_directory_paths_are_root_relative(root):
    s, _ = run(root, "relace", "view_directory", {"path": "pkg"})
    assert s == Shown(paths=["pkg/__init__.py", "pkg/core.py", "pkg/util/", "pkg/util/text.py"])
    s, _ = run(root, "relace", "view_directory", {"path": "/repo"})
    assert "README.md" in s.paths and "pkg/core.py" in s.paths


def test_relace_grep_search(root):
    s, _ = run(root, "relace", "grep_search", {"query": "helper", "include_pattern": "*.py"})
    assert s == Shown(hits=[["pkg/core.py", 6], ["pkg/core.py", 9], ["pkg/util/text.py", 1]])
    s, _ = run(root, "relace", "grep_search", {"query": "no_such_symbol_anywhere"})
    assert s == Shown()


@pytest.mark.parametrize(
    "command,want",
    [
        ("find . -name '*.py' -type f", Shown(paths=["pkg/__init__.py", "pkg/core.py", "pkg/util/text.py"])),
        ("rg --files -g '*.py' | grep -iE 'text' | sort", Shown(paths=["pkg/util/text.py"])),
        ("ls pkg", Shown(paths=["pkg/__init__.py", "pkg/core.py", "pkg/util"])),
        ("grep -rn 'def helper' pkg | sort", Shown(hits=[["pkg/core.py", 9], ["pkg/util/text.py", 1]])),
        ("rg -n 'return' pkg/core.py", Shown(hits=[["pkg/core.py", 6], ["pkg/core.py", 10]])),
        ("grep -n -A 1 'def run' pkg/core.py", Shown(ranges={"pkg/core.py": [[5, 5]]}, hits=[["pkg/core.py", 4]])),
        (
            "grep -rn -B 1 'def helper' pkg",
            Shown(ranges={"pkg/core.py": [[8, 8]]}, hits=[["pkg/core.py", 9], ["pkg/util/text.py", 1]]),
        ),
        ("grep -rl helper pkg | sort", Shown(paths=["pkg/core.py", "pkg/util/text.py"])),
        ("cat pkg/util/text.py", Shown(ranges={"pkg/util/text.py": [[1, 2]]})),
        ("cat -n pkg/core.py | head -3", Shown(ranges={"pkg/core.py": [[1, 3]]})),
        ("head -n 4 big.txt", Shown(ranges={"big.txt": [[1, 4]]})),
        ("sed -n '5,9p' big.txt", Shown(ranges={"big.txt": [[5, 9]]})),
        ("wc -l big.txt", Shown()),  # a count shows no file content
        ("cat README.md; find . -name '*.md'", Shown()),  # two commands' outputs cannot be told apart
    ],
)
def test_relace_bash_shows_what_its_commands_printed(root, command, want):
    s, _ = run(root, "relace", "bash", {"command": command})
    if "sort" not in command:  # find's, ls's and grep -r's own order: directory order
        s = Shown(sorted(s.paths), s.ranges, sorted(s.hits))
    assert s == want, command


def test_relace_report_back_and_errors_show_nothing(root):
    s, _ = run(root, "relace", "report_back", {"explanation": "x", "files": {"pkg/core.py": [[4, 6]]}})
    assert s == Shown()
    res = make_toolset("relace", root).execute(ToolCall("c", "view_file", {"path": "nope.py"}))
    assert res.is_error and res.shown == Shown()


# ---------------------------------------------------------------- fastcontext


@pytest.mark.parametrize("ts", ["fastcontext", "fastcontext-fork"])
def test_fastcontext_read(root, ts):
    s, _ = run(root, ts, "Read", {"path": "/repo/pkg/core.py", "offset": 4, "limit": 3})
    assert s == Shown(ranges={"pkg/core.py": [[4, 6]]})
    s, _ = run(root, ts, "Read", {"path": "pkg/core.py", "offset": -2})  # the release: from line 1
    assert s == Shown(ranges={"pkg/core.py": [[9, 10]] if ts == "fastcontext-fork" else [[1, 10]]})
    s, _ = run(root, ts, "Read", {"path": "big.txt"})
    assert s == Shown(ranges={"big.txt": [[1, 300]]})


def test_fastcontext_glob(root):
    s, _ = run(root, "fastcontext", "Glob", {"pattern": "*.py", "directory": "pkg"})
    assert sorted(s.paths) == ["pkg/__init__.py", "pkg/core.py", "pkg/util/text.py"] and not s.hits


def test_fastcontext_released_grep_modes(root):
    """The release's Grep: no output_mode and count print lines without numbers (their files are
    listed); content forces -C 3 and numbers lines; a single file prints no path."""
    s, _ = run(root, "fastcontext", "Grep", {"pattern": "helper"})
    assert s == Shown(paths=["pkg/core.py", "pkg/util/text.py"])
    s, _ = run(root, "fastcontext", "Grep", {"pattern": "helper", "output_mode": "count", "path": "pkg/core.py"})
    assert s == Shown(paths=["pkg/core.py"])
    s, _ = run(
        root, "fastcontext", "Grep", {"pattern": "helper", "output_mode": "content", "-C": 1, "path": "pkg/core.py"}
    )
    assert s == Shown(ranges={"pkg/core.py": [[5, 5], [7, 8], [10, 10]]}, hits=[["pkg/core.py", 6], ["pkg/core.py", 9]])
    s, _ = run(root, "fastcontext", "Grep", {"pattern": "helper", "output_mode": "files_with_matches"})
    assert s == Shown(paths=["pkg/core.py", "pkg/util/text.py"])
    s, _ = run(root, "fastcontext", "Grep", {"pattern": "zzz_none"})
    assert s == Shown()


def test_fastcontext_fork_grep_modes(root):
    s, _ = run(root, "fastcontext-fork", "Grep", {"pattern": "helper"})
    assert s == Shown(hits=[["pkg/core.py", 6], ["pkg/core.py", 9], ["pkg/util/text.py", 1]])
    s, _ = run(root, "fastcontext-fork", "Grep", {"pattern": "helper", "-C": 1, "path": "pkg/core.py"})
    # context lines are content shown (ranges), not hits
    assert s == Shown(ranges={"pkg/core.py": [[5, 5], [7, 8], [10, 10]]}, hits=[["pkg/core.py", 6], ["pkg/core.py", 9]])
    s, _ = run(root, "fastcontext-fork", "Grep", {"pattern": "helper", "output_mode": "files_with_matches"})
    assert s == Shown(paths=["pkg/core.py", "pkg/util/text.py"])
    s, _ = run(root, "fastcontext-fork", "Grep", {"pattern": "helper", "output_mode": "count"})
    assert s == Shown(paths=["pkg/core.py", "pkg/util/text.py"])
    s, _ = run(root, "fastcontext-fork", "Grep", {"pattern": "zzz_none"})
    assert s == Shown()


# ---------------------------------------------------------------- kinds and calls


def test_every_tool_has_a_kind_and_the_answer_tool_is_a_report(root):
    for ts in TOOLSETS:
        toolset = make_toolset(ts, root)
        assert list(toolset.tools) == tool_names(ts)
        assert all(tool_kind(ts, n) in KINDS for n in toolset.tools)
        assert toolset_of(toolset.schemas) == ts
        if answer_tool(ts) is not None:
            assert tool_kind(ts, answer_tool(ts)) == "report"
    assert tool_kind("relace", "no_such_tool") is None and tool_kind("nope", "x") is None
    assert toolset_of([{"type": "function", "function": {"name": "x"}}]) is None


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_call_builders_make_calls_of_their_kind_that_run(root, toolset):
    c = calls_for(toolset)
    ts = make_toolset(toolset, root)
    for call, kind, field in [
        (c.search("a", "def helper"), "search", "hits"),
        (c.read("b", "pkg/core.py", 4, 6), "read", "ranges"),
        (c.list_dir("d", "pkg"), "list", "paths"),
        (c.find("e", "core.py"), None, "paths"),
        (c.find_any("f", ["text"]), None, "paths"),
    ]:
        res = ts.execute(call)
        assert not res.is_error, res.output
        assert kind is None or tool_kind(toolset, call.name) == kind
        assert getattr(res.shown, field), (call, res.output)
    assert c.of_kind("read", "g", path="pkg/core.py", start=4, end=6) == c.read("g", "pkg/core.py", 4, 6)
    with pytest.raises(ValueError, match="no call builder for kind 'edit'"):
        c.of_kind("edit", "h")


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_a_policy_reads_the_same_observations_as_recorded(root, toolset):
    """What a scripted policy reads from the chat (the tool set's parse of the tool messages) is what
    the tools recorded, call by call, over a real heuristic episode."""
    task = Task(
        id="t",
        query="helper_text strips the text; `run` calls helper",
        repo="demo",
        gold=Gold(edited={}),
        root=str(root),
    )
    tr: Trace = run_episode(task, make_policy("heuristic:turns=3"), toolset, Limits(max_turns=3))
    recorded = [(c.id, r.shown) for t in tr.turns for c, r in zip(t.calls, t.results)]
    assert recorded and all(s is not None for _, s in recorded)
    read = [(o.call.id, o.shown) for turn in observations(tr.to_messages(), toolset) for o in turn]
    assert read == recorded
    assert any(s.hits for _, s in recorded) and any(s.ranges for _, s in recorded)


# ---------------------------------------------------------------- the rules of issue #16 in the files obs owns

OWNED = sorted(
    [
        *PKG.glob("policies/*.py"),
        PKG / "studies" / "handoff.py",
        PKG / "studies" / "audit.py",
        PKG / "stats" / "figures.py",
        PKG / "models.py",
        PKG / "bon" / "verify.py",
    ]
)


def test_no_tool_name_outside_tools():
    names = set(tool_names())
    bad = []
    for f in OWNED:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                bad.append(f"{f.relative_to(PKG.parent)}:{node.lineno}: {node.value!r}")
    assert not bad, "tool names outside fasbench/tools/ (use fasbench.tools.tool_kind / calls_for):\n" + "\n".join(bad)


def test_function_local_imports_carry_a_reason():
    bad = []
    for f in sorted(PKG.glob("tools/*.py")) + OWNED:
        lines = f.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    i = j = sub.lineno - 1  # the comment: on the line, or above the block of imports it starts
                    while j > 0 and lines[j - 1].strip().startswith(("import ", "from ")):
                        j -= 1
                    if "# local import:" not in lines[i] and (j == 0 or "# local import:" not in lines[j - 1]):
                        bad.append(f"{f.relative_to(PKG.parent)}:{sub.lineno}")
    assert not bad, "function-local imports without a '# local import:' reason:\n" + "\n".join(bad)


def test_rg_does_not_import_the_sandbox():
    """The layering that broke the rg <-> sandbox cycle: rg names the binary, sandbox runs processes
    (and imports rg), rgsearch runs searches through the sandbox."""

    def imports(mod):
        tree = ast.parse((PKG / "tools" / f"{mod}.py").read_text())
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}

    assert "fasbench.tools.bash.pipeline" not in imports("rg")
    assert "fasbench.tools.rg" in imports("bash/pipeline") and "fasbench.tools.rgsearch" not in imports("bash/pipeline")


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_heuristic_given_the_recorded_turns_acts_as_from_the_chat(root, toolset):
    """The policy-side hook (``observes_turns``: the harness passes ``turns=``): given the recorded
    turns, the heuristic replies exactly as it did reading the tool messages."""
    task = Task(
        id="t",
        query="helper_text strips the text; `run` calls helper",
        repo="demo",
        gold=Gold(edited={}),
        root=str(root),
    )
    pol = make_policy("heuristic:turns=4")
    assert pol.observes_turns
    tr = run_episode(task, pol, toolset, Limits(max_turns=4))
    schemas = make_toolset(toolset, root).schemas
    msgs = tr.to_messages()
    for i, t in enumerate(tr.turns):
        before = msgs[: [k for k, m in enumerate(msgs) if m.get("role") == "assistant"][i]]
        reply = pol.act(before, schemas, final=False, turns=tr.turns[:i])
        assert (reply.text, [(c.name, c.arguments) for c in reply.calls]) == (
            t.text,
            [(c.name, c.arguments) for c in t.calls],
        )


def test_bash_rg_lists_in_path_order(tmp_path):
    """rg's parallel walk prints files in a varying order; the bash tool sorts by path unless the
    command sorts itself, so the same command shows the same output every time."""
    for d in range(12):
        for f in range(15):
            (tmp_path / f"d{d:02d}" / f"s{f:02d}").mkdir(parents=True, exist_ok=True)
            (tmp_path / f"d{d:02d}" / f"s{f:02d}" / "m.py").write_text("x = 1\n")
    ts = make_toolset("relace", tmp_path)
    out = ts.call("bash", {"command": "rg --files"})[0].splitlines()
    assert len(out) == 180 and out == sorted(out)
    rev = ts.call("bash", {"command": "rg --files --sortr path"})[0].splitlines()
    assert rev == sorted(out, reverse=True)  # the command's own sort wins
