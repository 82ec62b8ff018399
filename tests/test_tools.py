"""Every tool of both tool sets on a real git repository: outputs, edge cases, malformed calls,
limits, prompts, report parsing and the `fasbench tool` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tools_fixture import SECRET, make_repo
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.harness import execute_calls
from fasbench.records import ToolCall
from fasbench.records.fastcontext_answer import parse_final_answer_lenient
from fasbench.tools import ToolLimits, make_toolset


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("tools"))


@pytest.fixture(scope="module")
def relace(repo):
    return make_toolset("relace", repo)


@pytest.fixture(scope="module")
def fc(repo):
    """The fork's fixed tools (these tests pin them); Microsoft's release, the ``fastcontext`` tool set,
    is compared with its recorded outputs in tests/test_fastcontext_release.py."""
    return make_toolset("fastcontext-fork", repo)


def ok(ts, name, **args) -> str:
    out, err = ts.call(name, args)
    assert not err, out
    return out


def bad(ts, name, args) -> str:
    out, err = ts.call(name, args)
    assert err, out
    assert out.startswith("Error: ")
    return out


# ---------------------------------------------------------------- relace: view_file


def test_view_file_default_range_numbers_lines_and_notes_the_rest(relace):
    out = ok(relace, "view_file", path="src/long.txt")
    lines = out.splitlines()
    assert lines[0] == "1   line 1" and lines[99] == "100   line 100"  # the published `N   code` format
    assert lines[100] == "... rest of file truncated ..." and len(lines) == 101


@pytest.mark.parametrize(
    "spelling", ["src/pkg/auth.py", "/src/pkg/auth.py", "./src/pkg/auth.py", "/repo/src/pkg/auth.py"]
)
def test_view_file_path_spellings(relace, repo, spelling):
    out = ok(relace, "view_file", path=spelling, view_range=[4, 5])
    assert out.splitlines()[:2] == ["4   def Login(user, password):", '5       """Check a user\'s password."""']


def test_view_file_absolute_root_path(relace, repo):
    out = ok(relace, "view_file", path=str(repo / "README.md"))
    assert out.startswith("1   # Demo")


def test_view_file_ranges(relace):
    assert ok(relace, "view_file", path="src/long.txt", view_range=[299, -1]).splitlines() == [
        "299   line 299",
        "300   line 300",
    ]
    out = ok(relace, "view_file", path="src/long.txt", view_range=[295, 400])  # end beyond EOF: clamped
    assert out.splitlines()[-1] == "300   line 300"
    out = ok(relace, "view_file", path="src/long.txt", view_range=[7, 7])
    assert out.splitlines() == ["7   line 7", "... rest of file truncated ..."]


@pytest.mark.parametrize(
    "rng, msg",
    [
        ([301, 310], "beyond the end"),
        ([0, 5], "start must be >= 1"),
        ([10, 5], "end must be >= start"),
        ([-1, 5], "start must be >= 1"),
    ],
)
def test_view_file_bad_ranges(relace, rng, msg):
    assert msg in bad(relace, "view_file", {"path": "src/long.txt", "view_range": rng})


def test_view_file_special_files(relace):
    assert "binary file" in bad(relace, "view_file", {"path": "bin.dat"})
    out = ok(relace, "view_file", path="latin.txt")
    assert "caf\ufffd login" in out and "not valid UTF-8" in out
    assert ok(relace, "view_file", path="empty.txt") == "empty.txt is empty (0 lines)"
    assert "is a directory" in bad(relace, "view_file", {"path": "src"})
    assert "does not exist" in bad(relace, "view_file", {"path": "nope.py"})
    assert ok(relace, "view_file", path="link_in", view_range=[1, 1]) == "1   import os\n... rest of file truncated ..."


def test_view_file_huge_file_and_output_budget(repo):
    ts = make_toolset("relace", repo, ToolLimits(max_file_bytes=1000, max_output_chars=600))
    out = ok(ts, "view_file", path="src/long.txt", view_range=[250, 252])
    assert "large file" in out and "251   line 251" in out and "rest of file truncated" in out
    out = ok(ts, "view_file", path="src/long.txt", view_range=[1, -1])
    assert "output limit reached" in out and len(out) < 900
    last = [ln for ln in out.splitlines() if "   line" in ln][-1]
    n = int(last.split("   ")[0])
    assert f"view_range [{n + 1}, ...]" in out


