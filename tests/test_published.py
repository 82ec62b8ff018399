"""Each published element of the two harnesses pinned to its source: what the model sees (tool
schemas, system and user prompts, last-turn message), the limits and output formats, and the judge
prompt. Sources (see fasbench/tools/README.md for the table):

- Relace: https://docs.relace.ai/docs/fast-agentic-search/agent ("System Prompt", "User Prompt
  Template", "Tool Schema Definition", "Code Example with OpenAI SDK", "Tool Implementations").
- FastContext: GitHub T0mSIlver/fastcontext, src/fastcontext/agent/tool/{read,glob,grep}.py and
  grep.md, src/fastcontext/agent/system.md, src/fastcontext/agent/agent.py,
  training/fastcontext-rl/{rl_data_preprocess,agent_judge,utils,generate_with_fastcontext}.py,
  training/fastcontext-rl/agent_judge.md @0dc077f (byte-identical to training/swefc-rl/agent_judge.md @23ca8c6).

The hashes pin the verbatim texts as transcribed from those sources; the other assertions restate the
facts independently of the modules that hold the texts."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.scoring.judge import JUDGE_PROMPT
from fasbench.tools import TOOLSETS, make_toolset


def sha(x) -> str:
    return hashlib.sha256((x if isinstance(x, str) else json.dumps(x, sort_keys=True)).encode()).hexdigest()[:16]


@pytest.fixture()
def relace(tmp_path):
    (tmp_path / "README.md").write_text("# x\n")
    return make_toolset("relace", tmp_path)


@pytest.fixture()
def fc(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    return make_toolset("fastcontext", tmp_path)


def fn(ts, name) -> dict:
    return next(s["function"] for s in ts.schemas if s["function"]["name"] == name)


# ---------------------------------------------------------------- Relace


def test_relace_schemas_as_documented(relace):
    schemas = relace.schemas
    assert [s["type"] for s in schemas] == ["function"] * 5
    assert [s["function"]["name"] for s in schemas] == [
        "view_file",
        "view_directory",
        "grep_search",
        "bash",
        "report_back",
    ]
    assert all(s["function"]["strict"] is True for s in schemas)
    assert all(s["function"]["parameters"]["additionalProperties"] is False for s in schemas)
    req = {s["function"]["name"]: s["function"]["parameters"]["required"] for s in schemas}
    assert req == {
        "view_file": ["path", "view_range"],
        "view_directory": ["path", "include_hidden"],
        "grep_search": ["query", "case_sensitive", "exclude_pattern", "include_pattern"],
        "bash": ["command"],
        "report_back": ["explanation", "files"],
    }
    vf = fn(relace, "view_file")["parameters"]["properties"]
    assert vf["view_range"] == {
        "type": "array",
        "items": {"type": "integer"},
        "default": [1, 100],
        "description": vf["view_range"]["description"],
    }
    assert (
        "`[start_line, -1]` shows all lines from `start_line` to the end of the file" in vf["view_range"]["description"]
    )
    assert fn(relace, "view_directory")["parameters"]["properties"]["include_hidden"]["default"] is False
    gs = fn(relace, "grep_search")
    assert gs["parameters"]["properties"]["case_sensitive"]["default"] is True
    assert gs["parameters"]["properties"]["exclude_pattern"]["type"] == ["string", "null"]
    assert "capped at 50 matches" in gs["description"]
    assert "Output is limited to the first 250 items" in fn(relace, "view_directory")["description"]
    files = fn(relace, "report_back")["parameters"]["properties"]["files"]
    assert files["additionalProperties"]["items"] == {
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "prefixItems": [{"type": "integer"}, {"type": "integer"}],
    }
    assert fn(relace, "bash")["description"].startswith("Tool for executing bash commands.")
    assert sha([s["function"] for s in schemas]) == "c914e6b0a4ec2cd9"


def test_relace_prompts_as_documented(relace):
    sp = relace.system_prompt(max_turns=24, max_calls=12)
    assert sp.startswith("You are an AI agent whose job is to explore a code base with the provided tools")
    assert "aim to call 4-12 tools in parallel" in sp
    assert "You are suggested to explain your reasoning for the tools you choose to call before calling them." in sp
    assert sha(sp) == "c635667bff6dc17b"
    up = relace.user_prompt("Where is X?")
    assert up.startswith(
        "I have uploaded a code repository in the /repo directory.\n\nNow consider the following user query:"
    )
    assert "<user_query>\nWhere is X?\n</user_query>\n\nYou need to resolve the <user_query>." in up
    assert "excluding the base `/repo/`" in up and up.endswith("</use_parallel_tool_calls>")
    assert sha(up.replace("/repo", "{{repo_root}}", 1).replace("Where is X?", "{{prompt}}")) == "f64f6ba734ab8169"


def test_relace_outputs_and_limits(tmp_path):
    (tmp_path / "f.py").write_text("".join(f"x{i}\n" for i in range(1, 131)))
    for i in range(300):
        (tmp_path / f"d{i:03}.txt").write_text("hit\n")
    ts = make_toolset("relace", tmp_path)
    out = ts.call("view_file", {"path": "/repo/f.py", "view_range": [1, 100]})[0].splitlines()
    assert out[0] == "1   x1" and out[99] == "100   x100" and out[100] == "... rest of file truncated ..."
    assert ts.call("view_file", {"path": "f.py", "view_range": [129, -1]})[0] == "129   x129\n130   x130"
    listing = ts.call("view_directory", {"path": "/repo/", "include_hidden": False})[0].splitlines()
    assert len([ln for ln in listing if not ln.startswith("[")]) == 250
    hits = ts.call(
        "grep_search", {"query": "hit", "case_sensitive": True, "exclude_pattern": None, "include_pattern": "*.txt"}
    )[0].splitlines()
    assert len([h for h in hits if h.endswith(":1:hit")]) == 50


# ---------------------------------------------------------------- FastContext


def test_fastcontext_schemas_as_released(fc):
    """Microsoft's release @5fb8c1d (the tool package training/fastcontext-rl imports): read.md,
    glob.md, grep.md and the parameters of read.py, glob.py, grep.py, verbatim (compared whole with
    the recorded release in tests/test_fastcontext_release.py)."""
    assert [s["function"]["name"] for s in fc.schemas] == ["Read", "Glob", "Grep"]
    assert all(set(s["function"]) == {"name", "description", "parameters"} for s in fc.schemas)  # Tool.schema()
    read, glob, grep = (fn(fc, n)["parameters"] for n in ("Read", "Glob", "Grep"))
    assert "additionalProperties" not in read and read["required"] == ["path"]
    assert set(read["properties"]) == {"path", "offset", "limit"}
    assert (
        "Negative values count backwards from the end (e.g. -1 is the last line)"
        in read["properties"]["offset"]["description"]
    )
    assert glob["required"] == ["pattern"] and set(glob["properties"]) == {"directory", "pattern"}
    assert grep["required"] == ["pattern"]
    assert list(grep["properties"]) == [
        "pattern",
        "path",
        "glob",
        "output_mode",
        "-B",
        "-A",
        "-C",
        "-n",
        "-i",
        "type",
        "head_limit",
        "multiline",
    ]
    assert grep["properties"]["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert 'Defaults to "files_with_matches"' in grep["properties"]["output_mode"]["description"]  # as released
    assert "When unspecified, shows all results from ripgrep." in grep["properties"]["head_limit"]["description"]
    assert all(grep["properties"][k]["type"] == "number" for k in ("-A", "-B", "-C"))
    assert (sha(read), sha(glob), sha(grep)) == ("1d46a4f160560eef", "e4106f537c82ee85", "7de4b565c394bfd8")
    assert [sha(fn(fc, n)["description"]) for n in ("Read", "Glob", "Grep")] == [
        "c3a63b977c74c5f8",
        "f98b94af9212df7c",
        "7af6ab2cffade45c",
    ]
    assert "truncated to 500 characters" in fn(fc, "Read")["description"]  # read.md; read.py cuts at 2000
    assert "use the Agent tool instead" in fn(fc, "Glob")["description"]  # glob.md, verbatim
    assert '(e.g., ".js", "**/.tsx")' in fn(fc, "Grep")["description"]  # grep.md's malformed examples


def test_fastcontext_fork_schemas(tmp_path):
    """The fork's texts @058b710: read.md/glob.md unchanged, grep.md @6c98019, parameters @058b710."""
    fork = make_toolset("fastcontext-fork", tmp_path)
    read, glob, grep = (fn(fork, n)["parameters"] for n in ("Read", "Glob", "Grep"))
    assert (sha(read), sha(glob), sha(grep)) == ("f43efd79f64e5e7a", "e4106f537c82ee85", "6dc1ebe95eac4667")
    assert sha(fn(fork, "Grep")["description"]) == "ee33a0cf3b54b252"
    assert 'Defaults to "content"' in grep["properties"]["output_mode"]["description"]


