"""The episode table (fasbench/evaluation/episodes.py): one row builder and one column vocabulary for evaluation
summaries, the trace browser, SFT and RL before/after tables; a trace without a report and a
failed episode get rows; evaluation's summary.parquet is that table."""

from __future__ import annotations

import math

import polars as pl
import pytest

from fasbench.evaluation.episodes import (
    COLUMNS,
    EMPTY_SCHEMA,
    episode_row,
    episode_table,
    part_columns,
    reward_column,
    tool_schemas,
)
from fasbench.evaluation.evaluate import run_eval, safe_episode
from fasbench.harness import Limits, Policy, run_episode
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Trace
from fasbench.scoring.localization import localization_columns
from fasbench.scoring.reward import REWARDS


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))


def _names(toolset="relace"):
    return [s["function"]["name"] for s in tool_schemas(toolset)]


class Boom(Policy):
    name = "boom"

    def act(self, messages, tools, *, final):
        raise RuntimeError("the model server is gone")


def test_scored_episode_has_every_column(tasks):
    t = tasks[0]
    tr = run_episode(t, HeuristicPolicy(turns=3), "relace", Limits(max_turns=4))
    row = episode_row(tr, t)
    assert list(row)[: len(COLUMNS)] == list(COLUMNS)  # the documented vocabulary, in its order
    for name in REWARDS:
        assert reward_column(name) in row
    assert row["reward"] == row["reward_relace"]
    parts = part_columns(row, "relace")  # the reward's parts, one column each
    assert "reward_relace__turn_penalty" in parts and all(isinstance(row[p], float) for p in parts)
    assert row["reported"] and row["turns"] == tr.n_turns and row["calls"] == tr.n_calls
    assert row["wellformed"] and row["report_wellformed"] and row["wellformed_calls"] == tr.n_calls
    assert row["max_parallel"] == max(len(x.calls) for x in tr.turns)
    assert row["wall_s"] == tr.wall_time and row["tool_s"] > 0
    assert row["gold_files"] == 1 and row["repo"] == t.repo
    assert set(localization_columns(pl.DataFrame([row]))) <= set(row)
    # another headline reward: the same row otherwise
    other = episode_row(tr, t, reward="file-f1")
    assert other["reward"] == other["reward_file_f1"] and other["file_f2"] == row["file_f2"]


def test_trace_without_a_report(tasks):
    t = tasks[0]
    read = _names()[0]
    pol = ScriptedPolicy([{"calls": [{"name": read, "arguments": {}}, {"name": "not_a_tool", "arguments": {}}]}] * 2)
    tr = run_episode(t, pol, "relace", Limits(max_turns=2))
    assert tr.report is None
    row = episode_row(tr, t)
    assert row["reported"] is False and row["report_wellformed"] is False
    assert row["wellformed"] is False and row["any_wellformed"] is True and row["wellformed_calls"] == 2
    assert row["calls"] == 4 and row["calls_per_turn"] == 2.0 and row["n_files_reported"] == 0
    assert row["reward"] == 0.0 and row["file_recall"] == 0.0 and row["all_gold_at_1"] == 0.0
    assert row["stop_reason"] == tr.stop_reason != "reported"


def test_failed_episode_and_no_task(tasks):
    t = tasks[0]
    tr = safe_episode(t, Boom(), "relace", Limits(max_turns=2))
    assert tr.stop_reason == "policy_error"
    row = episode_row(tr, t)
    assert "the model server is gone" in row["error"]
    assert row["turns"] == 0 and row["calls"] == 0 and row["calls_per_turn"] == 0.0 and row["max_parallel"] == 0
    assert row["wellformed"] is False and row["reported"] is False and row["reward"] == 0.0
    # without its task: no gold columns, reward from the trace's meta (NaN when absent)
    bare = episode_row(tr)
    assert set(COLUMNS) == set(bare) and math.isnan(bare["reward"]) and bare["file_f2"] is None
    tr.meta["reward"] = 0.25
    assert episode_row(tr)["reward"] == 0.25
    # a trace of a tool set that is not ours: the well-formedness columns are unknown, not False
    alien = Trace(task_id="x", policy="p", toolset="someone-elses")
    assert episode_row(alien)["wellformed"] is None


def test_table_mixes_rows_and_empty_table_has_the_columns(tasks):
    trs = [run_episode(t, HeuristicPolicy(turns=2), "relace", Limits(max_turns=3)) for t in tasks[:2]]
    df = episode_table(trs + [Trace(task_id="unknown", policy="p", toolset="relace")], tasks)
    assert df.height == 3 and set(COLUMNS) <= set(df.columns)
    assert df.filter(pl.col("task_id") == "unknown")["file_f2"].is_null().all()
    assert episode_table(trs, tasks, only_tasks=True, first_per_task=True).height == 2
    empty = episode_table([])
    assert empty.height == 0 and list(empty.columns) == list(COLUMNS) and dict(empty.schema) == EMPTY_SCHEMA


def test_eval_summary_is_the_episode_table(tasks, tmp_path):
    df = run_eval(
        tasks[:2],
        "heuristic:turns=2",
        "relace",
        tmp_path / "run",
        Limits(max_turns=3),
        workers=1,
        progress=False,
        reward="relace-f2",
    )
    assert set(COLUMNS) <= set(df.columns)
    assert (df["reward"] == df["reward_relace_f2"]).all()
    stored = pl.read_parquet(tmp_path / "run" / "summary.parquet")
    assert stored.columns == df.columns


def test_taskless_row_reads_the_reward_an_rl_rollout_logged():
    """RL rollouts name their reward in meta["reward"] and log the score in meta["score"]."""
    from fasbench.records import Trace

    tr = Trace("t", "grpo", "relace", meta={"reward": "relace", "score": {"score": 0.25, "parts": {}}})
    assert episode_row(tr, None, localization=False)["reward"] == 0.25
    assert episode_row(Trace("t", "p", "relace", meta={"reward": 0.5}), None, localization=False)["reward"] == 0.5
    assert math.isnan(episode_row(Trace("t", "p", "relace"), None, localization=False)["reward"])


def test_columns_are_declared_once_and_the_row_shares_the_rewards_file_scores(tasks):
    """TABLE declares every fixed column (meaning, type, value); COLUMNS, EMPTY_SCHEMA and TEXT_COLUMNS
    are read from it. The row's file/line P/R are the rewards' (fasbench.scoring.reward.report_files_prf),
    also for a cited path the release's /repo/ prefix wraps twice."""
    from fasbench.evaluation.episodes import TABLE, TEXT_COLUMNS
    from fasbench.records import Report
    from fasbench.scoring.reward import report_files_prf, score_episode

    assert list(COLUMNS) == list(TABLE) == list(EMPTY_SCHEMA)
    assert TEXT_COLUMNS == ("task_id", "trace_id", "policy", "toolset", "repo", "split", "stop_reason", "error")
    t = tasks[0]
    gold = next(iter(t.gold.edited))
    tr = Trace(
        task_id=t.id,
        policy="p",
        toolset="relace",
        stop_reason="reported",
        report=Report(files={f"/repo/repo/{gold}": [[1, 3]], "nowhere.py": [[1, 2]]}),
    )
    row = episode_row(tr, t, localization=False)
    prf = report_files_prf(t.gold, tr.report, t.root)
    assert (row["file_precision"], row["file_recall"]) == (prf.precision, prf.recall)
    assert row["file_precision"] == row["reward_relace_f2__precision"] == row["reward_f0_5__precision"]
    for name in REWARDS:
        assert row[reward_column(name)] == score_episode(name, tr, t).value