def test_view_file_long_lines_are_cut(tmp_path):
    (tmp_path / "min.js").write_text("x" * 5000 + "\nshort\n")
    out = ok(make_toolset("relace", tmp_path), "view_file", path="min.js")
    assert "[line cut]" in out and "longer than" in out and "2   short" in out


# ---------------------------------------------------------------- relace: view_directory


def test_view_directory_recursive_sorted_dirs_with_slash(relace):
    out = ok(relace, "view_directory", path="/repo/")
    lines = out.splitlines()
    assert "src/" in lines and "src/pkg/" in lines and "src/pkg/auth.py" in lines and "tests/test_auth.py" in lines
    assert ".hidden/" not in lines and not any(ln.startswith(".git") for ln in lines)
    assert lines == sorted(lines, key=lambda s: s.rstrip("/").split("/"))
    assert "link_out_dir" in lines  # listed, not followed
    assert not any(ln.startswith("link_out_dir/") for ln in lines)


def test_view_directory_subdir_hidden_and_errors(relace):
    assert ok(relace, "view_directory", path="src/pkg").splitlines() == ["__init__.py", "auth.py", "models.py"]
    out = ok(relace, "view_directory", path=".", include_hidden=True)
    assert ".hidden/h.txt" in out.splitlines() and ".git/" in out.splitlines()
    assert not any(ln.startswith(".git/") and ln != ".git/" for ln in out.splitlines())  # .git not descended
    assert "is a file" in bad(relace, "view_directory", {"path": "README.md"})
    assert "does not exist" in bad(relace, "view_directory", {"path": "nope"})


def test_view_directory_cut_at_250(tmp_path):
    for d in range(3):
        (tmp_path / f"d{d}").mkdir()
        for i in range(120):
            (tmp_path / f"d{d}" / f"f{i:03}.txt").write_text("x")
    out = ok(make_toolset("relace", tmp_path), "view_directory", path="/")
    lines = out.splitlines()
    assert len(lines) == 251 and "cut at 250 entries" in lines[-1]
    assert {"d0/", "d1/", "d2/"} <= set(lines)  # breadth-first: top level kept


# ---------------------------------------------------------------- relace: grep_search


def test_grep_search_format_and_case(relace):
    out = ok(relace, "grep_search", query="Login")
    lines = out.splitlines()
    assert "src/pkg/auth.py:4:def Login(user, password):" in lines
    assert "src/pkg/__init__.py:1:from .auth import Login" in lines
    assert not any("models.py" in ln for ln in lines)  # 'login' lower-case: case-sensitive by default
    assert lines == sorted(lines, key=lambda s: s.split(":")[0])
    out_i = ok(relace, "grep_search", query="login", case_sensitive=False)
    assert "src/pkg/models.py:2:    name = 'login'" in out_i and "src/pkg/models.py:3:    LOGIN_MAX = 3" in out_i
    assert ".hidden" not in out_i and "bin.dat" not in out_i and SECRET not in out_i


def test_grep_search_include_exclude(relace):
    out = ok(relace, "grep_search", query="Login", include_pattern="tests/**")
    assert all(ln.startswith("tests/") for ln in out.splitlines())
    out = ok(relace, "grep_search", query="Login", exclude_pattern="*.py")
    assert out.startswith("No matches")
    out = ok(relace, "grep_search", query="Login", include_pattern="*.py", exclude_pattern="tests/**")
    assert out and not any(ln.startswith("tests/") for ln in out.splitlines())


def test_grep_search_cap_no_match_and_bad_regex(relace):
    out = ok(relace, "grep_search", query=r"^line \d+$")
    lines = out.splitlines()
    assert len(lines) == 51 and lines[0] == "src/long.txt:1:line 1" and "more than 50 matches" in lines[-1]
    assert ok(relace, "grep_search", query="zzz_nothing_here").startswith("No matches found for 'zzz_nothing_here'")
    assert "regex parse error" in bad(relace, "grep_search", {"query": "(unclosed"})
    assert "must not be empty" in bad(relace, "grep_search", {"query": ""})


# ---------------------------------------------------------------- relace: bash and report_back


