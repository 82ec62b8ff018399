"""The episode table: one row per episode (a :class:`~fasbench.records.Trace` with its task), one
column vocabulary for every workflow that tabulates episodes — evaluation runs (``summary.parquet``),
the trace browser, SFT and RL before/after evaluations (:mod:`fasbench.evaluation.checkpoints`).

:func:`episode_row` builds a row, :func:`episode_table` a polars frame of many. :data:`TABLE` is the
one declaration of every fixed column (its meaning, its type and how it is computed from an
:class:`Episode`, the facts of one episode each computed once); :data:`COLUMNS` (name → meaning) and
:data:`EMPTY_SCHEMA` are read from it (the process measures among them: :data:`fasbench.scoring.process.PROCESS_COLUMNS`,
each with its definition and source). :data:`COLUMN_FAMILIES` documents the generated ones: a column
per reward and reward part (every reward of ``fasbench.scoring.reward.REWARDS``, scored by
``fasbench.scoring.reward.score_episode``), and the localization columns of :mod:`fasbench.scoring.localization`.
Adding a column is one entry in :data:`TABLE`; adding a reward is one entry in ``REWARDS``.

A column that needs the gold (rewards, precision/recall, all-gold@k, recall@k, localization) is null when the
episode's task is not given; ``reward`` then comes from ``trace.meta["reward"]`` (a run's summary
puts it there, see ``replay.run_episodes``) and is NaN when absent, so that a table sorts either way.
A trace without a report scores like an empty report (every reward is defined for it); a trace of a
failed episode (``stop_reason == "policy_error"``, no turns) has zero turns and calls and its
``error``.
"""

from __future__ import annotations

import math
import re
import tempfile
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import polars as pl

from fasbench.models import well_formed
from fasbench.records import Task, Trace
from fasbench.scoring.contextbench import CONTEXTBENCH_BOUNDS, contextbench_row
from fasbench.scoring.localization import FC_SCORINGS, KS, LOCALIZATION_BOUNDS, fastcontext_row, localization_row
from fasbench.scoring.process import PROCESS_BOUNDS, PROCESS_COLUMNS, process_row, process_schema
from fasbench.scoring.reward import (
    DEFAULT_REWARD,
    REWARDS,
    Score,
    judge_requests,
    report_files_prf,
    report_lines_prf,
    reward_named,
    score_episode,
)
from fasbench.stats.metrics import NONNEGATIVE, PRF, UNIT, Bounds, all_gold_at_k, normalize_path, scoring_memo
from fasbench.tools import TOOLSETS, make_toolset


@cache
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


@dataclass
class Episode:
    """One episode as the table sees it: the trace, its task (None: the gold columns are null) and the
    rewards to score; every fact a column needs is computed once, on first use."""

    trace: Trace
    task: Task | None = None
    reward: str = DEFAULT_REWARD  # the headline `reward` column
    rewards: Sequence[str] | None = None  # rewards with columns; None = every reward of REWARDS
    judge: Any = None  # FastContext's LLM judge (fasbench.scoring.judge.Judge) for the judged rewards

    @cached_property
    def root(self) -> str | None:
        return self.task.root if self.task is not None else None

    @cached_property
    def calls(self) -> list:
        return [c for t in self.trace.turns for c in t.calls]

    @cached_property
    def well_formed(self) -> list[bool] | None:
        """Per call: arguments a JSON object, name a tool of the tool set (None: not our tool set)."""
        schemas = tool_schemas(self.trace.toolset)
        return [well_formed(c, list(schemas)) for c in self.calls] if schemas is not None else None

    @cached_property
    def ranked(self) -> list[str]:
        return ranked_files(self.trace, self.root)

    @cached_property
    def gold_files(self) -> list[str]:
        return [normalize_path(p) for p in self.task.gold.edited]

    @cached_property
    def files_prf(self) -> PRF:
        return report_files_prf(self.task.gold, self.trace.report, self.root)

    @cached_property
    def lines_prf(self) -> PRF:
        return report_lines_prf(self.task.gold, self.trace.report, self.root)

    @cached_property
    def process(self) -> dict:
        """The process measures (:func:`fasbench.scoring.process.process_row`; the task-dependent ones null without it)."""
        return process_row(self.trace, self.task)

    @cached_property
    def scores(self) -> dict[str, Score]:
        """Reward name → its score of this episode (:func:`fasbench.scoring.reward.score_episode`)."""
        names = list(REWARDS) if self.rewards is None else list(dict.fromkeys([*self.rewards, self.reward]))
        return {n: score_episode(n, self.trace, self.task, self.judge) for n in names}


