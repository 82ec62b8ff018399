"""The episode table: one row per episode (a :class:`~fasbench.records.Trace` with its task), one
column vocabulary for every workflow that tabulates episodes — evaluation runs (``summary.parquet``),
the trace browser, SFT and RL before/after evaluations (:mod:`fasbench.checkpoints`).

:func:`episode_row` builds a row, :func:`episode_table` a polars frame of many; :data:`COLUMNS`
documents every fixed column (the process measures among them: :data:`fasbench.process.PROCESS_COLUMNS`,
each with its definition and source), :data:`COLUMN_FAMILIES` the generated ones (a column per reward and
reward part, per k, and the localization columns of :mod:`fasbench.localization`).

A column that needs the gold (rewards, precision/recall, all-gold@k, recall@k, localization) is null when the
episode's task is not given; ``reward`` then comes from ``trace.meta["reward"]`` (a run's summary
puts it there, see ``replay.runs``) and is NaN when absent, so that a table sorts either way.
A trace without a report scores like an empty report (every reward is defined for it); a trace of a
failed episode (``stop_reason == "policy_error"``, no turns) has zero turns and calls and its
``error``.
"""

from __future__ import annotations

import math
import re
import tempfile
import warnings
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import polars as pl

from fasbench.contextbench import contextbench_row
from fasbench.localization import FC_SCORINGS, KS, fastcontext_row, localization_row
from fasbench.metrics import all_gold_at_k, file_prf, line_prf, normalize_path, scoring_memo
from fasbench.models import well_formed
from fasbench.process import PROCESS_COLUMNS, process_row, process_schema
from fasbench.records import Task, Trace
from fasbench.reward import REWARDS, episode_kwargs, episode_query, finish_reason, judge_requests, score_report
from fasbench.tools import TOOLSETS, make_toolset


#: Every fixed column of the episode table, in order, with its meaning.
COLUMNS: dict[str, str] = {
    "task_id": "the task's id",
    "trace_id": "the episode's id (unique per trace)",
    "policy": "the policy's name (its spec, or a label such as 'before'/'after' of a checkpoint)",
    "toolset": "the tool set the episode ran with (relace | fastcontext)",
    "repo": "the task's repository (null without the task)",
    "split": "the task's split train/dev/test (null without the task)",
    "stop_reason": "how the episode ended: reported | max_turns | no_calls | policy_error | …",
    "error": "the error of a failed episode (null otherwise)",
    "reward": "the headline reward (the table's `reward` argument, default relace); without the task, "
              "trace.meta['reward'] or NaN",
    "reported": "a report was parsed",
    "turns": "assistant turns used",
    "calls": "tool calls made (the report call included)",
    "calls_per_turn": "calls / turns (0 without turns)",
    "max_parallel": "most calls in one turn",
    "wellformed_calls": "calls whose arguments parsed to a JSON object and whose name is a tool of the tool set",
    "wellformed": "the episode made calls and all were well-formed",
    "any_wellformed": "at least one call was well-formed",
    "report_wellformed": "wellformed and reported (the SFT acceptance measure)",
    "wall_s": "episode wall time, seconds",
    "model_s": "time spent in the policy, seconds",
    "tool_s": "time spent running tools, seconds",
    "prompt_tokens": "prompt tokens summed over turns (null when the policy does not count them)",
    "completion_tokens": "completion tokens summed over turns (null when not counted)",
    "n_files_reported": "distinct files in the report",
    "gold_files": "files in the gold (null without the task)",
    **{f"{lv}_{m}": f"{lv}-level {m.replace('_', ' ')} of the report against the gold (FastContext's {lv} P/R/F)"
       for lv in ("file", "line") for m in ("precision", "recall", "f1", "f2")},
    **{f"all_gold_at_{k}": f"every gold file in the report's top {k} (fasbench.metrics.all_gold_at_k; not LocAgent's "
                           f"Acc@{k}, which asks for min(|gold|, {k}) gold files there: file_acc_at_{k})" for k in KS},
    **{f"recall_at_{k}": f"share of gold files in the report's top {k}" for k in KS},
    **PROCESS_COLUMNS,  # grounding, redundancy, tool and context efficiency, lost calls (fasbench.process)
}

