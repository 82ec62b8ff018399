"""Turn limits up to 24 everywhere (harness, evaluation CLI, policies, SFT/RL profiles), the sequential
starting point of Relace's turn-penalty run, and turns/accuracy over training (fasbench/rl/turn_curves.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

from fasbench.evaluation.episodes import COLUMNS
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.policies.scripted import ScriptedPolicy
from fasbench.policies.sequential import SequentialPolicy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import Report, Trace, Turn, append_jsonl
from fasbench.scoring.reward import score_report, turn_penalty


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))


def _calls(tr):
    return [(c.name, json.dumps(c.arguments, sort_keys=True)) for t in tr.turns for c in t.calls]


@pytest.mark.slow
def test_sequential_policy_makes_the_same_calls_and_answer_in_more_turns(toy):
    """Relace's starting point with a known answer: same search, same report, one call a turn."""
    lim = Limits(max_turns=24)
    longer = 0
    for task in toy:
        par = run_episode(task, make_policy("heuristic:turns=3"), "relace", lim)
        seq = run_episode(task, make_policy("sequential:turns=3"), "relace", lim)
        assert seq.stop_reason == "reported" and seq.report.files == par.report.files
        assert sorted(_calls(seq)) == sorted(_calls(par))  # the heuristic's calls, none added or lost
        assert all(len(t.calls) == 1 for t in seq.turns) and seq.n_turns == seq.n_calls
        a = score_report("relace", task.gold, par.report, par.n_turns)
        b = score_report("relace", task.gold, seq.report, seq.n_turns)
        assert b.parts["accuracy"] == a.parts["accuracy"]  # equal accuracy ...
        assert b.parts["turn_penalty"] == pytest.approx(turn_penalty(seq.n_turns))  # ... paid less for its turns
        longer += seq.n_turns > 8
    assert longer >= 3, "the sequential episodes should run past the old 6-8 turn limits"
    three = run_episode(toy[0], make_policy("sequential:per_turn=3,turns=3"), "relace", lim)
    assert (
        max(len(t.calls) for t in three.turns) == 3
        and three.report.files == run_episode(toy[0], make_policy("heuristic:turns=3"), "relace", lim).report.files
    )
    with pytest.raises(ValueError, match="per_turn must be >= 1"):
        SequentialPolicy(make_policy("heuristic"), per_turn=0)
    with pytest.raises(ValueError, match="has no parameter 'bogus'"):
        make_policy("sequential:bogus=1")


def test_sequential_policy_answers_when_the_limit_comes(toy):
    tr = run_episode(toy[0], make_policy("sequential:turns=3"), "relace", Limits(max_turns=5))
    assert tr.n_turns == 5 and tr.stop_reason == "reported" and tr.meta["final_note_turn"] == 4


@pytest.mark.slow
def test_harness_runs_24_turns_and_checks_its_limits(toy):
    grep = {"calls": [{"name": "grep_search", "arguments": {"query": "def "}}]}
    tr = run_episode(toy[0], ScriptedPolicy([grep] * 30), "relace", Limits(max_turns=24))
    assert tr.n_turns == 24 and tr.stop_reason == "max_turns" and tr.meta["final_note_turn"] == 23
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_turns must be an integer >= 1"):
            Limits(max_turns=bad)