def test_bash_read_only_commands(relace, repo):
    assert ok(relace, "bash", command="cat README.md | head -1") == "# Demo\n"
    assert ok(relace, "bash", command="ls src/pkg") == "__init__.py\nauth.py\nmodels.py\n"
    assert ok(relace, "bash", command="sed -n '4,5p' src/pkg/auth.py").startswith("def Login")
    assert ok(relace, "bash", command="grep -rn TOKEN_TTL src").strip() == "src/pkg/auth.py:14:    TOKEN_TTL = 3600"
    assert ok(relace, "bash", command="git log --oneline | wc -l").strip() == "1"
    assert "initial" in ok(relace, "bash", command="git show --stat HEAD")
    assert ok(relace, "bash", command="git ls-files src/pkg").splitlines() == [
        "src/pkg/__init__.py",
        "src/pkg/auth.py",
        "src/pkg/models.py",
    ]
    assert ok(relace, "bash", command="find src -name '*.py' | sort").splitlines() == [
        "src/pkg/__init__.py",
        "src/pkg/auth.py",
        "src/pkg/models.py",
    ]
    assert ok(relace, "bash", command="ls src/pkg/*.py").split() == [
        "src/pkg/__init__.py",
        "src/pkg/auth.py",
        "src/pkg/models.py",
    ]  # glob expanded, sorted
    assert ok(relace, "bash", command="cat /repo/README.md | wc -l").strip() == "3"
    assert ok(relace, "bash", command=f"wc -l {repo}/src/long.txt").strip() == f"300 {repo}/src/long.txt"
    assert ok(relace, "bash", command="grep -c line < src/long.txt").strip() == "300"
    assert ok(relace, "bash", command="rg -c Login src/pkg/auth.py").strip() == "1"
    assert (
        ok(relace, "bash", command="rg -n TOKEN_TTL") == "src/pkg/auth.py:14:    TOKEN_TTL = 3600\n"
    )  # searches the root
    assert ok(relace, "bash", command="git grep -n TOKEN_TTL") == "src/pkg/auth.py:14:    TOKEN_TTL = 3600\n"
    assert ok(relace, "bash", command="ls src | grep -c pkg").strip() == "1"
    assert (
        ok(relace, "bash", command="sed -n '/def Login/,/return/p' src/pkg/auth.py")
        .splitlines()[-1]
        .strip()
        .startswith("return")
    )
    assert ok(relace, "bash", command="pwd").strip() == str(repo)


def test_bash_exit_status_and_operators(relace):
    assert ok(relace, "bash", command="grep -r zzz_nothing src") == "(no output)"  # grep: 1 = no match
    out = bad(relace, "bash", {"command": "cat nope.txt"})
    assert "exit status 1" in out and "No such file" in out
    assert ok(relace, "bash", command="cat nope.txt 2>/dev/null || echo missing").strip() == "missing"
    assert ok(relace, "bash", command="ls README.md && echo yes").split() == ["README.md", "yes"]
    assert "No such file" in ok(relace, "bash", command="cat nope.txt 2>&1 | head -1")
    assert ok(relace, "bash", command="echo a; echo b").split() == ["a", "b"]
    assert "binary output" in ok(relace, "bash", command="cat bin.dat")
    assert "could not parse" in bad(relace, "bash", {"command": "echo 'unterminated"})


def test_report_back_acknowledges_and_validates(relace):
    out = ok(relace, "report_back", explanation="auth", files={"src/pkg/auth.py": [[4, 6], [13, 14]], "README.md": []})
    assert out == "Report received: 2 files, 2 line ranges."
    assert "bad line range" in bad(relace, "report_back", {"explanation": "x", "files": {"a.py": [[5, 2]]}})
    assert "invalid arguments" in bad(relace, "report_back", {"explanation": "x", "files": {"a.py": [[1]]}})


def test_relace_parse_report(relace):
    good = ToolCall("1", "report_back", {"explanation": "e", "files": {"/repo/a.py": [[1, 3]]}})
    rep = relace.parse_report("", [ToolCall("0", "grep_search", {"query": "x"}), good])
    assert rep.files == {"/repo/a.py": [[1, 3]]} and rep.explanation == "e"  # paths kept as given
    as_text = ToolCall("2", "report_back", json.dumps({"explanation": "t", "files": {"b.py": [[2, 2]]}}))
    assert relace.parse_report("", [as_text]).files == {"b.py": [[2, 2]]}
    assert relace.parse_report("<final_answer>a.py:1-2</final_answer>", []) is None
    assert relace.parse_report("", [ToolCall("3", "report_back", '{"files": ')]) is None
    assert relace.parse_report("", [ToolCall("4", "report_back", {"files": {"a.py": "1-2"}})]) is None