@dataclass(frozen=True)
class Column:
    """One fixed column: its meaning, its polars type, its value of an :class:`Episode`; a ``gold``
    column needs the task and is null without it; ``bounds`` the range of its values (read by
    :func:`column_bounds`: None, undeclared, means no clipping; a boolean column's mean is in [0, 1])."""

    meaning: str
    dtype: Any
    value: Callable[[Episode], Any]
    gold: bool = False
    bounds: Bounds | None = None  # the range of its values (intervals are clipped to it); a boolean's is [0, 1]


def _tokens(trace: Trace, key: str) -> int | None:
    got = [getattr(t, key) for t in trace.turns if getattr(t, key) is not None]
    return int(sum(got)) if got else None


def _ok(e: Episode, when: Callable[[list[bool]], Any]):
    return when(e.well_formed) if e.well_formed is not None else None


def _headline(e: Episode) -> float:
    return float(e.scores[e.reward].value) if e.task is not None else _meta_reward(e.trace)


def _recall_at(e: Episode, k: int) -> float:
    gold = set(e.gold_files)
    return len(gold & set(e.ranked[:k])) / len(gold) if gold else 0.0


_KIND = {"int": pl.Int64, "bool": pl.Boolean, "float": pl.Float64}
_PRF = {
    "precision": lambda p: p.precision,
    "recall": lambda p: p.recall,
    "f1": lambda p: p.f(1.0),
    "f2": lambda p: p.f(2.0),
}

