"""Runs that are what they say (issue #27): run names derived from the parameters, a run directory
refusing a request on other tasks, resumed episodes counted and said, ``--limit N`` saying how many
ran and why fewer, task-set labels naming their split and corpus kind."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest
from eval_fixtures import toy_copies

from fasbench.data.tasksets import task_set_label
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.rundir import read_run, resume_note, run_name
from fasbench.records import Gold, Task, write_tasks

# Every test gets a FASBENCH_CACHE of its own (conftest.py): no run is resumed from another test's.
pytestmark = pytest.mark.usefixtures("own_cache")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return toy_copies(tmp_path_factory.mktemp("toy"), 4)


def test_run_names_differ_per_notebook_and_parameters():
    from fasbench.studies.search_study import study_run_name

    a = run_name("03", {"policy": "bm25", "n": 8})
    assert a == run_name("03", {"n": 8, "policy": "bm25"}) and a.startswith("03-")
    assert len({a, run_name("04", {"policy": "bm25", "n": 8}), run_name("03", {"policy": "bm25", "n": 12})}) == 3
    t = [Task(id=i, query="q", repo="r", gold=Gold(edited={})) for i in ("a", "b")]
    assert study_run_name("03", t, TOOLSET="relace") != study_run_name("04", t, TOOLSET="relace")
    assert study_run_name("03", t, TOOLSET="relace") != study_run_name("03", t[:1], TOOLSET="relace")


def test_a_run_directory_refuses_other_tasks_and_counts_what_it_resumed(tasks, tmp_path, capsys):
    out = tmp_path / "run"
    df = run_eval(tasks[:2], "heuristic:turns=2", "relace", out, workers=1, progress=False)
    assert "2 episodes run in this call, 0 of 2 resumed" in capsys.readouterr().out
    assert df["resumed"].to_list() == [False, False] and resume_note(out) is None
    assert read_run(out).tasks["n"] == 2
    # the same request resumes, and says so: nothing passes for a new run
    df = run_eval(tasks[:2], "heuristic:turns=2", "relace", out, workers=1, progress=False)
    assert "0 episodes run in this call, 2 of 2 resumed from an earlier run (" in capsys.readouterr().out
    assert df["resumed"].all() and (read_run(out).last_call()["ran"], read_run(out).last_call()["resumed"]) == (0, 2)
    assert resume_note(out).startswith("resumed: 2 of 2 episodes from an earlier run (20")
    assert pl.read_parquet(out / "summary.parquet")["resumed"].all()
    # another task set (notebook 04's 12 tasks into notebook 03's 8-task run) is refused in one line
    for other in (tasks, tasks[:1]):
        with pytest.raises(ValueError, match=r"holds a run on other tasks \(2 tasks") as e:
            run_eval(other, "heuristic:turns=2", "relace", out, workers=1, progress=False)
        assert "\n" not in str(e.value)
    assert len((out / "traces.jsonl").read_text().splitlines()) == 2  # nothing mixed in
    with pytest.raises(ValueError, match="another configuration"):
        run_eval(tasks[:2], "heuristic:turns=2", "relace", out, workers=1, progress=False, corpus="online")


@pytest.mark.slow
def test_a_run_json_from_before_the_tasks_key_is_checked_against_its_traces(tasks, tmp_path):
    out = tmp_path / "old"
    run_eval(tasks[:3], "heuristic:turns=2", "relace", out, workers=1, progress=False)
    meta = json.loads((out / "run.json").read_text())
    del meta["tasks"]  # as an older fasbench wrote it
    (out / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="holds traces of 1 tasks not asked for now"):
        run_eval(tasks[:2], "heuristic:turns=2", "relace", out, workers=1, progress=False)
    run_eval(tasks[:4], "heuristic:turns=2", "relace", out, workers=1, progress=False)  # a superset resumes
    assert (read_run(out).last_call()["ran"], read_run(out).last_call()["resumed"]) == (1, 3)


@pytest.mark.slow
def test_limit_says_how_many_ran_and_why_fewer(tasks, tmp_path):
    bad = [
        Task(id=f"nopick-{i}", query="q", repo="nobody/nothing", gold=Gold(edited={}), version="1.0") for i in range(4)
    ]
    tf = tmp_path / "tasks.jsonl"
    write_tasks(tf, [tasks[0], bad[0], tasks[1], bad[1], bad[2], tasks[2], bad[3], tasks[3]])
    out = tmp_path / "run"
    env = {**__import__("os").environ, "FASBENCH_CACHE": str(tmp_path / "cache")}
    cmd = [
        sys.executable,
        "-m",
        "fasbench.cli",
        "eval",
        "--tasks",
        str(tf),
        "--policy",
        "heuristic:turns=2",
        "--workers",
        "1",
        "--backend",
        "serial",
        "--corpus",
        "offline",
    ]
    r = subprocess.run(cmd + ["--out", str(out), "--limit", "7"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    line = f"ran 3 of the 7 asked: 4 not usable on the offline corpus (no-pick 4; reasons in {out / 'excluded.jsonl'})"
    assert line in r.stderr and line in r.stdout
    # the recorded task source says how many were usable: a label never reads as the whole set
    assert json.loads((out / "run.json").read_text())["task_source"].endswith("(first 7, 3 usable)")
    r5 = subprocess.run(cmd + ["--out", str(tmp_path / "r5")], env=env, capture_output=True, text=True, timeout=600)
    assert r5.returncode == 0, r5.stderr[-2000:]
    src = json.loads((tmp_path / "r5" / "run.json").read_text())["task_source"]
    assert src.endswith("(4 usable)") and "4 usable" in task_set_label(src, "offline"), src
    r = subprocess.run(
        cmd + ["--out", str(tmp_path / "r2"), "--limit", "20"], env=env, capture_output=True, text=True, timeout=600
    )
    assert "ran 4 of the 20 asked: the task set holds only 8; 4 not usable" in r.stdout
    # without --out, the run directory is named after the options: another limit, another directory
    r3 = subprocess.run(cmd + ["--limit", "1"], env=env, capture_output=True, text=True, timeout=600)
    r4 = subprocess.run(cmd + ["--limit", "2"], env=env, capture_output=True, text=True, timeout=600)
    d3, d4 = (next(x for x in p.stderr.splitlines() if x.startswith("run directory: "))[15:] for p in (r3, r4))
    assert d3 != d4 and "/runs/eval-heuristic-" in d3 and r3.returncode == r4.returncode == 0


def test_task_set_labels_name_split_count_and_corpus():
    assert task_set_label("swebench-lite:fasbench-test", "offline") == (
        "swebench-lite:fasbench-test (fasbench's own split, 98 of Lite's 300 test tasks; offline sdist corpora)"
    )
    # a name recorded by an older run (the bare alias) is labelled in the canonical spelling
    assert task_set_label("swebench-lite:test (first 10)", "offline") == (
        "swebench-lite:fasbench-test (fasbench's own split, 98 of Lite's 300 test tasks, first 10; offline sdist corpora)"
    )
    assert "fasbench's own dev split, 35 of Lite's 300 test tasks, 57 of Verified's 500 test tasks" in task_set_label(
        "swebench-lite+swebench-verified:fasbench-dev (8 drawn)", "offline"
    )
    assert task_set_label("swebench-lite") == "swebench-lite (all of Lite's 300 test tasks)"
    assert task_set_label("git:/x", "local") == "git:/x (mined from git history; local corpora)"
    assert task_set_label(None) == "tasks of the run"


def test_runs_table_shows_the_label_and_the_resume(tasks, tmp_path):
    from fasbench.evaluation import runs as R

    out = tmp_path / "run"
    run_eval(
        tasks[:2],
        "heuristic:turns=2",
        "relace",
        out,
        workers=1,
        progress=False,
        task_source="swebench-lite:test (first 2)",
        corpus="offline",
    )
    run_eval(
        tasks[:2],
        "heuristic:turns=2",
        "relace",
        out,
        workers=1,
        progress=False,
        task_source="swebench-lite:test (first 2)",
        corpus="offline",
    )
    row = R.runs_table([out]).row(0, named=True)
    assert row["task_source"] == (
        "swebench-lite:fasbench-test (fasbench's own split, 98 of Lite's 300 test tasks, first 2; offline sdist corpora)"
    )
    assert row["resumed"].startswith("resumed: 2 of 2 episodes from an earlier run (")