# ---------------------------------------------------------------- fastcontext: Read, Glob, Grep


def test_read_defaults_offset_limit(fc):
    out = ok(fc, "Read", path="src/pkg/auth.py")
    lines = out.splitlines()
    assert lines[0] == "```src/pkg/auth.py:1-14" and lines[4] == "4|def Login(user, password):"
    assert lines[-3:] == ["14|    TOKEN_TTL = 3600", "", "```"]  # read.py: every line keeps its newline
    out = ok(fc, "Read", path="/repo/src/long.txt", offset=10, limit=3)
    assert out == "```/repo/src/long.txt:10-12\n10|line 10\n11|line 11\n12|line 12\n\n```"
    assert "beyond the end" in bad(fc, "Read", {"path": "src/long.txt", "offset": 301})
    assert "binary file" in bad(fc, "Read", {"path": "bin.dat"})
    assert "not valid UTF-8" in ok(fc, "Read", path="latin.txt")
    assert ok(fc, "Read", path="empty.txt") == "File is empty."
    assert bad(fc, "Read", {"path": "src/long.txt", "offset": 0}) == "Error: offset must be a non-zero integer"
    assert "limit must be a positive integer" in bad(fc, "Read", {"path": "src/long.txt", "limit": 0})


def test_read_negative_offset_counts_from_the_end(fc):
    """read.py @24541aa: -2 starts at the second-to-last line; an over-long one clamps to line 1."""
    assert ok(fc, "Read", path="src/long.txt", offset=-2).splitlines()[:3] == [
        "```src/long.txt:299-300",
        "299|line 299",
        "300|line 300",
    ]
    assert ok(fc, "Read", path="src/long.txt", offset=-1, limit=1).splitlines()[:2] == [
        "```src/long.txt:300-300",
        "300|line 300",
    ]
    assert ok(fc, "Read", path="src/pkg/auth.py", offset=-999).splitlines()[1].startswith("1|")


def test_read_line_and_file_cuts(tmp_path):
    """read.py: a line over 500 characters (with its newline) is cut with '...'; more than 2000
    lines are cut to 2000 with '...' after them."""
    (tmp_path / "wide.txt").write_text("a" * 499 + "\n" + "b" * 500 + "\n" + "c" * 900 + "\n")
    (tmp_path / "tall.txt").write_text("".join(f"{i}\n" for i in range(2500)))
    ts = make_toolset("fastcontext-fork", tmp_path, ToolLimits(max_output_chars=200_000))
    lines = ok(ts, "Read", path="wide.txt").splitlines()
    assert (
        lines[1] == "1|" + "a" * 499 and lines[2] == "2|" + "b" * 500 + "..." and lines[3] == "3|" + "c" * 500 + "..."
    )
    lines = ok(ts, "Read", path="tall.txt").splitlines()
    assert lines[0] == "```tall.txt:1-2000" and lines[-3:] == ["2000|1999", "...", "```"]


@pytest.mark.parametrize("toolset", ["fastcontext", "fastcontext-fork"])
def test_read_has_no_output_cap_as_released(repo, toolset):
    """FastContext's release passes a Read's output through whole (tool.py ToolSet.call): fasbench's
    max_output_chars does not cut it (a Relace view still is: tests/test_fc_loop.py); the fork's tool
    set runs in the same loop."""
    ts = make_toolset(toolset, repo, ToolLimits(max_output_chars=300))
    out = ok(ts, "Read", path="src/long.txt")
    n_lines = sum(1 for _ in open(repo / "src" / "long.txt"))
    last = [ln for ln in out.splitlines() if "|" in ln][-1]
    assert int(last.split("|")[0]) == n_lines and "continue with" not in out and len(out) > 300


def test_glob(fc):
    """Absolute /repo paths (rg --files /repo/DIR), hidden files left out as rg does by default."""
    assert sorted(ok(fc, "Glob", pattern="*.py").splitlines()) == [
        "/repo/src/pkg/__init__.py",
        "/repo/src/pkg/auth.py",
        "/repo/src/pkg/models.py",
        "/repo/tests/test_auth.py",
    ]
    assert ok(fc, "Glob", pattern="*.py", directory="tests").splitlines() == ["/repo/tests/test_auth.py"]
    assert ok(fc, "Glob", pattern="pkg/a*.py", directory="/repo/src").splitlines() == ["/repo/src/pkg/auth.py"]
    assert sorted(ok(fc, "Glob", pattern="**/*.txt").splitlines()) == [
        "/repo/empty.txt",
        "/repo/latin.txt",
        "/repo/src/long.txt",
    ]
    assert ok(fc, "Glob", pattern="*.rs") == "No files found"
    assert "is a file" in bad(fc, "Glob", {"pattern": "*", "directory": "README.md"})