#: Every fixed column of the episode table, in order: the one place a column is declared.
TABLE: dict[str, Column] = {
    "task_id": Column("the task's id", pl.Utf8, lambda e: e.trace.task_id),
    "trace_id": Column("the episode's id (unique per trace)", pl.Utf8, lambda e: e.trace.trace_id),
    "policy": Column(
        "the policy's name (its spec, or a label such as 'before'/'after' of a checkpoint)",
        pl.Utf8,
        lambda e: e.trace.policy,
    ),
    "toolset": Column("the tool set the episode ran with (relace | fastcontext)", pl.Utf8, lambda e: e.trace.toolset),
    "repo": Column("the task's repository (null without the task)", pl.Utf8, lambda e: e.task.repo, gold=True),
    "split": Column(
        "the task's split train/dev/test (null without the task)", pl.Utf8, lambda e: e.task.split, gold=True
    ),
    "stop_reason": Column(
        "how the episode ended: reported | max_turns | no_calls | policy_error | …",
        pl.Utf8,
        lambda e: e.trace.stop_reason,
    ),
    "error": Column("the error of a failed episode (null otherwise)", pl.Utf8, lambda e: e.trace.error),
    "reward": Column(
        "the headline reward (the table's `reward` argument, default relace); without the task, "
        "trace.meta['reward'] or NaN",
        pl.Float64,
        _headline,
    ),
    "reported": Column("a report was parsed", pl.Boolean, lambda e: e.trace.report is not None),
    "turns": Column("assistant turns used", pl.Int64, lambda e: e.trace.n_turns, bounds=NONNEGATIVE),
    "calls": Column("tool calls made (the report call included)", pl.Int64, lambda e: len(e.calls), bounds=NONNEGATIVE),
    "calls_per_turn": Column(
        "calls / turns (0 without turns)",
        pl.Float64,
        lambda e: len(e.calls) / e.trace.n_turns if e.trace.n_turns else 0.0,
        bounds=NONNEGATIVE,
    ),
    "max_parallel": Column(
        "most calls in one turn",
        pl.Int64,
        lambda e: max((len(t.calls) for t in e.trace.turns), default=0),
        bounds=NONNEGATIVE,
    ),
    "wellformed_calls": Column(
        "calls whose arguments parsed to a JSON object and whose name is a tool of the tool set",
        pl.Int64,
        lambda e: _ok(e, sum),
        bounds=NONNEGATIVE,
    ),
    "wellformed": Column(
        "the episode made calls and all were well-formed", pl.Boolean, lambda e: _ok(e, lambda ok: bool(ok) and all(ok))
    ),
    "any_wellformed": Column("at least one call was well-formed", pl.Boolean, lambda e: _ok(e, any)),
    "report_wellformed": Column(
        "wellformed and reported (the SFT acceptance measure)",
        pl.Boolean,
        lambda e: _ok(e, lambda ok: e.trace.report is not None and bool(ok) and all(ok)),
    ),
    "wall_s": Column("episode wall time, seconds", pl.Float64, lambda e: e.trace.wall_time, bounds=NONNEGATIVE),
    "prepare_s": Column(
        "seconds the policy spent preparing before the episode, outside wall_s: building or "
        "loading a retrieval index (bm25, dense; the first episode on a corpus pays the build); "
        "null for a policy that prepares nothing",
        pl.Float64,
        lambda e: (e.trace.meta or {}).get("prepare_s"),
        bounds=NONNEGATIVE,
    ),
    "model_s": Column(
        "time spent in the policy, seconds",
        pl.Float64,
        lambda e: sum(t.model_time for t in e.trace.turns),
        bounds=NONNEGATIVE,
    ),
    "tool_s": Column(
        "time spent running tools, seconds",
        pl.Float64,
        lambda e: sum(t.tool_time for t in e.trace.turns),
        bounds=NONNEGATIVE,
    ),
    "prompt_tokens": Column(
        "prompt tokens summed over turns (null when the policy does not count them)",
        pl.Int64,
        lambda e: _tokens(e.trace, "prompt_tokens"),
        bounds=NONNEGATIVE,
    ),
    "completion_tokens": Column(
        "completion tokens summed over turns (null when not counted)",
        pl.Int64,
        lambda e: _tokens(e.trace, "completion_tokens"),
        bounds=NONNEGATIVE,
    ),
    "n_files_reported": Column("distinct files in the report", pl.Int64, lambda e: len(e.ranked), bounds=NONNEGATIVE),
    "gold_files": Column(
        "files in the gold (null without the task)",
        pl.Int64,
        lambda e: len(e.gold_files),
        gold=True,
        bounds=NONNEGATIVE,
    ),
    **{
        f"{lv}_{m}": Column(
            f"{lv}-level {m.replace('_', ' ')} of the report against the gold (FastContext's {lv} P/R/F)",
            pl.Float64,
            (lambda e, lv=lv, get=get: get(e.files_prf if lv == "file" else e.lines_prf)),
            gold=True,
            bounds=UNIT,
        )
        for lv in ("file", "line")
        for m, get in _PRF.items()
    },
    **{
        f"all_gold_at_{k}": Column(
            f"every gold file in the report's top {k} (fasbench.stats.metrics.all_gold_at_k; not "
            f"LocAgent's Acc@{k}, which asks for min(|gold|, {k}) gold files there: "
            f"file_acc_at_{k})",
            pl.Float64,
            (lambda e, k=k: all_gold_at_k(e.ranked, e.gold_files, k)),
            gold=True,
            bounds=UNIT,
        )
        for k in KS
    },
    **{
        f"recall_at_{k}": Column(
            f"share of gold files in the report's top {k}",
            pl.Float64,
            (lambda e, k=k: _recall_at(e, k)),
            gold=True,
            bounds=UNIT,
        )
        for k in KS
    },
    # grounding, redundancy, tool and context efficiency, lost calls: defined in fasbench.scoring.process
    **{
        c: Column(meaning, _KIND[kind], (lambda e, c=c: e.process[c]), bounds=PROCESS_BOUNDS[c])
        for (c, meaning), kind in zip(PROCESS_COLUMNS.items(), process_schema().values())
    },
}

