"""The episode table of the replay's browser: one row per episode (reward, turns, calls, times), and
the browser's filter and sort."""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from fasbench.records import Task, Trace
from fasbench.reward import score_report


def episode_row(trace: Trace, task: Task | None = None, reward: str = "relace") -> dict:
    """One row of the episode table. The reward is computed from the task's gold when a task is
    given, else taken from ``trace.meta["reward"]`` (NaN when absent)."""
    if task is not None:
        r = score_report(reward, task.gold, trace.report, turns=trace.n_turns, root=task.root).value
    else:
        m = trace.meta.get("reward")
        r = float(m["score"] if isinstance(m, dict) else m) if m is not None else float("nan")
    model = sum(t.model_time for t in trace.turns)
    tools = sum(t.tool_time for t in trace.turns)
    return {"trace_id": trace.trace_id, "task_id": trace.task_id, "policy": trace.policy,
            "toolset": trace.toolset, "reward": r, "turns": trace.n_turns, "calls": trace.n_calls,
            "time_s": trace.wall_time, "model_s": model, "tools_s": tools,
            "max_parallel": max((len(t.calls) for t in trace.turns), default=0), "stop": trace.stop_reason}


def task_map(tasks: Iterable[Task] | Mapping[str, Task] | None) -> dict[str, Task]:
    """Tasks by id, from a mapping, an iterable of tasks or None."""
    if tasks is None:
        return {}
    if isinstance(tasks, Mapping):
        return dict(tasks)
    return {t.id: t for t in tasks}


def browser_rows(traces: Sequence[Trace], tasks=None, reward: str = "relace") -> list[dict]:
    """The episode rows of ``traces``, each scored on its task's gold when ``tasks`` has it."""
    tm = task_map(tasks)
    return [episode_row(tr, tm.get(tr.task_id), reward) for tr in traces]


SORT_KEYS = ("reward", "turns", "calls", "time_s", "max_parallel", "task_id", "policy")
_TEXT_KEYS = ("task_id", "policy", "toolset", "stop", "trace_id")


def filter_sort(rows: Sequence[dict], text: str = "", sort_by: str = "reward", descending: bool = True) -> list[dict]:
    """Rows whose task, policy, tool set, stop reason or trace id contain every word of
    ``text`` (case-insensitive), sorted by ``sort_by`` (NaN last whatever the direction)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"cannot sort by {sort_by!r}; choose one of {', '.join(SORT_KEYS)}")
    words = text.lower().split()
    kept = [r for r in rows if all(any(w in str(r[k]).lower() for k in _TEXT_KEYS) for w in words)]

    def nan(r):
        v = r[sort_by]
        return isinstance(v, float) and math.isnan(v)

    good = sorted((r for r in kept if not nan(r)), key=lambda r: r[sort_by], reverse=descending)
    return good + [r for r in kept if nan(r)]