def test_glob_cap_and_modification_time_order(tmp_path):
    """glob.py @91ae3c0: ``--sort modified`` (oldest first), at most 100 paths, then its note."""
    for i in range(105):
        f = tmp_path / f"f{i:03}.py"
        f.write_text("")
        os.utime(f, (10_000 - i, 10_000 - i))  # f104 is the oldest
    out = ok(make_toolset("fastcontext-fork", tmp_path), "Glob", pattern="*.py").splitlines()
    assert len(out) == 101 and out[:2] == ["/repo/f104.py", "/repo/f103.py"] and out[99] == "/repo/f005.py"
    assert (
        out[100] == "Results are truncated: showing first 100 results. Consider using a more specific path or pattern."
    )


def test_grep_modes(fc):
    """grep.py @058b710: content by default, `rg --heading` groups, line numbers on."""
    assert ok(fc, "Grep", pattern="Login", output_mode="files_with_matches").splitlines() == [
        "/repo/src/pkg/__init__.py",
        "/repo/src/pkg/auth.py",
        "/repo/tests/test_auth.py",
    ]
    assert ok(fc, "Grep", pattern="Login", output_mode="count").splitlines() == [
        "/repo/src/pkg/__init__.py:1",
        "/repo/src/pkg/auth.py:1",
        "/repo/tests/test_auth.py:2",
    ]
    out = ok(fc, "Grep", pattern="Login", path="src")
    assert out.splitlines() == [
        "/repo/src/pkg/__init__.py",
        "1:from .auth import Login",
        "",
        "/repo/src/pkg/auth.py",
        "4:def Login(user, password):",
    ]
    assert ok(fc, "Grep", pattern="Login", path="src/pkg/auth.py", **{"-n": False}).splitlines() == [
        "/repo/src/pkg/auth.py",
        "def Login(user, password):",
    ]
    assert ok(
        fc, "Grep", pattern="login", **{"-i": True}, glob="*.py", output_mode="files_with_matches"
    ).splitlines() == [
        "/repo/src/pkg/__init__.py",
        "/repo/src/pkg/auth.py",
        "/repo/src/pkg/models.py",
        "/repo/tests/test_auth.py",
    ]
    assert ok(fc, "Grep", pattern="login", type="py", output_mode="files_with_matches").splitlines() == [
        "/repo/src/pkg/models.py",
        "/repo/tests/test_auth.py",
    ]
    assert "unrecognized file type" in bad(fc, "Grep", {"pattern": "x", "type": "nosuchtype"})


def test_grep_multiline(fc):
    out = ok(fc, "Grep", pattern=r"class Auth:\n\s+TOKEN", multiline=True)
    assert out.splitlines() == ["/repo/src/pkg/auth.py", "13:class Auth:", "14:    TOKEN_TTL = 3600"]
    assert ok(fc, "Grep", pattern=r"class Auth:\s+TOKEN", multiline=True).splitlines()[1:] == [
        "13:class Auth:",
        "14:    TOKEN_TTL = 3600",
    ]
    assert ok(fc, "Grep", pattern=r"class Auth:\s+TOKEN") == "No matches found"  # one line at a time


