"""`fasbench eval --shard i/n` and `fasbench eval-merge`: the shards of a run merge into the summary
of the unsharded run; bad specs and incomplete shard sets are one-line errors."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.shards import ShardError, parse_shard, select_shard
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import iter_jsonl, write_tasks

TIMING = ("wall_s", "model_s", "tool_s", "trace_id")


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    base = toy_tasks(make_corpus(d / "corpus"))
    tasks = [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(7)]
    write_tasks(d / "tasks.jsonl", tasks)
    return d / "tasks.jsonl"


def _eval(task_file, out, *extra):
    r = CliRunner().invoke(
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
            "2",
            *extra,
        ],
    )
    assert r.exit_code == 0, r.output
    return r


def _frame(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop([c for c in TIMING if c in df.columns]).sort("task_id")


@pytest.mark.slow
def test_shards_merge_into_the_unsharded_summary(task_file, tmp_path):
    _eval(task_file, tmp_path / "all")
    for i in range(3):
        _eval(task_file, tmp_path / f"s{i}", "--shard", f"{i}/3")
    sizes = [sum(1 for _ in iter_jsonl(tmp_path / f"s{i}" / "traces.jsonl")) for i in range(3)]
    assert sizes == [3, 2, 2]
    r = CliRunner().invoke(app, ["eval-merge", str(tmp_path / "merged")] + [str(tmp_path / f"s{i}") for i in (2, 0, 1)])
    assert r.exit_code == 0, r.output
    whole = pl.read_parquet(tmp_path / "all" / "summary.parquet")
    merged = pl.read_parquet(tmp_path / "merged" / "summary.parquet")
    assert merged.height == whole.height == 7
    assert _frame(merged).equals(_frame(whole))
    assert sum(1 for _ in iter_jsonl(tmp_path / "merged" / "traces.jsonl")) == 7

    # a missing shard, a shard directory reused for another shard, a bad spec: one-line errors
    r = CliRunner().invoke(app, ["eval-merge", str(tmp_path / "m2"), str(tmp_path / "s0"), str(tmp_path / "s1")])
    assert r.exit_code == 2 and "shards [2] of 3 are missing" in r.output
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(task_file),
            "--policy",
            "heuristic:turns=2",
            "--out",
            str(tmp_path / "s0"),
            "--shard",
            "1/3",
        ],
    )
    assert r.exit_code == 2 and "holds shard 0/3" in r.output
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(task_file),
            "--policy",
            "heuristic:turns=2",
            "--out",
            str(tmp_path / "x"),
            "--shard",
            "3/3",
        ],
    )
    assert r.exit_code == 2 and "need 0 <= i < n" in r.output


def test_shards_partition_the_tasks():
    items = list(range(10))
    parts = [select_shard(items, i, 4) for i in range(4)]
    assert sorted(x for p in parts for x in p) == items and [len(p) for p in parts] == [3, 3, 2, 2]
    assert parse_shard(" 1 / 4 ") == (1, 4)
    with pytest.raises(ShardError, match="expected i/n"):
        parse_shard("1-4")