#: Columns generated from a name: what each family means (NAME = reward name with non-alphanumerics
#: as "_", e.g. relace_f2; PART = one of the reward's parts).
COLUMN_FAMILIES: dict[str, str] = {
    "reward_NAME": "the value of reward NAME (fasbench.reward.REWARDS)",
    "reward_NAME__PART": "one part of reward NAME (e.g. reward_relace__turn_penalty)",
    "localization": "module/function grains, LocAgent Acc@k, SWE-Explore (fasbench.localization.localization_columns)",
    "cb_*": "ContextBench's file/block/line recall, precision, F1, efficiency (AUC-Coverage) and evidence drop "
            "against gold.context, null for tasks without it (fasbench.contextbench.CONTEXTBENCH_COLUMNS)",
    "fc_*": "with scoring fastcontext / fastcontext-all: FastContext's run_score.py per task "
            "(fasbench.localization.fastcontext_row)",
}

#: Columns that are text (filter/search keys of a browser).
TEXT_COLUMNS = ("task_id", "trace_id", "policy", "toolset", "repo", "split", "stop_reason", "error")


def column_name(name: str) -> str:
    """A reward or part name as a column name part: ``relace-f2`` → ``relace_f2``, ``f0.5`` → ``f0_5``."""
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_")


def reward_column(name: str) -> str:
    """The column of reward ``name`` (``reward_relace_f2``)."""
    return f"reward_{column_name(name)}"


def part_columns(columns: Iterable[str], reward: str) -> list[str]:
    """The columns of reward ``reward``'s parts among ``columns`` (``reward_NAME__PART``), in order."""
    pre = reward_column(reward) + "__"
    return [c for c in columns if c.startswith(pre)]


@lru_cache(maxsize=None)
def tool_schemas(toolset: str) -> tuple[dict, ...] | None:
    """The JSON schemas of ``toolset`` (they do not depend on the corpus); None for a tool set that
    is not ours (a trace imported from elsewhere)."""
    if toolset not in TOOLSETS:
        return None
    return tuple(make_toolset(toolset, tempfile.gettempdir()).schemas)


def ranked_files(trace: Trace, root: str | None = None) -> list[str]:
    """Reported files in the order the report lists them (its rank)."""
    if trace.report is None:
        return []
    seen = dict.fromkeys(normalize_path(p, root) for p in trace.report.files)  # ordered, linear
    seen.pop("", None)
    return list(seen)


def _trace_columns(trace: Trace) -> dict:
    n, calls = trace.n_turns, [c for t in trace.turns for c in t.calls]
    schemas = tool_schemas(trace.toolset)
    ok = [well_formed(c, list(schemas)) for c in calls] if schemas is not None else None
    pt = [t.prompt_tokens for t in trace.turns if t.prompt_tokens is not None]
    ct = [t.completion_tokens for t in trace.turns if t.completion_tokens is not None]
    return {
        "reported": trace.report is not None, "turns": n, "calls": len(calls),
        "calls_per_turn": len(calls) / n if n else 0.0,
        "max_parallel": max((len(t.calls) for t in trace.turns), default=0),
        "wellformed_calls": sum(ok) if ok is not None else None,
        "wellformed": (bool(calls) and all(ok)) if ok is not None else None,
        "any_wellformed": any(ok) if ok is not None else None,
        "report_wellformed": (trace.report is not None and bool(calls) and all(ok)) if ok is not None else None,
        "wall_s": trace.wall_time, "model_s": sum(t.model_time for t in trace.turns),
        "tool_s": sum(t.tool_time for t in trace.turns),
        "prompt_tokens": int(sum(pt)) if pt else None, "completion_tokens": int(sum(ct)) if ct else None,
        "n_files_reported": len(ranked_files(trace)),
    }