def test_grep_context_and_head_limit(fc):
    out = ok(fc, "Grep", pattern="TOKEN_TTL", output_mode="content", **{"-B": 1})
    assert out.splitlines() == ["/repo/src/pkg/auth.py", "13-class Auth:", "14:    TOKEN_TTL = 3600"]
    out = ok(fc, "Grep", pattern="def check", output_mode="content", path="src/pkg/auth.py", **{"-A": 1})
    assert out.splitlines() == [
        "/repo/src/pkg/auth.py",
        "9:def check(user, password):",
        '10-    return password == os.environ.get("PW")',
    ]
    out = ok(fc, "Grep", pattern="Auth", output_mode="content", path="src/pkg/auth.py", **{"-C": 1})
    assert out.splitlines() == ["/repo/src/pkg/auth.py", "12-", "13:class Auth:", "14-    TOKEN_TTL = 3600"]
    out = ok(fc, "Grep", pattern="line", output_mode="content", head_limit=5)
    assert len(out.splitlines()) == 6 and out.splitlines()[-1] == "Results truncated to first 5 lines"
    many = ok(fc, "Grep", pattern="line", path="src/long.txt")  # no head_limit: 100 lines
    assert len(many.splitlines()) == 101 and many.splitlines()[-1] == "Results truncated to first 100 lines"
    assert ok(fc, "Grep", pattern="line", path="src/long.txt", head_limit=0) == many  # 0 = the default
    assert ok(fc, "Grep", pattern="zzz_none") == "No matches found"
    assert "does not exist" in bad(fc, "Grep", {"pattern": "x", "path": "nope"})
    assert "invalid arguments" in bad(fc, "Grep", {"pattern": "x", "output_mode": "lines"})
    assert "invalid arguments" in bad(fc, "Grep", {"pattern": "x", "-A": "2"})


# ---------------------------------------------------------------- fastcontext: the answer block


def test_parse_final_answer_lenient_forms():
    """fasbench's lenient reading (reward fastcontext-lenient); the release's is tests/test_fc_answers.py."""
    text = """I looked around.
<final_answer>
Here are the locations:
- src/pkg/auth.py:4-10 (Login and check)
* `src/pkg/models.py:2` (the name)
1. src/pkg/auth.py:13-14, 20-22 (Auth class)
src/pkg/auth.py:L30-L31
  tests/test_auth.py   (the test, whole file)
README.md:9-3 reversed
e.g. this is junk
Note: more junk
</final_answer>
trailing text"""
    rep = parse_final_answer_lenient(text)
    assert rep.files == {
        "src/pkg/auth.py": [[4, 10], [13, 14], [20, 22], [30, 31]],
        "src/pkg/models.py": [[2, 2]],
        "tests/test_auth.py": [],
        "README.md": [[3, 9]],
    }
    assert "Login and check" in rep.explanation


def test_parse_final_answer_lenient_edge_cases():
    assert parse_final_answer_lenient("no block here: a.py:1-2") is None
    assert parse_final_answer_lenient("<final_answer>\n</final_answer>").files == {}
    assert parse_final_answer_lenient("<final_answer>\na.py:1-2\n").files == {"a.py": [[1, 2]]}  # unclosed
    two = "<final_answer>a.py:1-2</final_answer> then <final_answer>b.py:3-4</final_answer>"
    assert parse_final_answer_lenient(two).files == {"b.py": [[3, 4]]}  # the last block
    assert parse_final_answer_lenient("<final_answer>\na.py:1-2\na.py:1-2\na.py\n</final_answer>").files == {
        "a.py": [[1, 2]]
    }


def test_fastcontext_parse_report_uses_text(fc):
    assert fc.parse_report("<final_answer>\nx/y.py:1-2 (r)\n</final_answer>", []).files == {"x/y.py": [[1, 2]]}
    assert fc.parse_report("still searching", [ToolCall("1", "Read", {"path": "a"})]) is None


# ---------------------------------------------------------------- prompts and schemas


@pytest.mark.parametrize(
    "name, tools",
    [
        ("relace", ["view_file", "view_directory", "grep_search", "bash", "report_back"]),
        ("fastcontext", ["Read", "Glob", "Grep"]),
    ],
)
def test_prompts_and_schemas(repo, name, tools):
    ts = make_toolset(name, repo)
    assert [s["function"]["name"] for s in ts.schemas] == tools
    for s in ts.schemas:
        assert s["type"] == "function" and s["function"]["parameters"]["type"] == "object"
    sp = ts.system_prompt(max_turns=4, max_calls=8)  # the published prompts name no limits
    assert (
        ("report_back" in sp and "4-12 tools in parallel" in sp)
        if name == "relace"
        else ("<final_answer>" in sp and "Workspace Path: /repo" in sp and "README.md" in sp)
    )
    assert "where is X" in ts.user_prompt("where is X")
    assert ts.final_turn_note()  # the text: tests/test_published.py


# ---------------------------------------------------------------- malformed calls, limits, concurrency


