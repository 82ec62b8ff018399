"""The tool set registry (issue 37 item 3): ``fasbench.tools.TOOLSETS`` maps a name to its class, imported on
first use; the class carries its parser and call shapes; help texts, test parametrizations and golden traces
follow the registry. A toy tool set (tests/toolset_toy.py: one file) registered by one line reaches the eval
summary, its intervals and the golden-trace machinery."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from test_golden import check_coverage, check_heuristic, check_recorded, golden
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.episodes import column_bounds
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import write_tasks
from fasbench.tools import TOOLSETS, calls_for, toolset_class
from fasbench.tools.base import Toolset
from fasbench.tools.calls import Calls

REPO = Path(__file__).resolve().parents[1]
BUILDERS = ("search", "read", "list_dir", "find", "exists", "find_any", "report")


def test_importing_the_tools_imports_no_tool_set():
    mods = [ref.partition(":")[0] for ref in TOOLSETS.values()]
    code = f"import sys, fasbench.tools; print([m for m in {mods!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", TOOLSETS)
def test_each_entry_is_a_class_with_its_parser_and_call_shapes(name):
    cls = toolset_class(name)
    assert issubclass(cls, Toolset) and cls.name == name
    assert callable(cls.observe) and issubclass(cls.calls, Calls) and cls.calls is not Calls
    c = calls_for(name)
    assert c.name == name and all(getattr(type(c), b) is not getattr(Calls, b) for b in BUILDERS)


def test_an_unknown_tool_set_is_one_line():
    for fn in (toolset_class, calls_for):
        with pytest.raises(
            ValueError,
            match=r"^(unknown tool set|no call builder for tool set) 'nope'; choose one "
            r"of relace, fastcontext, fastcontext-fork$",
        ):
            fn("nope")


def test_the_call_builders_name_no_tool_set():
    """Each tool set's call shapes live in its own class: no comparison with a name and no tool set name in
    the code of tools/calls.py (docstrings aside)."""
    tree = ast.parse((REPO / "fasbench" / "tools" / "calls.py").read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if (
            isinstance(n, ast.Compare)
            and any(isinstance(x, ast.Attribute) and x.attr == "name" for x in [n.left, *n.comparators])
        )
        or (isinstance(n, ast.Constant) and n.value in TOOLSETS and id(n) not in docs)
    ]
    assert found == []


def test_eval_help_lists_the_registry(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = CliRunner().invoke(app, ["eval", "--help"]).stdout
    assert " | ".join(TOOLSETS) in re.sub(r"\s+", " ", out)


@pytest.fixture
def toy_registered(monkeypatch):
    """The toy tool set, registered by one line."""
    monkeypatch.setitem(TOOLSETS, "toy", "toolset_toy:ToyToolset")
    return "toy"


def test_a_toy_tool_set_reaches_the_eval_summary_and_its_intervals(tmp_path, monkeypatch, toy_registered):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    base = toy_tasks(make_corpus(tmp_path / "toy"))
    tasks = [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(4)]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "run"
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(tmp_path / "tasks.jsonl"),
            "--policy",
            "heuristic:turns=3",
            "--toolset",
            "toy",
            "--out",
            str(out),
            "--workers",
            "1",
            "--backend",
            "serial",
        ],
    )
    assert r.exit_code == 0, r.output
    df = pl.read_parquet(out / "summary.parquet")
    assert df.height == len(tasks) and set(df["toolset"]) == {"toy"} and set(df["stop_reason"]) == {"reported"}
    assert df["search_calls"].sum() > 0 and df["file_f2"].max() > 0  # its calls ran, its answers were read
    lines = r.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("run ") and "tool set toy" in ln)
    row = re.compile(r"(\S+) +(-?\d+\.\d{3}|n/a) +\[(-?\d+\.\d{3}|n/a), (-?\d+\.\d{3}|n/a)\] +(\d+)")
    rows = {m.group(1): m.groups() for ln in lines[head + 3 :] if (m := row.fullmatch(ln))}
    assert {"file_f2", "turns", "reward_relace_f2"} <= set(rows)
    for name, (_, mean, lo, hi, _n) in rows.items():
        if mean == "n/a" or lo == "n/a":
            continue
        bounds = column_bounds(name)
        assert float(lo) <= float(mean) <= float(hi), name
        if bounds is not None:  # the small-n interval is clipped to the column's range
            assert bounds[0] - 5e-4 <= float(lo) and float(hi) <= bounds[1] + 5e-4, (name, lo, hi)


def test_a_toy_tool_set_gets_golden_traces(tmp_path, toy_registered):
    root = golden.build_repo(tmp_path / "repo")
    eps = golden.write(root, "toy", tmp_path)
    assert golden.golden_path("toy", tmp_path).is_file() and "toy" in golden.TOOLSETS
    check_coverage("toy", eps)
    check_recorded(root, "toy", eps)
    check_heuristic(root, "toy", eps)
