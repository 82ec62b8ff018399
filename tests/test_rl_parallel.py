"""The parallel-search miniature's parts (issue 35): token-exact conversations of harness episodes
(scripted for SFT, batched model rollouts for GRPO), zero-variance groups, the study's shares."""

from __future__ import annotations

import pytest

from fasbench.data import symbols
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.rl import vgrpo
from fasbench.rl.batched import END, ScriptedTokens, run_batched
from fasbench.tools import ToolLimits, make_toolset


@pytest.fixture(scope="module")
def tasks():
    return symbols.load_tasks("train", k=3)[:2]


def _limits(turns=5):
    return Limits(max_turns=turns, max_calls_per_turn=8, tool=ToolLimits(max_output_chars=300, prompt="compact"))


@pytest.mark.slow
def test_scripted_tokens_are_the_rendered_chat_with_replies_masked(tasks):
    from fasbench.models import load_tokenizer

    tok = load_tokenizer("smollm2-offline")
    t = tasks[0]
    ts = make_toolset("relace", t.root, _limits().tool)
    pol = ScriptedTokens(make_policy("sequential:inner=definitions,per_turn=1"), tok, ts.schemas)
    tr = run_episode(t, pol, ts, _limits())
    c = pol.convo
    assert tr.stop_reason == "reported" and tr.n_turns == 4
    assert len(c.ids) == len(c.mask) == len(c.logps)
    assert tok.decode(c.ids) == c.text  # the ids are the rendered conversation, nothing lost at the seams
    replies = [m["content"] for m in c.msgs if m["role"] == "assistant"]
    assert len(replies) == 4 and all("<tool_call>" in r for r in replies)
    assert tok.decode([i for i, m in zip(c.ids, c.mask) if m]) == "".join(r + END for r in replies)
    assert "report_back" in replies[-1] and c.mask[0] == 0


@pytest.mark.slow
def test_batched_greedy_rollouts_equal_one_at_a_time(tasks):
    import torch

    from fasbench.models import load_model

    torch.manual_seed(0)
    model, tok = load_model("tiny", device="cpu")
    tok.padding_side = "left"
    kw = dict(toolset="relace", limits=_limits(2), temperature=0.0, max_new_tokens=12)
    both, st = run_batched(model, tok, list(tasks), **kw)
    alone = [run_batched(model, tok, [t], **kw)[0][0] for t in tasks]
    assert st["rounds"] == 2 and not st["errors"]  # two turns, each one batched call for both episodes
    for b, a in zip(both, alone):
        assert b.ids == a.ids and b.mask == a.mask
        assert b.prompt_len == a.prompt_len and 0 < b.prompt_len < len(b.ids)
        assert all(lp <= 0 for lp in b.logps) and sum(1 for m in b.mask if m) <= 2 * 12
        assert b.trace.n_turns == 2


def test_zero_variance_groups():
    assert vgrpo.zero_variance([0.5, 0.5, 0.5])
    assert vgrpo.zero_variance([1.0])
    assert not vgrpo.zero_variance([0.5, 0.5, 0.75])


def test_rollout_reward_passes_the_episodes_rewards():
    assert vgrpo.rollout_reward([1, 2], [None, None], rollout_reward=[0.25, 1]) == [0.25, 1.0]
    with pytest.raises(ValueError, match="no rewards"):
        vgrpo.rollout_reward([1], [None])


def test_share_interval_and_per_task_means():
    p, lo, hi = vgrpo.share_ci([1, 0, 0, 0])
    assert p == 0.25 and 0 < lo < 0.25 < hi < 1
    rows = [
        {
            "task_id": "a",
            "mode": "sampled",
            "turns": 2,
            "calls_per_turn": 2,
            "first_parallel": 1,
            "file_f2": 1,
            "reward": 1,
            "reported": 1,
        },
        {
            "task_id": "a",
            "mode": "sampled",
            "turns": 4,
            "calls_per_turn": 1,
            "first_parallel": 0,
            "file_f2": 1,
            "reward": 0.5,
            "reported": 1,
        },
        {
            "task_id": "a",
            "mode": "greedy",
            "turns": 4,
            "calls_per_turn": 1,
            "first_parallel": 0,
            "file_f2": 1,
            "reward": 0.5,
            "reported": 1,
        },
    ]
    (row,) = vgrpo.per_task(rows, "sampled")
    assert row["turns"] == 3 and row["first_parallel"] == 0.5 and row["reward"] == 0.75


def test_relace_mini_k3_pays_two_turns_fully_and_four_half():
    from fasbench.records import Gold, Report
    from fasbench.scoring.reward import score_report

    g = Gold(edited={"a.py": [[1, 2]]})
    rep = Report(files={"a.py": [[1, 2]]})
    assert score_report("relace-mini-k3", g, rep, 2).value == 1.0
    assert score_report("relace-mini-k3", g, rep, 4).value == 0.5
    assert score_report("relace-mini-k3", g, rep, 6).value == 0.0


def _rows(turns, cpt, first, f2, reward, n=12, k=2):
    return [
        {
            "task_id": f"t{i}",
            "mode": mode,
            "turns": turns,
            "calls_per_turn": cpt + 0.01 * i,
            "first_parallel": first,
            "file_f2": f2,
            "reward": reward + 0.001 * i,
            "reported": 1.0,
        }
        for i in range(n)
        for mode, kk in (("sampled", k), ("greedy", 1))
        for _ in range(kk)
    ]


def test_study_tables_and_findings_judge_a_parallel_after():
    from fasbench.rl import parallel_study as study

    before, after = _rows(4, 1.0, 0.0, 1.0, 0.5), _rows(2, 1.5, 1.0, 1.0, 1.0)
    res = study.tables(before, after)
    from fasbench.rl.mini import acceptance

    assert all(acceptance(res["sampled"]).values()) and all(acceptance(res["greedy"]).values())
    worse = study.tables(before, _rows(4, 1.0, 0.0, 0.5, 0.25))
    assert not acceptance(worse["sampled"])["accuracy within 2 points"]
    steps = {
        "seed 0": [
            {
                "step": 1,
                "rollouts_drawn": 16,
                "zero_var_share": 0.5,
                "zero_var_share_first": 1.0,
                "first_parallel": 0.25,
                "reward": 0.5,
                "turns": 3.0,
                "calls_per_turn": 1.2,
            }
        ]
    }
    text = study.findings(
        study.start_share(before), {"seed 0": res}, steps, {}, {"what": "w", "limits": "l"}
    ).markdown()
    assert "is met" in text and "0.50 after resampling" in text and "0% [0, " in text
    text = study.findings(
        study.start_share(before), {"seed 0": worse}, steps, {}, {"what": "w", "limits": "l"}
    ).markdown()
    assert "is NOT met" in text
    assert study.step_curves(steps).data