@pytest.mark.parametrize(
    "name, args, msg",
    [
        ("view_file", '{"path": "README.md"', "not valid JSON"),
        ("view_file", "[1, 2]", "must be a JSON object"),
        ("nope", {}, "unknown tool 'nope'"),
        ("view_file", {}, "'path' is a required property"),
        ("view_file", {"path": 3}, "is not of type 'string'"),
        ("view_file", {"path": "README.md", "view_range": "1-5"}, "is not of type 'array'"),
        ("view_file", {"path": "README.md", "view_range": [1, 2, 3]}, "is too long"),
        ("view_file", {"path": "README.md", "view_range": [1.5, 2]}, "is not of type 'integer'"),
        ("view_directory", {"path": ".", "include_hidden": "yes"}, "is not of type 'boolean'"),
        ("view_file", {"path": "README.md", "lines": 5}, "Additional properties are not allowed"),
        ("grep_search", {"query": "x", "case_sensitive": None}, "is not of type 'boolean'"),
        ("bash", {"cmd": "ls"}, "'command' is a required property"),
        ("report_back", {"explanation": "x"}, "'files' is a required property"),
    ],
)
def test_malformed_relace_calls(relace, name, args, msg):
    assert msg in bad(relace, name, args)


@pytest.mark.parametrize(
    "name, args, msg",
    [
        ("read", {"path": "README.md"}, "unknown tool 'read'"),
        ("Read", {"file_path": "README.md"}, "'path' is a required property"),
        ("Grep", {"pattern": "x", "-i": "yes"}, "is not of type 'boolean'"),
        ("Grep", {"pattern": "x", "head_limit": -1}, "less than the minimum"),
        ("Glob", {"pattern": ["*.py"]}, "is not of type 'string'"),
        ("Read", {"path": "README.md", "offset": "2"}, "is not of type 'integer'"),
    ],
)
def test_malformed_fastcontext_calls(fc, name, args, msg):
    assert msg in bad(fc, name, args)


def test_too_many_calls_in_a_turn_and_call_order(relace):
    calls = [ToolCall(f"c{i}", "view_file", {"path": "src/long.txt", "view_range": [i + 1, i + 1]}) for i in range(5)]
    res = execute_calls(relace, calls, max_calls=3)
    assert [r.call_id for r in res] == ["c0", "c1", "c2", "c3", "c4"]
    assert [r.is_error for r in res] == [False, False, False, True, True]
    assert res[1].output.startswith("2   line 2") and "more than 3 tool calls" in res[3].output


def test_bash_timeout(repo):
    fifo = repo.parent / "fifo_dir"
    fifo.mkdir(exist_ok=True)
    root = fifo / "ws"
    root.mkdir(exist_ok=True)
    os.mkfifo(root / "pipe")
    ts = make_toolset("relace", root, ToolLimits(timeout_s=1))
    out = bad(ts, "bash", {"command": "cat pipe"})  # blocks waiting for a writer
    assert "timed out after 1s" in out
    assert "not a regular file" in bad(ts, "view_file", {"path": "pipe"})


def test_output_cap(repo):
    ts = make_toolset("relace", repo, ToolLimits(max_output_chars=500))
    out, err = ts.call("bash", {"command": "cat src/long.txt"})
    assert not err and len(out) < 700 and "truncated" in out
    out, err = ts.call("bash", {"command": "cat src/long.txt src/long.txt src/long.txt"})
    assert "output cut" in out or "truncated" in out


# ---------------------------------------------------------------- the CLI


def test_cli_tool_command(repo):
    runner = CliRunner()
    call = json.dumps({"name": "view_file", "arguments": {"path": "README.md", "view_range": [1, 1]}})
    r = runner.invoke(app, ["tool", "--root", str(repo), "--toolset", "relace", call])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"output": "1   # Demo\n... rest of file truncated ...", "is_error": False}
    call = json.dumps({"name": "bash", "arguments": {"command": "rm README.md"}})
    r = runner.invoke(app, ["tool", "--root", str(repo), "--toolset", "relace", call])
    assert json.loads(r.output)["is_error"] is True and (repo / "README.md").exists()


def test_cli_entry_point_subprocess(repo):
    exe = Path(sys.executable).parent / "fasbench"
    if not exe.exists():
        pytest.skip("the fasbench console script is not installed in this environment")
    call = json.dumps({"name": "Grep", "arguments": {"pattern": "TOKEN_TTL", "output_mode": "content"}})
    p = subprocess.run(
        [str(exe), "tool", "--root", str(repo), "--toolset", "fastcontext-fork", call],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"output": "/repo/src/pkg/auth.py\n14:    TOKEN_TTL = 3600", "is_error": False}