def test_fastcontext_prompts_as_released(fc):
    from fasbench.tools.fastcontext_published import SYSTEM_PROMPT_TEMPLATE

    assert sha(SYSTEM_PROMPT_TEMPLATE) == "84cf64ae4deadb2f"
    sp = fc.system_prompt(max_turns=24, max_calls=12)
    assert sp.startswith(
        "You are a codebase exploration specialist focused exclusively on searching and analyzing existing code."
    )
    assert "followed by a `<final_answer>` tag containing the relevant file paths and line ranges." in sp
    assert "OS Version: Linux\n\nShell: bash\n\nWorkspace Path: /repo\n" in sp
    assert "The directory listing of the workspace is:\n```\nsetup.py\nsrc\n```" in sp  # `ls`: no hidden names
    assert "${" not in sp
    assert fc.user_prompt("find X") == "<query>find X</query>"  # rl_data_preprocess.py
    assert fc.final_turn_note() == (
        "Max number of turns reached. Please provide the final answer based on the information you have gathered."
    )  # agent.py


def test_fastcontext_limits_as_released(tmp_path):
    (tmp_path / "big.py").write_text("".join("hit\n" for _ in range(150)))
    ts = make_toolset("fastcontext", tmp_path)
    out = ts.call("Grep", {"pattern": "hit"})[0].splitlines()  # no output_mode: lines without numbers
    assert out[0] == "/repo/big.py" and out[1] == "hit" and len(out) == 101
    assert out[-1] == "Results truncated to first 100 lines"
    assert (
        ts.call("Grep", {"pattern": "hit", "head_limit": 150})[0].splitlines()[-1]
        == "Results truncated to first 100 lines"
    )
    for i in range(120):
        (tmp_path / f"m{i:03}.md").write_text("")
    g = ts.call("Glob", {"pattern": "*.md"})[0].splitlines()
    assert len(g) == 101 and g[-1].startswith("Results are truncated: showing first 100 results.")
    assert ts.call("Read", {"path": "big.py", "offset": -1, "limit": 1})[0] == "```big.py:1-1\n1|hit\n\n```"  # 5fb8c1d
    fork = make_toolset("fastcontext-fork", tmp_path)
    assert fork.call("Read", {"path": "big.py", "offset": -1})[0] == "```big.py:150-150\n150|hit\n\n```"
    assert fork.call("Grep", {"pattern": "hit"})[0].splitlines()[1] == "1:hit"