def _meta_reward(trace: Trace) -> float:
    """The reward a trace recorded about itself: ``meta["reward"]`` as a number or ``{"score": x}``
    (evaluation runs), or ``meta["score"]["score"]`` where ``meta["reward"]`` names the reward (RL
    rollouts); NaN when there is none."""
    for m in (trace.meta.get("reward"), trace.meta.get("score")):
        if isinstance(m, dict):
            m = m.get("score")
        if isinstance(m, (int, float)) and not isinstance(m, bool):
            return float(m)
    return math.nan


def check_scoring(scoring: Sequence[str]) -> list[str]:
    """The scoring names, checked (one line naming the bad one)."""
    for s in scoring:
        if s not in FC_SCORINGS:
            raise ValueError(f"unknown scoring {s!r}; choose {' or '.join(FC_SCORINGS)}")
    if len(set(scoring)) > 1:
        raise ValueError(f"scorings {', '.join(scoring)} write the same fc_* columns; choose one")
    return list(dict.fromkeys(scoring))


def episode_row(trace: Trace, task: Task | None = None, reward: str = "relace",
                rewards: Sequence[str] | None = None, judge=None, localization: bool = True,
                scoring: Sequence[str] = ()) -> dict:
    """One row of the episode table; see :func:`_episode_row` (the report's files are normalised
    once for the whole row: :func:`fasbench.metrics.scoring_memo`). ``scoring``: ``fastcontext``
    (or ``fastcontext-all``) adds FastContext's run_score.py columns ``fc_*``."""
    with scoring_memo():
        row = _episode_row(trace, task, reward, rewards, judge, localization)
        for s in check_scoring(scoring):
            if task is not None:
                row.update(fastcontext_row(task, trace, FC_SCORINGS[s]))
        return row


def _episode_row(trace: Trace, task: Task | None, reward: str, rewards: Sequence[str] | None, judge,
                 localization: bool) -> dict:
    """One row of the episode table (:data:`COLUMNS`, then ``reward_NAME`` / ``reward_NAME__PART``
    for each name of ``rewards`` (default: every reward of ``REWARDS``) and the localization
    columns). ``reward`` picks the headline ``reward`` column. ``judge``: FastContext's LLM judge for
    that reward's quality term (0 without one, and its reason says so). ``localization=False`` leaves
    out the localization columns (they parse the reported files' source; a browser does not need them)."""
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    row: dict = {"task_id": trace.task_id, "trace_id": trace.trace_id, "policy": trace.policy,
                 "toolset": trace.toolset, "repo": task.repo if task else None, "split": task.split if task else None,
                 "stop_reason": trace.stop_reason, "error": trace.error, "reward": math.nan}
    tc = _trace_columns(trace)
    row.update({k: tc[k] for k in ("reported", "turns", "calls", "calls_per_turn", "max_parallel", "wellformed_calls",
                                   "wellformed", "any_wellformed", "report_wellformed", "wall_s", "model_s", "tool_s",
                                   "prompt_tokens", "completion_tokens", "n_files_reported")})
    row["gold_files"] = None
    gold_cols = [c for c in COLUMNS if c.startswith(("file_", "line_", "all_gold_at_", "recall_at_"))]
    row.update(dict.fromkeys(gold_cols))
    row.update(process_row(trace, task))
    if task is None:
        row["reward"] = _meta_reward(trace)
        return row
    rep, root, n = trace.report, task.root, trace.n_turns
    names = list(REWARDS) if rewards is None else list(dict.fromkeys([*rewards, reward]))
    for name in names:
        s = score_report(name, task.gold, rep, n, root=root, **episode_kwargs(name, trace, task.query, judge))
        row[reward_column(name)] = float(s.value)
        for part, v in s.parts.items():
            row[f"{reward_column(name)}__{column_name(part)}"] = float(v)
    row["reward"] = row[reward_column(reward)]
    pred = rep.files if rep is not None else {}
    for level, prf in (("file", file_prf(pred, task.gold.edited, root)), ("line", line_prf(pred, task.gold.edited, root))):
        row[f"{level}_precision"], row[f"{level}_recall"] = prf.precision, prf.recall
        row[f"{level}_f1"], row[f"{level}_f2"] = prf.f(1.0), prf.f(2.0)
    ranked = ranked_files(trace, root)
    gold = [normalize_path(p) for p in task.gold.edited]
    for k in KS:
        row[f"all_gold_at_{k}"] = all_gold_at_k(ranked, gold, k)
        row[f"recall_at_{k}"] = (len(set(gold) & set(ranked[:k])) / len(set(gold))) if gold else 0.0
    row["n_files_reported"] = len(ranked)
    row["gold_files"] = len(gold)
    if localization:
        row.update(localization_row(task, trace))
        row.update(contextbench_row(task, trace))  # null unless the task has ContextBench gold
    return row