# ---------------------------------------------------------------- deterministic order on big outputs


def test_search_order_is_deterministic_beyond_the_parallel_bound(tmp_path):
    from fasbench.tools.rgsearch import PARALLEL_FACTOR, PARALLEL_MIN

    per_file = 100
    n_files = max(PARALLEL_FACTOR * 50, PARALLEL_MIN) // per_file + 10  # more lines than the parallel pass keeps
    for d in ("a", "a.b", "b"):
        (tmp_path / d).mkdir()
    for i in range(n_files):
        d = ("a", "a.b", "b")[i % 3]
        (tmp_path / d / f"f{i:03}.txt").write_text("".join(f"hit {j}\n" for j in range(1, per_file + 1)))
    (tmp_path / "a.txt").write_text("hit top\n")
    expect_files = sorted(
        (p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.txt")), key=lambda s: s.split("/")
    )
    ts = make_toolset("relace", tmp_path)
    out = ok(ts, "grep_search", query="hit").splitlines()
    first = expect_files[0]
    assert out[:50] == [f"{first}:{j}:hit {j}" for j in range(1, 51)] and "more than 50" in out[-1]
    assert first.startswith("a/")  # a/… before a.b/ and a.txt: rg's component-wise path order
    fc = make_toolset("fastcontext-fork", tmp_path)
    want = ["/repo/" + f for f in expect_files]
    assert (
        ok(fc, "Grep", pattern="hit", head_limit=1000, output_mode="files_with_matches").splitlines()[: n_files + 1]
        == want
    )
    got = ok(fc, "Grep", pattern="hit 7$", output_mode="content", head_limit=15).splitlines()[:14]
    assert got == [x for f in want[:5] for x in (f, "7:hit 7", "")][:14]
    assert ok(fc, "Grep", pattern="hit 100$", output_mode="count", head_limit=1000).splitlines() == [
        f"{f}:1" for f in want if f != "/repo/a.txt"
    ]


# ---------------------------------------------------------------- ignore rules stay inside the workspace


def _git_init(d: Path) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q"], cwd=d, check=True)


def test_ignore_rules_of_directories_above_the_root_do_not_apply(tmp_path):
    """A corpus kept inside another project's git checkout (an sdist in the project's .cache/)
    must not lose files to that project's .gitignore; a corpus that is its own checkout keeps
    its own .gitignore; .ignore files inside the workspace still apply."""
    outer = tmp_path / "project"
    (outer / "cache" / "corpus" / "build").mkdir(parents=True)
    _git_init(outer)
    (outer / ".gitignore").write_text("build/\n*.log\n")
    corpus = outer / "cache" / "corpus"
    (corpus / "build" / "gen.py").write_text("NEEDLE = 1\n")
    (corpus / "run.log").write_text("NEEDLE in a log\n")
    (corpus / "main.py").write_text("print(NEEDLE)\n")
    (corpus / ".gitignore").write_text("main.py\n")  # not a checkout: its .gitignore is only a file
    (corpus / "skip").mkdir()
    (corpus / "skip" / "s.py").write_text("NEEDLE skipped\n")
    (corpus / ".ignore").write_text("skip/\n")
    want = ["build/gen.py", "main.py", "run.log"]

    rel, fcs = make_toolset("relace", corpus), make_toolset("fastcontext-fork", corpus)
    hits = ok(rel, "grep_search", query="NEEDLE").splitlines()
    assert sorted({h.split(":")[0] for h in hits}) == want
    assert ok(fcs, "Grep", pattern="NEEDLE", output_mode="files_with_matches").splitlines() == [
        "/repo/" + w for w in want
    ]
    assert "/repo/build/gen.py" in ok(fcs, "Glob", pattern="**/*.py").splitlines()
    assert sorted({h.split(":")[0] for h in ok(rel, "bash", command="rg -l NEEDLE").splitlines()}) == want

    _git_init(corpus)  # now the corpus is a checkout: its own .gitignore applies, the project's still not
    assert ok(fcs, "Grep", pattern="NEEDLE", output_mode="files_with_matches").splitlines() == [
        "/repo/build/gen.py",
        "/repo/run.log",
    ]
    assert sorted(ok(rel, "bash", command="rg -l NEEDLE").splitlines()) == ["build/gen.py", "run.log"]