@pytest.mark.slow
def test_eval_cli_runs_a_24_turn_limit(toy, tmp_path):
    tasks = tmp_path / "toy.jsonl"
    append_jsonl(tasks, toy[:2])
    cmd = [
        sys.executable,
        "-m",
        "fasbench.cli",
        "eval",
        "--tasks",
        str(tasks),
        "--policy",
        "sequential:turns=3",
        "--max-turns",
        "24",
        "--out",
        str(tmp_path / "run"),
        "--workers",
        "1",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    df = pl.read_parquet(tmp_path / "run" / "summary.parquet")
    assert df.height == 2 and df["turns"].max() > 8
    assert json.loads((tmp_path / "run" / "run.json").read_text())["max_turns"] == 24
    bad = subprocess.run(
        cmd[:-6] + ["--max-turns", "0", "--out", str(tmp_path / "bad")], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "--max-turns" in bad.stderr


def test_long_profiles_set_up_relaces_turn_penalty(toy):
    from fasbench.policies.sequential import SequentialPolicy as Seq
    from fasbench.rl.config import load_config
    from fasbench.rl.env import environment_class
    from fasbench.sft.data import limits
    from fasbench.sft.train import load_profile

    for name in ("long_cpu", "long_gpu"):
        cfg = load_config(name)
        assert (cfg.max_turns, cfg.reward, cfg.toolset, cfg.max_calls_per_turn) == (24, "relace", "relace", 12)
        assert any("sft-long_" in p for p in cfg.init_from)  # starts from the long-episode warm-up
        prof = load_profile(name)
        assert prof.build.max_turns == prof.build.reference_max_turns == prof.eval.max_turns == 24
        assert limits(prof.build).max_turns == 24
        assert (
            prof.build.mix["parallel_toolcalls"] == prof.build.mix["reference_traj"] == prof.build.mix["linerange"] == 0
        )
        assert isinstance(make_policy(prof.build.policy), Seq)
        assert f"runs/sft-{prof.name}" in cfg.init_from[0]
    gpu = load_config("long_gpu")
    assert gpu.max_steps == 3 * 3200 // 8 and gpu.n_tasks == 3200  # Relace: 3 epochs over 3.2k prompts
    env = environment_class("relace", load_config("long_cpu").limits)()
    env.reset(task=json.dumps(toy[0].to_dict()))
    env._turn = 21
    assert env._final_note() is None
    env._turn = 22  # the turn before the 24th: the harness's last-turn note goes out here
    assert env._final_note() == env._toolset.final_turn_note() and env._note_turn == 23


def test_grpo_args_allow_23_tool_iterations():
    from fasbench.rl.config import load_config
    from fasbench.rl.train import grpo_args

    args = grpo_args(load_config("long_cpu", {"output_dir": "/tmp/fasbench-unused"}), use_cpu=True)
    assert args.max_tool_calling_iterations == 23


# ---------------------------------------------------------------- turns and accuracy over training


def _rollout(step, turns, acc, task="t1", reward=None):
    p = turn_penalty(turns)
    tr = Trace(
        task_id=task,
        policy="grpo",
        toolset="relace",
        stop_reason="reported",
        turns=[Turn(index=i) for i in range(turns)],
        report=Report({"a.py": [[1, 2]]}),
    )
    tr.meta.update(step=step, score={"score": acc * p, "parts": {"accuracy": acc, "turn_penalty": p}})
    if reward:  # as EpisodeReward logs it: the reward's name beside its score
        tr.meta["reward"] = reward
    return tr


def test_turn_trend_and_findings_on_known_rollouts():
    from fasbench.rl.config import RLConfig
    from fasbench.rl.turn_curves import findings, rollout_frame, turn_trend

    rolls = (
        [_rollout(0, n, 0.5) for n in (18, 20, 22, 20)]
        + [_rollout(1, 12, 0.5)]
        + [_rollout(2, n, 0.5) for n in (4, 5, 6, 5)]
    )
    f = rollout_frame(rolls)
    assert f.height == 9 and f["accuracy_part"].unique().to_list() == ["accuracy"]
    assert set(COLUMNS) <= set(f.columns) and f["turns"].to_list()[:4] == [18, 20, 22, 20]  # episode-table rows
    assert f["reward"].to_list()[0] == pytest.approx(0.5 * turn_penalty(18)) and f["file_f1"].is_null().all()
    named = rollout_frame([_rollout(0, 6, 0.5, reward="relace")])  # the logged score under its reward's columns
    assert named.row(0, named=True)["reward_relace__turn_penalty"] == turn_penalty(6)
    assert named["reward_relace"].to_list() == named["reward"].to_list()
    assert set(rollout_frame([]).columns) == set(f.columns)
    t = turn_trend(f)
    assert t["first"]["turns"]["mean"] == 20 and t["last"]["turns"]["mean"] == 5 and t["turns_fell"]
    assert t["first"]["accuracy"]["mean"] == t["last"]["accuracy"]["mean"] == 0.5
    assert t["last"]["turn_penalty"]["mean"] == pytest.approx(sum(turn_penalty(n) for n in (4, 5, 6, 5)) / 4)
    md = findings({"global_step": 3, "n_tasks": 1, "model": "m"}, t, RLConfig(max_turns=24)).markdown()
    assert md.startswith("## What we found: GRPO") and "Turns fell" in md and "20 → 5" in md and "(n=4)" in md
    # 4 vs 4 rollouts, every first-step value above every last-step one: the most extreme of the
    # C(8, 4) = 70 splits, and its mirror: p = 2/70
    assert t["turns_p"] == pytest.approx(2 / 70) and "exact permutation test p = 0.0286, n = 4 vs 4" in md
    # 2 vs 2 rollouts: Student t intervals at n = 2 (a percentile bootstrap would give [20, 22] vs
    # [4, 5], apart) overlap, and the smallest permutation p of C(4, 2) = 6 splits is 2/6: no fall in
    # turns is claimed
    two = turn_trend(
        rollout_frame([_rollout(0, 20, 0.5), _rollout(0, 22, 0.5), _rollout(1, 4, 0.5), _rollout(1, 5, 0.5)])
    )
    assert two["last"]["turns"]["hi"] > two["first"]["turns"]["lo"] and two["turns_p"] == pytest.approx(1 / 3)
    assert not two["turns_fell"]
    assert "No change in turns is shown" in findings({}, two, RLConfig(max_turns=24)).markdown()
    short = turn_trend(rollout_frame([_rollout(0, 2, 0.5), _rollout(1, 2, 0.5)]))
    assert not short["turns_fell"]
    assert "free zone" in findings({}, short, RLConfig(max_turns=3)).markdown()
    assert "nothing to compare" in findings({}, turn_trend(rollout_frame([])), RLConfig()).markdown()


def test_turns_accuracy_figure_from_the_step_log():
    from fasbench.rl.plots import turns_accuracy

    frame = pl.DataFrame(
        {
            "step": [1, 2, 3],
            "episode/turns/mean": [20.0, 12.0, 5.0],
            "episode/turns/std": [2.0, 3.0, 1.0],
            "reward_parts/accuracy/mean": [0.5, 0.5, 0.52],
            "reward_parts/accuracy/std": [0.1] * 3,
            "reward_parts/turn_penalty/mean": [0.2, 0.6, 0.95],
            "reward_parts/turn_penalty/std": [0.1] * 3,
        }
    )
    fig = turns_accuracy(frame, max_turns=24)
    assert fig.layout.yaxis.range[1] >= 24
    names = [tr.name for tr in fig.data]
    assert "turns" in names and "accuracy" in names and "turn penalty" in names
    turns = next(tr for tr in fig.data if tr.name == "turns")
    assert list(turns.y) == [20.0, 12.0, 5.0]
    fc = frame.rename(
        {"reward_parts/accuracy/mean": "reward_parts/f0.5/mean", "reward_parts/accuracy/std": "reward_parts/f0.5/std"}
    )
    assert "accuracy (f0.5)" in [
        tr.name
        for tr in turns_accuracy(fc.drop("reward_parts/turn_penalty/mean", "reward_parts/turn_penalty/std")).data
    ]


@pytest.mark.slow
def test_start_vs_target_shows_the_gap_the_turn_penalty_opens(toy):
    from fasbench.rl.config import RLConfig
    from fasbench.rl.turn_curves import findings, rollout_frame, start_vs_target, turn_trend

    f = start_vs_target(toy, progress=False)
    assert set(COLUMNS) <= set(f.columns) and set(f["policy"]) == {"sequential start", "parallel target"}
    assert (f["accuracy"] == f["reward_relace__accuracy"]).all() and (f["reward"] == f["reward_relace"]).all()
    g = {
        r["policy"]: r
        for r in f.group_by("policy").agg(pl.col("turns", "accuracy", "reward").mean()).iter_rows(named=True)
    }
    seq, par = g["sequential start"], g["parallel target"]
    assert seq["accuracy"] == par["accuracy"] and seq["turns"] > par["turns"] + 4 and seq["reward"] < par["reward"]
    md = findings({}, turn_trend(rollout_frame([])), RLConfig(), setup=f).markdown()
    assert f"Accuracy is equal on {len(toy)} of {len(toy)} tasks" in md and "sequential start: n=5" in md
