"""The reward function of a GRPO run: each rollout's episode rebuilt by its environment
(:meth:`fasbench.rl.env.HarnessEnv._episode`) and scored with ``fasbench.scoring.reward.score_episode``, the
scoring the episode table uses (default ``relace``: A1 for agent-trace gold with viewed files, else A2,
times the turn penalty; any name in ``REWARDS``), every rollout written as a harness Trace, and the batch statistics logged per step."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from fasbench.records import append_jsonl
from fasbench.rl.config import ROLLOUT_FILE
from fasbench.scoring.reward import Score, judge_requests, reward_named, score_episode


@dataclass
class RolloutScore:
    """What the reward function measured on one rollout (kept for the step log; not best-of-N's
    ``bon.pool.Rollout``, an episode summarised for selection)."""

    task_id: str
    reward: float
    parts: dict[str, float]
    turns: int
    calls: int
    calls_per_turn: float
    reported: bool
    tool_errors: int
    reason: str = ""


class EpisodeReward:
    """TRL reward function: rebuild each rollout's episode and score it with ``fasbench.scoring.reward``."""

    def __init__(self, reward: str, out: Path | None = None, log_rollouts: bool = True, judge=None):
        reward_named(reward)  # an unknown name fails here, in one line
        self.reward = reward
        self.__name__ = reward.replace(".", "_").replace("-", "_")
        self.out = out
        self.log_rollouts = log_rollouts
        self.judge = judge  # fasbench.scoring.judge.Judge for the fastcontext reward's quality term
        self.batch: list[RolloutScore] = []  # rollouts of the latest generation batch
        self.step = 0

    def __call__(self, prompts, completions, environments=None, **kwargs) -> list[float]:
        if environments is None:
            raise ValueError("EpisodeReward needs the rollouts' environments (use environment_factory)")
        values, self.batch, traces = [], [], []
        # non-conversational completions: the whole text is one turn
        prompts = prompts if prompts is not None else [None] * len(completions)
        trs = [
            env._episode(
                [{"role": "assistant", "content": c}] if isinstance(c, str) else c,
                prompt=p if isinstance(p, list) else None,
            )
            for p, c, env in zip(prompts, completions, environments)
        ]
        if self.judge is not None:  # the batch's judge calls at once, concurrently
            self.judge.score_many(judge_requests((tr, env._task) for tr, env in zip(trs, environments)))
        for tr, env in zip(trs, environments):
            s: Score = score_episode(self.reward, tr, env._task, self.judge)
            env._score = s
            values.append(float(s.value))
            cpt = (tr.n_calls / tr.n_turns) if tr.n_turns else 0.0
            self.batch.append(
                RolloutScore(
                    tr.task_id,
                    float(s.value),
                    {k: float(v) for k, v in s.parts.items()},
                    tr.n_turns,
                    tr.n_calls,
                    cpt,
                    tr.report is not None,
                    int(tr.meta["tool_errors"]),
                    s.reason,
                )
            )
            tr.meta.update(step=self.step, reward=self.reward, score=s.to_dict())
            traces.append(tr)
        if self.log_rollouts and self.out is not None:  # one file per process (rank 0: rollouts.jsonl)
            rank = int(os.environ.get("RANK", "0"))
            name = ROLLOUT_FILE if rank == 0 else ROLLOUT_FILE.replace(".jsonl", f".rank{rank}.jsonl")
            append_jsonl(self.out / name, traces)
        return values


def mean_std(xs: list[float]) -> tuple[float, float]:
    if not xs:
        return float("nan"), float("nan")
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def rollout_stats(batch: list[RolloutScore]) -> dict[str, float]:
    """Mean and std over a batch of rollouts of the reward, each part, turns, calls and errors."""
    cols: dict[str, list[float]] = {
        "episode/reward": [r.reward for r in batch],
        "episode/turns": [r.turns for r in batch],
        "episode/calls": [r.calls for r in batch],
        "episode/calls_per_turn": [r.calls_per_turn for r in batch],
        "episode/reported": [float(r.reported) for r in batch],
        "episode/tool_errors": [r.tool_errors for r in batch],
    }
    for r in batch:
        for k, v in r.parts.items():
            cols.setdefault(f"reward_parts/{k}", []).append(v)
    out = {}
    for k, xs in cols.items():
        out[f"{k}/mean"], out[f"{k}/std"] = mean_std([float(x) for x in xs])
    return out
