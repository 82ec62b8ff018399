"""A run's episodes with their gold: traces, tasks and metadata of a run directory, found by path or
by name (``fasbench.evaluation.runs.resolve_run``).

The gold comes from the run's ``tasks.jsonl`` (written by ``fasbench.evaluation.evaluate.run_eval`` since runs
record their tasks), else from the task source recorded in ``run.json`` (a task file or
``SOURCE[:SPLIT]``). The shipped example run (``data/examples/heuristic-swebench-lite``: the
heuristic searcher on SWE-bench Lite test tasks, see its SOURCE.md) keeps its files gzipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from fasbench.base.paths import data_dir
from fasbench.data.corpus import resolve_root
from fasbench.data.tasksets import load_task_set
from fasbench.evaluation.episodes import reward_column
from fasbench.evaluation.rundir import RunMeta, load_summary, read_run
from fasbench.evaluation.runs import RunError, resolve_run
from fasbench.records import Task, Trace, read_tasks, read_traces
from fasbench.replay.widgets import TraceReplay

EXAMPLE_RUN = "examples/heuristic-swebench-lite"  # under data/
EXAMPLE_TASK = "django__django-15252"  # its episode that views and cites gold lines


@dataclass
class RunEpisodes:
    """The traces of one run, its tasks by id (with gold) and its ``run.json``."""

    path: Path
    traces: list[Trace]
    tasks: dict[str, Task] = field(default_factory=dict)
    meta: RunMeta = field(default_factory=RunMeta)  # run.json (fasbench.evaluation.rundir)
    gold_from: str = ""  # "tasks.jsonl", the task source, or "" (no gold found)

    @property
    def name(self) -> str:
        return self.path.name


def _first(path: Path, *names: str) -> Path | None:
    return next((path / n for n in names if (path / n).exists()), None)


def _rewards_from_summary(path: Path, traces: list[Trace], reward: str) -> None:
    """Each trace's ``meta["reward"]`` from the reward's column (``fasbench.evaluation.episodes.reward_column``) of
    ``summary.parquet`` (written by ``fasbench.evaluation.evaluate``), so that the browser shows rewards without the tasks."""
    col = reward_column(reward)
    if not (path / "summary.parquet").exists():
        return
    try:  # the one contained reader (a FIFO is refused, never waited on); unreadable: the browser shows no rewards from it
        df = load_summary(path, key="trace_id")
    except (ValueError, OSError):
        return
    if col in df.columns and "trace_id" in df.columns:
        by_id = dict(zip(df["trace_id"].to_list(), df[col].to_list()))
        for tr in traces:
            if by_id.get(tr.trace_id) is not None:
                tr.meta.setdefault("reward", float(by_id[tr.trace_id]))


def _tasks_from_source(source: str | None) -> list[Task]:
    """The tasks of the task set recorded in ``run.json`` (``fasbench.data.tasksets.load_task_set``); none
    when it names no task set on this machine. Their corpora are not materialised here
    (``fasbench.data.corpora.with_corpora``): opening a run must not fetch or build corpora."""
    if not source:
        return []
    spec = re.sub(r" \(first \d+\)$", "", source)  # the CLI notes --limit after the source
    try:
        return load_task_set(spec)
    except (ValueError, FileNotFoundError):
        return []


def load_run_episodes(run: str | Path, reward: str = "relace", max_traces: int | None = None) -> RunEpisodes:
    """A run by directory or name: traces (``traces.jsonl[.gz]``, rewards from ``summary.parquet``),
    tasks with gold and ``run.json``. A run without any trace file raises :class:`fasbench.evaluation.runs.RunError`."""
    p = Path(run)
    if not _first(p, "traces.jsonl", "traces.jsonl.gz"):
        p = resolve_run(run)
    tf = _first(p, "traces.jsonl", "traces.jsonl.gz")
    if tf is None:
        raise RunError(f"{run}: no traces.jsonl in {p}")
    traces = read_traces(tf)[:max_traces] if max_traces else read_traces(tf)
    _rewards_from_summary(p, traces, reward)
    meta = read_run(p)
    kf = _first(p, "tasks.jsonl", "tasks.jsonl.gz")
    tasks, gold_from = (
        (read_tasks(kf), kf.name) if kf else (_tasks_from_source(meta.task_source), meta.task_source or "")
    )
    ids = {t.task_id for t in traces}
    # a shipped run stores corpus roots relative to the corpora cache (no machine's paths in data/)
    by_id = {t.id: replace(t, root=resolve_root(t.root)) for t in tasks if t.id in ids}
    return RunEpisodes(p, traces, by_id, meta, gold_from if by_id else "")


def example_run(reward: str = "relace") -> RunEpisodes:
    """The shipped example run (a real heuristic evaluation with its gold)."""
    return load_run_episodes(data_dir() / EXAMPLE_RUN, reward)


def pick_episode(run: RunEpisodes, task_id: str = "") -> Trace:
    """The episode of ``task_id`` (error naming the run's tasks when absent); by default the example
    task when the run has it, else the episode with the widest turn (ties: most turns)."""
    by_task = {t.task_id: t for t in run.traces}
    if task_id:
        if task_id not in by_task:
            raise RunError(f"run {run.name} has no episode of task {task_id!r}; it has {', '.join(sorted(by_task))}")
        return by_task[task_id]
    if EXAMPLE_TASK in by_task:
        return by_task[EXAMPLE_TASK]
    if not run.traces:
        raise RunError(f"run {run.name} has no episodes")
    return max(run.traces, key=lambda t: (max((len(u.calls) for u in t.turns), default=0), t.n_turns))


def replay_run(run: str | Path, task_id: str = "", reward: str = "relace"):
    """The :class:`fasbench.replay.widgets.TraceReplay` of one episode of a named run, with its gold."""
    r = load_run_episodes(run, reward)
    tr = pick_episode(r, task_id)
    return TraceReplay(tr, r.tasks.get(tr.task_id))