#: Every fixed column of the episode table, in order, with its meaning (read from :data:`TABLE`).
COLUMNS: dict[str, str] = {name: c.meaning for name, c in TABLE.items()}

#: Columns generated from a name: what each family means (NAME = reward name with non-alphanumerics
#: as "_", e.g. relace_f2; PART = one of the reward's parts).
COLUMN_FAMILIES: dict[str, str] = {
    "reward_NAME": "the value of reward NAME (fasbench.scoring.reward.REWARDS)",
    "reward_NAME__PART": "one part of reward NAME (e.g. reward_relace__turn_penalty)",
    "localization": "module/function grains, LocAgent Acc@k, SWE-Explore (fasbench.scoring.localization.localization_columns)",
    "cb_*": "ContextBench's file/block/line recall, precision, F1, efficiency (AUC-Coverage) and evidence drop "
    "against gold.context, null for tasks without it (fasbench.scoring.contextbench.CONTEXTBENCH_COLUMNS)",
    "fc_*": "with scoring fastcontext / fastcontext-all: FastContext's run_score.py per task "
    "(fasbench.scoring.localization.fastcontext_row)",
}

#: Columns that are text (filter/search keys of a browser).
TEXT_COLUMNS = tuple(name for name, c in TABLE.items() if c.dtype == pl.Utf8)

#: The schema of an empty episode table.
EMPTY_SCHEMA = {name: c.dtype for name, c in TABLE.items()}


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


def column_bounds(name: str, reward: str | None = None) -> Bounds | None:
    """The range a column's values can take, as its declaration gives it (the small-n t interval of its
    mean is clipped to it, :func:`fasbench.stats.metrics.mean_ci`): a fixed column's ``Column.bounds``
    (:data:`TABLE`; a boolean's [0, 1]), ``reward_NAME`` / ``reward_NAME__PART`` the reward's
    ``bounds`` / ``parts`` (``fasbench.scoring.reward.REWARDS``), the headline ``reward`` those of
    ``reward`` (the run's headline reward; None: not known, no clipping), the localization, ``fc_*``
    and ``cb_*`` columns their modules' declarations. None (no clipping) for anything undeclared."""
    c = TABLE.get(name)
    if name == "reward":
        return REWARDS[reward].bounds if reward in REWARDS else None
    if c is not None:
        return c.bounds if c.bounds is not None or c.dtype != pl.Boolean else UNIT
    if name.startswith("reward_"):
        base, _, part = name.partition("__")
        for n, r in REWARDS.items():
            if reward_column(n) == base:
                return {column_name(p): b for p, b in r.parts.items()}.get(part) if part else r.bounds
        return None
    return LOCALIZATION_BOUNDS.get(name) or CONTEXTBENCH_BOUNDS.get(name)


def view_columns() -> dict[str, str]:
    """Notebook 04's reward views, read from the registry (``Reward.view``): label → the column that
    shows it (the reward's ``view_part`` column, else its value)."""
    return {
        (r.label or n): reward_column(n) + (f"__{column_name(r.view_part)}" if r.view_part else "")
        for n, r in REWARDS.items()
        if r.view
    }


def check_scoring(scoring: Sequence[str]) -> list[str]:
    """The scoring names, checked (one line naming the bad one)."""
    for s in scoring:
        if s not in FC_SCORINGS:
            raise ValueError(f"unknown scoring {s!r}; choose {' or '.join(FC_SCORINGS)}")
    if len(set(scoring)) > 1:
        raise ValueError(f"scorings {', '.join(scoring)} write the same fc_* columns; choose one")
    return list(dict.fromkeys(scoring))


