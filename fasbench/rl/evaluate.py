"""The RL checkpoint evaluator: greedy episodes of a checkpoint through the harness, scored with
the run's reward (before vs after training in notebook 06).

Kept apart so that it can be swapped for the checkpoint evaluator shared with SFT and evaluation
(issue #16) without touching the trainer."""

from __future__ import annotations

from pathlib import Path

from fasbench.harness import run_episode
from fasbench.judge import make_judge
from fasbench.policies.hf import make_hf_policy
from fasbench.records import Task, append_jsonl
from fasbench.reward import episode_kwargs, score_report
from fasbench.rl.config import RLConfig

def evaluate_checkpoint(model: str, tasks: list[Task], cfg: RLConfig, label: str | None = None,
                        max_new_tokens: int = 256, traces_out: str | Path | None = None) -> list[dict]:
    """Greedy episodes of the checkpoint ``model`` on ``tasks`` through the harness with the run's
    tool set and limits, scored with the run's reward. One row per task."""
    pol = make_hf_policy(model, max_new_tokens=max_new_tokens, temperature=0.0, name=label or str(model))
    judge = make_judge(cfg.judge) if cfg.judge else None
    rows = []
    for t in tasks:
        tr = run_episode(t, pol, cfg.toolset, cfg.limits)
        if traces_out is not None:
            append_jsonl(traces_out, [tr])
        s = score_report(cfg.reward, t.gold, tr.report, tr.n_turns or None, root=t.root,
                         **episode_kwargs(cfg.reward, tr, t.query, judge))
        rows.append({"policy": label or str(model), "task_id": t.id, "reward": s.value,
                     **{f"part/{k}": v for k, v in s.parts.items()}, "turns": tr.n_turns, "calls": tr.n_calls,
                     "calls_per_turn": tr.n_calls / tr.n_turns if tr.n_turns else 0.0,
                     "reported": tr.report is not None, "stop_reason": tr.stop_reason})
    return rows