def task_map(tasks: Iterable[Task] | Mapping[str, Task] | None) -> dict[str, Task]:
    """``{id: task}`` from a list of tasks or a mapping (None: empty)."""
    if tasks is None:
        return {}
    return dict(tasks) if isinstance(tasks, Mapping) else {t.id: t for t in tasks}


def episode_rows(traces: Iterable[Trace], tasks: Iterable[Task] | Mapping[str, Task] | None = None,
                 reward: str = "relace", rewards: Sequence[str] | None = None, judge=None,
                 localization: bool = True, first_per_task: bool = False, only_tasks: bool = False,
                 scoring: Sequence[str] = ()) -> list[dict]:
    """Rows of many episodes (see :func:`episode_table`)."""
    check_scoring(scoring)
    by_id = task_map(tasks)
    kept, seen, dup = [], set(), 0
    for tr in traces:
        if only_tasks and tr.task_id not in by_id:
            continue
        if first_per_task:
            if tr.task_id in seen:
                dup += 1
                continue
            seen.add(tr.task_id)
        kept.append(tr)
    if dup:
        warnings.warn(f"{dup} duplicate traces ignored (first one per task kept)")
    if judge is not None:  # every judge question at once, concurrently, before the rows
        judge.score_many(judge_requests((tr.report, by_id[tr.task_id].root, episode_query(tr, by_id[tr.task_id].query),
                                         finish_reason(tr)) for tr in kept if tr.task_id in by_id))
    return [episode_row(tr, by_id.get(tr.task_id), reward, rewards, judge, localization, scoring) for tr in kept]


def episode_table(traces: Iterable[Trace], tasks: Iterable[Task] | Mapping[str, Task] | None = None,
                  reward: str = "relace", rewards: Sequence[str] | None = None, judge=None,
                  localization: bool = True, first_per_task: bool = False, only_tasks: bool = False,
                  scoring: Sequence[str] = ()) -> pl.DataFrame:
    """The episode table of ``traces`` as a polars frame, one row per trace (:func:`episode_row`).
    ``tasks`` (a list or ``{id: task}``) give the gold; ``first_per_task`` keeps the first trace of
    each task (later ones are counted in a warning); ``only_tasks`` drops traces of tasks not given.
    An empty table still has every column of :data:`COLUMNS`. ``scoring``: see :func:`episode_row`."""
    rows = episode_rows(traces, tasks, reward, rewards, judge, localization, first_per_task, only_tasks, scoring)
    if not rows:
        return pl.DataFrame(schema=EMPTY_SCHEMA)
    return pl.DataFrame(rows, infer_schema_length=None)


_BOOL = {"reported", "wellformed", "any_wellformed", "report_wellformed",
         *(c for c, k in process_schema().items() if k == "bool")}
_INT = {"turns", "calls", "max_parallel", "wellformed_calls", "prompt_tokens", "completion_tokens",
        "n_files_reported", "gold_files", *(c for c, k in process_schema().items() if k == "int")}
#: The schema of an empty episode table.
EMPTY_SCHEMA = {c: (pl.Utf8 if c in TEXT_COLUMNS else pl.Boolean if c in _BOOL else pl.Int64 if c in _INT
                    else pl.Float64) for c in COLUMNS}
