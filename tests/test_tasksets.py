"""One way to name a task set (fasbench/data/tasksets.py): SOURCE[:SPLIT], a Task JSONL file[:SPLIT] and
git:PATH, each loaded; a bad name is one line on stderr and exit 2 from every command taking tasks."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from git_repo import three_fixes
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.data import SOURCES
from fasbench.data.tasksets import TaskSetError, load_task_set, parse_task_set
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import read_tasks, write_tasks


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("ts")
    base = toy_tasks(make_corpus(d / "corpus"))
    tasks = [replace(t, split=s) for t, s in zip(base, ["dev", "train", "dev", None, "test"])]
    p = d / "tasks.jsonl"
    write_tasks(p, tasks)
    return p, tasks


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return three_fixes(tmp_path_factory.mktemp("proj"))


def test_source_with_and_without_split():
    ts = parse_task_set("swebench-lite:dev")
    assert (ts.kind, ts.target, ts.split) == ("source", "swebench-lite", "dev")
    dev = load_task_set("swebench-lite:dev")
    assert dev and {t.split for t in dev} == {"dev"}
    assert [t.id for t in load_task_set("swebench-lite", split="dev")] == [t.id for t in dev]
    assert len(load_task_set("swebench-lite:dev", limit=3)) == 3
    assert parse_task_set("swebench-lite").split is None
    with pytest.raises(TaskSetError, match="names split 'dev' but split 'test'"):
        load_task_set("swebench-lite:dev", split="test")


def test_fasbench_splits_are_named_as_such_and_the_bare_names_are_noted_aliases(capsys, monkeypatch):
    from fasbench.data import tasksets as T

    monkeypatch.setattr(T, "_NOTED", set())
    ts = parse_task_set("swebench-lite:fasbench-test")
    assert (ts.kind, ts.target, ts.split, ts.spec) == ("source", "swebench-lite", "test", "swebench-lite:fasbench-test")
    assert capsys.readouterr().err == ""  # the canonical name says nothing
    alias = parse_task_set("swebench-lite:test")
    assert (alias.split, alias.spec) == ("test", "swebench-lite:fasbench-test")  # recorded canonically
    parse_task_set("swebench-verified:test")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "fasbench's own split" in err[0] and "`swebench-lite` (no split)" in err[0]
    assert [t.id for t in load_task_set("swebench-lite:test")] == [t.id for t in load_task_set(ts)]
    assert len(load_task_set("swebench-lite")) == 300  # the official Lite test set, whole
    assert len(load_task_set("swebench-lite", split="fasbench-dev")) == len(load_task_set("swebench-lite:dev"))
    assert T.canonical_name("swebench-lite+swebench-verified:dev (8 drawn)") == (
        "swebench-lite+swebench-verified:fasbench-dev (8 drawn)"
    )
    assert T.canonical_name("git:/x:test") == "git:/x:test"
    with pytest.raises(TaskSetError, match="choose one of fasbench-test, fasbench-dev, fasbench-train"):
        parse_task_set("swebench-lite:official")


def test_file_with_split_and_ids(task_file):
    p, tasks = task_file
    assert [t.id for t in load_task_set(str(p))] == [t.id for t in tasks]
    dev = load_task_set(f"{p}:dev")  # tasks of that split, and those that carry none
    assert [t.split for t in dev] == ["dev", "dev", None]
    ids = [tasks[2].id, tasks[0].id]
    assert [t.id for t in load_task_set(str(p), ids=ids)] == ids
    with pytest.raises(TaskSetError, match="ids not in task set"):
        load_task_set(str(p), ids=["nope"])


def test_git_history(repo):
    ts = parse_task_set(f"git:{repo}")
    assert ts.kind == "git"
    tasks = load_task_set(f"git:{repo}")
    assert len(tasks) == 3 and all(t.split in ("train", "dev", "test") for t in tasks)
    assert {t.query for t in tasks} == {"Fix line 3", "Fix line 10", "Fix line 17"}


@pytest.mark.parametrize(
    "bad, says",
    [
        ("swebench-lit", "neither an existing JSONL file"),
        ("swebench-lite:final", "unknown split 'final'"),
        ("missing.jsonl", "file"),
        ("git:/no/such/repo", "is not a folder"),
        ("", "task set must be named"),
    ],
)
def test_bad_names_are_one_line(bad, says, tmp_path):
    with pytest.raises(TaskSetError, match=says) as e:
        parse_task_set(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(TaskSetError, match="is a folder"):
        parse_task_set(str(tmp_path))
    assert all(s in str(e.value) for s in SOURCES) or bad.startswith("git:") or bad == "swebench-lite:final"


def test_every_command_taking_tasks_says_one_line(tmp_path, task_file):
    runner = CliRunner()
    out = str(tmp_path / "o")
    for args in (
        ["eval", "--tasks", "swebench-lit", "--policy", "heuristic", "--out", out],
        ["eval", "--tasks", "swebench-lite:final", "--policy", "heuristic", "--out", out],
        ["data", "tasks", "--source", "swebench-lit", "--out", out],
        ["data", "tasks", "--source", "git:/no/such/repo", "--out", out],
        ["data", "corpus", "--tasks", "swebench-lit"],
        ["data", "corpus", "--tasks", str(tmp_path)],
    ):
        r = runner.invoke(app, args)
        err = r.stderr if r.stderr else r.output
        assert r.exit_code == 2, (args, r.output)
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: task set"), (args, err)
    # a real process: no traceback
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fasbench.cli",
            "eval",
            "--tasks",
            "swebench-verified:tset",
            "--policy",
            "heuristic",
            "--out",
            out,
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: task set 'swebench-verified:tset': unknown split 'tset'; choose one of fasbench-test, fasbench-dev, fasbench-train"
    ]


def test_data_tasks_writes_a_task_set(tmp_path, task_file):
    p, tasks = task_file
    r = CliRunner().invoke(app, ["data", "tasks", "--source", f"{p}:dev", "--out", str(tmp_path / "dev.jsonl")])
    assert r.exit_code == 0, r.output
    assert [t.id for t in read_tasks(tmp_path / "dev.jsonl")] == [t.id for t in tasks if t.split in ("dev", None)]


def test_the_canonical_split_names_reach_records_labels_and_configs():
    """run.json records the canonical name, an older run's alias groups with it, drawn study tasks
    are named canonically and the RL config's split takes both spellings."""
    from fasbench.evaluation.rundir import RunMeta
    from fasbench.evaluation.runs import policy_key
    from fasbench.rl.config import RLConfig
    from fasbench.studies.search_study import task_source_of

    old = RunMeta(policy="bm25", toolset="relace", task_source="swebench-lite:test (first 2)")
    new = RunMeta(policy="bm25", toolset="relace", task_source="swebench-lite:fasbench-test (first 2)")
    assert policy_key(old) == policy_key(new)
    drawn = load_task_set("swebench-lite:fasbench-dev", limit=2)
    assert task_source_of(drawn).endswith(":fasbench-dev (2 drawn)")
    for split in ("train", "fasbench-train"):
        assert RLConfig(split=split).split == split
    with pytest.raises(ValueError, match="fasbench's own splits"):
        RLConfig(split="official")
