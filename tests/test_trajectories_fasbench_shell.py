"""A fasbench trace's shell tool (relace's bash, found through ``fasbench.tools.shell_command``) is
classified by its command, as an agent's shell action and ``fasbench classify`` are: the heuristic's
``rg --files -g '*.py' | grep -iE …`` is search, not ``other`` (its JSON arguments were once read as the
command). The other kinds keep their categories: view_file read, grep_search and view_directory search,
report_back other. On a real heuristic eval run (toy corpus) and on the same traces exported as ATIF."""

import pytest
from eval_fixtures import toy_copies
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits
from fasbench.records import read_traces
from fasbench.tools import tool_kind
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.classify import classify

# Every test gets a FASBENCH_CACHE of its own (conftest.py): no run is resumed from another test's.
pytestmark = pytest.mark.usefixtures("own_cache")

EXPECTED = {"read": "read", "search": "search", "list": "search", "report": "other"}


def test_heuristic_run_shell_calls_are_classified_by_their_command(tmp_path):
    run_eval(
        toy_copies(tmp_path / "toy", 3),
        "heuristic:turns=3",
        "relace",
        tmp_path / "h",
        Limits(max_turns=4),
        workers=1,
        progress=False,
    )
    traces = read_traces(tmp_path / "h" / "traces.jsonl")
    shell = [c.arguments["command"] for tr in traces for t in tr.turns for c in t.calls if c.name == "bash"]
    assert shell, "the heuristic made no bash call"
    r = CliRunner().invoke(app, ["trajectories", "export-atif", str(tmp_path / "h"), "--out", str(tmp_path / "atif")])
    assert r.exit_code == 0, r.output
    for src in (tmp_path / "h" / "traces.jsonl", tmp_path / "atif"):
        steps = analyze_paths([src], progress=False).steps
        rows = steps.filter(steps["is_call"]).select("tool", "action", "category").rows()
        bash = [(a, c) for t, a, c in rows if t == "bash"]
        assert sorted(a for a, _ in bash) == sorted(shell)  # the action is the command line itself
        assert all(c == classify(a) != "other" for a, c in bash), bash
        for tool, _, cat in rows:
            if tool != "bash":
                assert cat == EXPECTED[tool_kind("relace", tool)], (tool, cat)
        assert {t for t, _, _ in rows} >= {"bash", "grep_search", "view_file", "report_back"}
