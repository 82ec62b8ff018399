"""Reading a GRPO run back (its step log and rollouts) and the incentive landscape of a reward:
what the heuristic policy is paid over planned turns x parallel calls."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from tqdm.auto import tqdm

from fasbench.evaluation.episodes import episode_row
from fasbench.harness import Limits, run_episode
from fasbench.policies.heuristic import HeuristicPolicy
from fasbench.records import Task, Trace, read_traces
from fasbench.rl.config import LOG_FILE, ROLLOUT_FILE
from fasbench.training.log import read_log


def log_frame(out: str | Path) -> pl.DataFrame:
    """The step log of the run in ``out`` as a polars frame (one row per step)."""
    rows = [r for r in read_log(out, LOG_FILE) if r.get("kind") == "step"]
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def read_rollouts(out: str | Path) -> list[Trace]:
    """Every rollout the run in ``out`` logged, as harness traces (with step and score in ``meta``)."""
    p = Path(out) / ROLLOUT_FILE
    return read_traces(p) if p.exists() else []


def incentive_landscape(
    tasks: list[Task],
    toolset: str = "relace",
    reward: str = "relace",
    turns: tuple[int, ...] = (2, 3, 4, 6),
    calls: tuple[int, ...] = (1, 2, 4, 8),
    max_turns: int | None = None,
    progress: bool = True,
) -> pl.DataFrame:
    """The heuristic policy swept over planned turns × parallel calls per search turn, each episode
    run through the harness and scored under ``reward``: what the reward pays for.
    Returns a polars frame: ``plan_turns`` and ``plan_calls`` (the grid), then the episode table's
    columns (:func:`fasbench.evaluation.episodes.episode_row`: ``turns`` and ``calls`` the episode used,
    ``reward``, and ``reward_NAME__PART`` for each part of the reward, see
    :func:`fasbench.evaluation.episodes.part_columns`: accuracy and turn_penalty under Relace's, cited /
    score_file / f0_5 / over_penalty / quality under FastContext's; no judge here, so quality is 0)."""
    rows = []
    grid = [(t, c) for t in turns for c in calls]
    for nt, nc in tqdm(grid, desc="landscape", disable=not progress):
        lim = Limits(max_turns=max_turns or max(turns), max_calls_per_turn=max(nc, 1))
        pol = HeuristicPolicy(turns=nt, calls=nc)
        for t in tasks:
            tr = run_episode(t, pol, toolset, lim)
            rows.append(
                {"plan_turns": nt, "plan_calls": nc, **episode_row(tr, t, reward, rewards=[reward], localization=False)}
            )
    return pl.DataFrame(rows, infer_schema_length=None)