def episode_row(
    trace: Trace,
    task: Task | None = None,
    reward: str = DEFAULT_REWARD,
    rewards: Sequence[str] | None = None,
    judge=None,
    localization: bool = True,
    scoring: Sequence[str] = (),
) -> dict:
    """One row of the episode table: the columns of :data:`TABLE`, then ``reward_NAME`` /
    ``reward_NAME__PART`` for each name of ``rewards`` (default: every reward of ``REWARDS``), then
    the localization columns. ``reward`` picks the headline ``reward`` column. ``judge``: FastContext's
    LLM judge for the judged rewards' quality term (0 without one, and its reason says so).
    ``localization=False`` leaves out the localization columns (they parse the reported files'
    source; a browser does not need them). ``scoring``: ``fastcontext`` (or ``fastcontext-all``) adds
    FastContext's run_score.py columns ``fc_*``. The report's files are normalised once for the whole
    row (:func:`fasbench.stats.metrics.scoring_memo`)."""
    reward_named(reward)  # an unknown name fails here, in one line
    scoring = check_scoring(scoring)
    with scoring_memo():
        e = Episode(trace, task, reward, rewards, judge)
        row = {name: (None if c.gold and task is None else c.value(e)) for name, c in TABLE.items()}
        if task is None:
            return row
        for name, s in e.scores.items():
            row[reward_column(name)] = float(s.value)
            for part, v in s.parts.items():
                row[f"{reward_column(name)}__{column_name(part)}"] = float(v)
        if localization:
            row.update(localization_row(task, trace))
            row.update(contextbench_row(task, trace))  # null unless the task has ContextBench gold
        for sc in scoring:
            row.update(fastcontext_row(task, trace, FC_SCORINGS[sc]))
        return row


def task_map(tasks: Iterable[Task] | Mapping[str, Task] | None) -> dict[str, Task]:
    """``{id: task}`` from a list of tasks or a mapping (None: empty)."""
    if tasks is None:
        return {}
    return dict(tasks) if isinstance(tasks, Mapping) else {t.id: t for t in tasks}


def episode_rows(
    traces: Iterable[Trace],
    tasks: Iterable[Task] | Mapping[str, Task] | None = None,
    reward: str = DEFAULT_REWARD,
    rewards: Sequence[str] | None = None,
    judge=None,
    localization: bool = True,
    first_per_task: bool = False,
    only_tasks: bool = False,
    scoring: Sequence[str] = (),
) -> list[dict]:
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
        warnings.warn(f"{dup} duplicate traces ignored (first one per task kept)", stacklevel=2)
    if judge is not None:  # every judge question at once, concurrently, before the rows
        judge.score_many(judge_requests((tr, by_id[tr.task_id]) for tr in kept if tr.task_id in by_id))
    return [episode_row(tr, by_id.get(tr.task_id), reward, rewards, judge, localization, scoring) for tr in kept]


def episode_table(
    traces: Iterable[Trace],
    tasks: Iterable[Task] | Mapping[str, Task] | None = None,
    reward: str = DEFAULT_REWARD,
    rewards: Sequence[str] | None = None,
    judge=None,
    localization: bool = True,
    first_per_task: bool = False,
    only_tasks: bool = False,
    scoring: Sequence[str] = (),
) -> pl.DataFrame:
    """The episode table of ``traces`` as a polars frame, one row per trace (:func:`episode_row`).
    ``tasks`` (a list or ``{id: task}``) give the gold; ``first_per_task`` keeps the first trace of
    each task (later ones are counted in a warning); ``only_tasks`` drops traces of tasks not given.
    An empty table still has every column of :data:`COLUMNS`. ``scoring``: see :func:`episode_row`."""
    rows = episode_rows(traces, tasks, reward, rewards, judge, localization, first_per_task, only_tasks, scoring)
    if not rows:
        return pl.DataFrame(schema=EMPTY_SCHEMA)
    return pl.DataFrame(rows, infer_schema_length=None)
