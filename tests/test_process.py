"""Process measures (fasbench/scoring/process.py) on real episodes: a scripted episode through the real harness
and tools whose every measure is computed by hand, the shipped example run's two counts (issue 29), the
grounded rewards, and run-to-run noise (pass^k, flip rate, the noise floor of ``fasbench compare``) on
repeated real runs of a stochastic policy."""

from __future__ import annotations

import math

import polars as pl
import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation import runs as R
from fasbench.evaluation.episodes import episode_row
from fasbench.evaluation.evaluate import run_eval
from fasbench.harness import Limits, run_episode
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Gold, Reply, Task
from fasbench.replay import example_run
from fasbench.replay.overlay import file_overlay, overlay_totals
from fasbench.scoring.process import PROCESS_COLUMNS, process_row
from fasbench.tools import calls_for


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))


def _episode(tmp_path):
    (tmp_path / "a.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 31)))  # 30 lines
    (tmp_path / "b.py").write_text("".join(f"y{i} = {i}\n" for i in range(1, 11)))  # 10 lines
    task = Task(id="t", repo="r", query="q", root=str(tmp_path), gold=Gold(edited={"a.py": [[26, 27]]}))
    c = calls_for("relace")
    script = [
        # turn 1: a.py 1-10 (10 new), the same call again (nothing new, a duplicate), a listing (no line);
        # the text holds a call block the parser never saw (a lost call)
        Reply(
            text='<tool_call>{"name": "view_file", "arguments": ',
            calls=[c.read("c1", "a.py", 1, 10), c.read("c2", "a.py", 1, 10), c.list_dir("c3", ".")],
        ),
        # turn 2: a.py 5-15 (5 new of 11), a file that does not exist (an error: nothing)
        Reply(calls=[c.read("c4", "a.py", 5, 15), c.read("c5", "missing.py", 1, 5)]),
        # turn 3: the report: a.py 1-12 (shown) and 25-28 (never shown), b.py 1-3 (never shown), an invented file
        c.report("c6", {"a.py": [[1, 12], [25, 28]], "b.py": [[1, 3]], "ghost.py": [[1, 5]]}, "found it"),
    ]
    tr = run_episode(task, ScriptedPolicy(script), "relace", Limits(max_turns=5))
    assert tr.stop_reason == "reported" and tr.n_turns == 3
    return task, tr


def test_every_measure_against_a_hand_computed_episode(tmp_path):
    task, tr = _episode(tmp_path)
    p = process_row(tr, task)
    assert set(p) == set(PROCESS_COLUMNS)
    assert p["search_calls"] == 5 and p["lines_shown"] == 15  # a.py 1-15
    assert p["new_lines_per_call"] == 15 / 5
    assert p["calls_nothing_new"] == 3 and p["calls_nothing_new_share"] == 3 / 5  # the repeat, the listing, the error
    assert p["duplicate_calls"] == 1
    # ContextBench redundancy: lines each call showed 10, 10, 0, 11, 0; of them already shown 0, 10, 0, 6, 0
    assert p["context_redundancy"] == pytest.approx(16 / 31)
    # cited: a.py 12 + 4, b.py 3, ghost.py 5 = 24; never shown: a.py 25-28, b.py 1-3, ghost.py 1-5 = 12
    assert p["cited_lines"] == 24 and p["cited_lines_unseen"] == 12 and p["unseen_cited_share"] == 0.5
    assert p["cited_paths_missing"] == 1 and p["reported_without_calls"] is False and p["calls_lost"] == 1
    assert p["explore_context_efficiency"] is None  # no SWE-Explore gold
    # the episode table carries the columns, and the replay overlay counts the same unseen lines
    row = episode_row(tr, task)
    assert {k: row[k] for k in PROCESS_COLUMNS} == p
    assert overlay_totals(file_overlay(tr, task))["cited_unseen"] == 12
    # without the task: the workspace is unknown, so missing paths are null (the rest is the trace's own)
    bare = process_row(tr)
    assert bare["cited_paths_missing"] is None and bare["calls_nothing_new"] == 3


def test_grounded_rewards_count_only_citations_that_were_shown(tmp_path):
    task, tr = _episode(tmp_path)
    row = episode_row(tr, task)
    # relace-f2: 3 cited files, 1 gold: P = 1/3, R = 1, F2 = 5·(1/3) / (4/3 + 1) = 5/7; 3 turns: no penalty
    assert row["reward_relace_f2"] == pytest.approx(5 / 7)
    # grounded: only a.py 1-12 was shown (b.py and ghost.py dropped): P = R = 1
    assert row["reward_grounded_relace_f2"] == pytest.approx(1.0)
    # line-f1: 2 of 24 cited lines are gold (26-27): P = 1/12, R = 1, F1 = 2/13; grounded: a.py 1-12, no gold line
    assert row["reward_line_f1"] == pytest.approx(2 / 13) and row["reward_grounded_line_f1"] == 0.0


def test_shipped_example_run_reproduces_the_issue_counts():
    """Issue 29: on data/examples/heuristic-swebench-lite, 14 of 69 calls showed nothing new and 257 of
    644 cited lines were never shown (pooled over the 6 episodes)."""
    ex = example_run()
    rows = [process_row(tr) for tr in ex.traces]
    assert len(rows) == 6
    assert sum(r["search_calls"] for r in rows) == 69 and sum(r["calls_nothing_new"] for r in rows) == 14
    assert sum(r["cited_lines"] for r in rows) == 644 and sum(r["cited_lines_unseen"] for r in rows) == 257
    assert sum(r["duplicate_calls"] for r in rows) == 0 and not any(r["reported_without_calls"] for r in rows)


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    """Three real runs of one stochastic policy (heuristic at temperature 1, seeds 1-3) and one of
    another, on 5 toy tasks, in one folder."""
    base = tmp_path_factory.mktemp("noise")
    mp = pytest.MonkeyPatch()
    mp.setenv("FASBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
    tasks = toy_tasks(make_corpus(base / "toy"))
    for s in (1, 2, 3):
        run_eval(
            tasks,
            f"heuristic:temperature=1.0,seed={s}",
            "relace",
            base / "all" / f"h{s}",
            workers=1,
            progress=False,
            task_source="toy",
        )
    run_eval(tasks, "heuristic:turns=2", "relace", base / "all" / "other", workers=1, progress=False, task_source="toy")
    yield base / "all"
    mp.undo()


@pytest.mark.slow
def test_pass_hat_k_and_flip_rate_of_repeated_runs(repeated):
    metric, thr = "calls_nothing_new_share", 0.2
    vals = [R.load_summary(repeated / f"h{s}").select("task_id", metric) for s in (1, 2, 3)]
    tasks = vals[0]["task_id"].to_list()
    c = [sum(float(v.filter(pl.col("task_id") == t)[metric][0]) >= thr for v in vals) for t in tasks]
    table = R.noise_table([repeated], metric, thr)
    assert table.height == 1  # only the seeded policy was run more than once
    r = table.row(0, named=True)
    assert r["policy"] == "heuristic:temperature=1.0" and r["runs"] == 3 and r["tasks"] == 5
    # τ-bench: pass^k = mean over tasks of C(c, k) / C(3, k); flip rate = mean of c(3 − c) / 3
    for k in (1, 2, 3):
        assert r[f"pass^{k}"] == pytest.approx(sum(math.comb(x, k) for x in c) / math.comb(3, k) / len(c))
    assert r["flip_rate"] == pytest.approx(sum(x * (3 - x) / 3 for x in c) / len(c))
    assert R.pass_hat_k([1, 0, 2, 3, 3], 3, 2) == pytest.approx(7 / 15) and R.flip_rate(
        [1, 0, 2, 3, 3], 3
    ) == pytest.approx(4 / 15)
    assert "no policy was run more than once" in R.noise_text(R.noise_table([repeated / "other"]))


@pytest.mark.slow
def test_compare_prints_a_noise_floor_from_repeated_runs(repeated):
    m = "calls_nothing_new_share"
    means = [float(R.load_summary(repeated / f"h{s}")[m].mean()) for s in (1, 2, 3)]
    floor = max(abs(a - b) for i, a in enumerate(means) for b in means[i + 1 :])
    cmp = R.compare_runs([repeated / "other", repeated / "h1"], [m, "file_f2"])
    row = cmp.filter(pl.col("metric") == m).row(0, named=True)
    assert row["noise_floor"] == pytest.approx(floor) and row["noise_pairs"] == 3
    assert "largest |mean difference| between two runs of one policy" in R.compare_note(cmp)
    # without repeats among the runs looked at: no floor, and the note says why
    alone = R.compare_runs([repeated / "other", repeated / "h1"], [m], repeats=[repeated / "other", repeated / "h1"])
    assert alone["noise_floor"][0] is None and "no repeated runs" in R.compare_note(alone)
    res = CliRunner().invoke(app, ["compare", str(repeated / "other"), str(repeated / "h1"), "--metric", m])
    assert res.exit_code == 0 and "noise floor" in res.output and f"{floor:.3f}" in res.output
    res = CliRunner().invoke(app, ["runs", str(repeated), "--success", m, "--threshold", "0.2"])
    assert res.exit_code == 0 and "run-to-run noise of repeated runs" in res.output and "pass^3" in res.output


def test_swe_explore_context_efficiency_by_hand(tmp_path):
    """eval.py's context efficiency: |pred ∩ (core ∪ optional)| / |pred| over the top 5 regions."""
    from dataclasses import replace

    task, tr = _episode(tmp_path)
    gold = replace(
        task.gold,
        explore={
            "core_files": ["a.py"],
            "core_regions": [["a.py", 1, 5]],
            "optional_files": ["a.py"],
            "optional_regions": [["a.py", 26, 30]],
        },
    )
    # predicted: a.py 1-12 and 25-28, b.py 1-3, ghost.py 1-5 = 24 lines; useful: a.py 1-5 and 26-28 = 8
    assert process_row(tr, replace(task, gold=gold))["explore_context_efficiency"] == pytest.approx(8 / 24)