# ---------------------------------------------------------------- judge and CLI


def test_judge_prompt_as_released():
    assert JUDGE_PROMPT.startswith("# LLM-as-Judge: Explore Subagent Evaluation")
    assert '"score": <integer 0-10>' in JUDGE_PROMPT and "## Scoring Criteria (0-10)" in JUDGE_PROMPT
    assert sha(JUDGE_PROMPT) == "7f7222eac99ff9a4"


@pytest.mark.parametrize("name", TOOLSETS)
def test_cli_prints_the_schemas_the_model_sees(name, tmp_path):
    r = CliRunner().invoke(app, ["tool", "--toolset", name, "--schemas"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == make_toolset(name, tmp_path).schemas
    r = CliRunner().invoke(app, ["tool", "--toolset", "nope", "--schemas"])
    assert r.exit_code == 2 and "unknown tool set" in r.output


def test_released_formats_are_read_back(tmp_path):
    """The tool sets' parsers (fasbench.tools.seen, what scripted policies read) and the replay overlay
    read the released formats: Relace's `N   code` views, FastContext's Read blocks (negative offsets
    too) and `rg --heading` Grep groups."""
    from fasbench.records import ToolCall
    from fasbench.replay.seen import grep_hits, viewed_ranges
    from fasbench.tools import seen

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import os\n\ndef target():\n    return os.sep\n")
    (tmp_path / "b.py").write_text("target = 1\n")
    rel, fc = make_toolset("relace", tmp_path), make_toolset("fastcontext", tmp_path)
    call = ToolCall("v", "view_file", {"path": "pkg/a.py", "view_range": [3, 4]})
    assert seen("relace", call, rel.execute(call)).text == {"pkg/a.py": {3: "def target():", 4: "    return os.sep"}}
    call = ToolCall("g", "Grep", {"pattern": "target", "-C": 1, "output_mode": "content"})
    got = seen("fastcontext", call, fc.execute(call))
    assert got.shown.hits == [["b.py", 1], ["pkg/a.py", 3]]
    assert got.text == {"b.py": {1: "target = 1"}, "pkg/a.py": {2: "", 3: "def target():", 4: "    return os.sep"}}
    assert got.shown.ranges == {"pkg/a.py": [[2, 2], [4, 4]]}  # the context lines
    call = ToolCall("g", "Grep", {"pattern": "target", "-C": 1, "output_mode": "content"})
    res = fc.execute(call)
    assert grep_hits("fastcontext", call, res) == {"b.py": [1], "pkg/a.py": [2, 3, 4]}
    call = ToolCall("l", "Glob", {"pattern": "*.py"})
    assert sorted(seen("fastcontext", call, fc.execute(call)).shown.paths) == ["b.py", "pkg/a.py"]
    call = ToolCall("r", "Read", {"path": "/repo/pkg/a.py", "offset": -2})  # 5fb8c1d: from line 1
    assert viewed_ranges("fastcontext", call, fc.execute(call)) == ("pkg/a.py", [[1, 4]])
    fork = make_toolset("fastcontext-fork", tmp_path)
    assert viewed_ranges("fastcontext-fork", call, fork.execute(call)) == ("pkg/a.py", [[3, 4]])
