"""The typed run directory (issue 37 item 2): run.json as one validated record with one migration of
older layouts, the headline reward recorded (a resume asking for another is refused), the shipped
layout-1 example run still read by `fasbench runs`, compare and replay with its numbers, and one task
plan shared by the CLI and the notebooks."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from eval_fixtures import toy_copies
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation import runs as R
from fasbench.evaluation.plan import plan_run
from fasbench.evaluation.rundir import LAYOUT, RunMeta, load_summary, migrate, read_run
from fasbench.records import iter_jsonl, write_tasks
from fasbench.replay import example_run, load_run_episodes

pytestmark = pytest.mark.usefixtures("own_cache")  # no run resumed from another test's cache


@pytest.fixture
def task_file(tmp_path):
    f = tmp_path / "tasks.jsonl"
    write_tasks(f, toy_copies(tmp_path / "toy", 4))
    return f


def _eval(task_file, out, *extra):
    return CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(task_file),
            "--policy",
            "heuristic:turns=2",
            "--out",
            str(out),
            "--workers",
            "1",
            "--backend",
            "serial",
            *extra,
        ],
    )


def test_the_shipped_layout_1_example_run_reads_with_its_numbers(tmp_path):
    """The example run was written by an earlier release (no layout, no headline reward, no tasks key):
    it migrates on read, its file stays as shipped, and runs / compare / replay give its numbers."""
    ex = example_run().path
    raw = json.loads((ex / "run.json").read_text())
    assert "layout" not in raw and "reward" not in raw  # the fixture is layout 1
    meta = read_run(ex)
    assert (meta.layout, meta.reward, meta.report_contract, meta.tasks) == (LAYOUT, "relace", "free", None)
    assert (meta.policy, meta.limits_label()) == ("heuristic:turns=3", "6 turns × 12 calls")
    for name in ("a", "b"):
        shutil.copytree(ex, tmp_path / name)
    r = CliRunner().invoke(app, ["runs", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    assert "0.683 [0.315, 1.000]" in r.stdout and "0.833 [0.405, 1.000]" in r.stdout  # file_f2, all_gold_at_5
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "file_f2,turns"])
    assert r.exit_code == 0, r.output
    assert "tool set relace · limits 6 turns × 12 calls" in r.stdout
    r = CliRunner().invoke(app, ["replay", str(tmp_path / "a")])
    assert r.exit_code == 0 and "run a · task django__django-15252" in r.stdout, r.output
    eps = load_run_episodes(tmp_path / "a")
    assert eps.meta.task_source == "swebench-lite:test (first 8)" and len(eps.traces) == 6
    assert (tmp_path / "a" / "run.json").read_text() == (ex / "run.json").read_text()  # reading never rewrites
    assert R.runs_table([tmp_path / "a"])["file_f2"][0] == pytest.approx(load_summary(ex)["file_f2"].mean())


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("max_turns", "6", "field 'max_turns' must be an integer"),
        ("reward", 3, "field 'reward' must be a string"),
        ("tasks", {"n": 2}, "field 'tasks' must be an object {n: integer, key: string}"),
        ("shard", {"index": 0, "count": True, "tasks_before_sharding": 3}, "field 'shard' must be an object"),
        ("calls", [1], "field 'calls' must be a list of objects"),
        ("layout", 9, "field 'layout' must be an integer 1…2"),
    ],
)
def test_a_bad_run_json_field_is_one_line_naming_it(tmp_path, field, value, words):
    shutil.copytree(example_run().path, tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    (tmp_path / "r" / "run.json").write_text(json.dumps({**meta, field: value}))
    with pytest.raises(ValueError, match=words) as e:
        read_run(tmp_path / "r")
    assert "\n" not in str(e.value)
    r = CliRunner().invoke(app, ["runs", str(tmp_path / "r")])
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output, r.output


def test_migrate_lifts_layout_1_and_keeps_unknown_keys():
    old = {"policy": "bm25", "toolset": "relace", "max_turns": 6, "max_calls": 12, "note": "kept"}
    new = migrate(old, {"index": 1, "count": 2, "tasks_before_sharding": 5})
    assert old == {"policy": "bm25", "toolset": "relace", "max_turns": 6, "max_calls": 12, "note": "kept"}
    meta = RunMeta.from_dict(new)
    assert (meta.layout, meta.reward, meta.report_contract, meta.shard["index"]) == (2, "relace", "free", 1)
    assert meta.extra == {"note": "kept"} and meta.to_dict()["note"] == "kept"
    assert migrate({"layout": 2, "reward": "fastcontext"})["reward"] == "fastcontext"  # layout 2: as recorded


def test_a_resume_asking_for_another_reward_is_refused_in_one_line(task_file, tmp_path):
    out = tmp_path / "run"
    assert _eval(task_file, out).exit_code == 0
    assert read_run(out).reward == "relace"
    before = (out / "traces.jsonl").read_text()
    r = _eval(task_file, out, "--reward", "fastcontext")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    line = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "headline reward is relace, not fastcontext" in line[0]
    assert (out / "traces.jsonl").read_text() == before and read_run(out).reward == "relace"
    assert pl.read_parquet(out / "summary.parquet")["reward"].equals(
        pl.read_parquet(out / "summary.parquet")["reward_relace"]
    )
    # a run directory of layout 1 (no reward recorded): its headline is relace, so the same refusal
    meta = json.loads((out / "run.json").read_text())
    for k in ("layout", "reward"):
        del meta[k]
    (out / "run.json").write_text(json.dumps(meta))
    assert _eval(task_file, out, "--reward", "fastcontext").exit_code == 2
    assert _eval(task_file, out).exit_code == 0  # the same request resumes, and run.json becomes layout 2
    now = json.loads((out / "run.json").read_text())
    assert (now["layout"], now["reward"]) == (LAYOUT, "relace")
    other = tmp_path / "fc"  # another headline in its own directory: recorded, and compare refuses `reward`
    assert _eval(task_file, other, "--reward", "fastcontext").exit_code == 0
    assert read_run(other).reward == "fastcontext"
    with pytest.raises(R.RunError, match=r"different rewards \(run: relace, fc: fastcontext\)"):
        R.compare_runs([out, other], ["reward"])


def test_layout_1_shards_still_merge(task_file, tmp_path):
    for i in range(2):
        assert _eval(task_file, tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
        meta = json.loads((tmp_path / f"s{i}" / "run.json").read_text())
        assert meta["shard"] == {"index": i, "count": 2, "tasks_before_sharding": 4}
        (tmp_path / f"s{i}" / "shard.json").write_text(json.dumps(meta.pop("shard")))  # as layout 1 kept it
        del meta["layout"], meta["reward"]
        (tmp_path / f"s{i}" / "run.json").write_text(json.dumps(meta))
    r = CliRunner().invoke(app, ["eval-merge", str(tmp_path / "m"), str(tmp_path / "s1"), str(tmp_path / "s0")])
    assert r.exit_code == 0, r.output
    assert load_summary(tmp_path / "m").height == 4 and read_run(tmp_path / "m").shard is None
    r = _eval(task_file, tmp_path / "s0", "--shard", "1/2")
    assert r.exit_code == 2 and "holds shard 0/2 of 4 tasks, not shard 1/2 of 4 tasks" in r.output


def test_plan_run_is_the_cli_task_choice_for_notebooks(task_file, tmp_path):
    said: list[str] = []
    plan = plan_run(str(task_file), "heuristic:turns=2", limit=3, say=said.append)
    assert [t.id for t in plan.tasks] == [d["id"] for d in list(iter_jsonl(task_file))[:3]]
    assert said[0] == f"run directory: {plan.out}" and plan.task_source.endswith(" (first 3)")
    df = plan.run(workers=1, backend="serial", progress=False)
    assert df.height == 3 and read_run(plan.out).task_source == plan.task_source
    r = CliRunner().invoke(
        app, ["eval", "--tasks", str(task_file), "--policy", "heuristic:turns=2", "--limit", "3", "--workers", "1"]
    )
    assert r.exit_code == 0 and f"run directory: {plan.out}" in r.stderr  # one run name for both
    assert "3 of 3 resumed" in r.output
    with pytest.raises(ValueError, match="--corpus must be offline or online, got 'cloud'"):
        plan_run(str(task_file), "bm25", corpus="cloud")
    drawn = plan_run(plan.tasks, "heuristic:turns=2", ids=[plan.tasks[1].id], task_source="drawn", say=said.append)
    assert [t.id for t in drawn.tasks] == [plan.tasks[1].id] and drawn.task_source == "drawn"


def test_a_run_directory_of_another_kind_checks_its_config(tmp_path):
    from dataclasses import dataclass

    from fasbench.evaluation.rundir import check_config

    @dataclass
    class Cfg:
        main: str
        turns: int = 6

    assert check_config(tmp_path / "e2e", Cfg("m"))["main"] == "m"
    assert check_config(tmp_path / "e2e", Cfg("m"))["code_version"]  # the same request resumes
    with pytest.raises(ValueError, match=r"another configuration \{'turns': \(6, 3\)\}"):
        check_config(tmp_path / "e2e", Cfg("m", 3))


def test_a_summary_from_before_the_failed_column_reads_its_failures_from_stop_reason(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    pl.DataFrame(
        {
            "task_id": ["a", "b", "c"],
            "policy": ["p"] * 3,
            "file_f2": [1.0, 0.0, 0.5],
            "acc_at_5": [1.0, 0.0, 1.0],
            "stop_reason": ["reported", "policy_error", "reported"],
        }
    ).write_parquet(d / "summary.parquet")
    df = load_summary(d)
    assert df["failed"].to_list() == [False, True, False] and df["all_gold_at_5"].to_list() == [1.0, 0.0, 1.0]
    row = R.runs_table([d], ["file_f2"]).row(0, named=True)
    assert (row["n"], row["failed"], row["file_f2"]) == (2, 1, 0.75)
