"""THE task choice of an evaluation run, shared by ``fasbench eval`` and the notebooks.

``plan_run(tasks, policy, …)`` turns a task set name and the options that choose tasks into a
:class:`RunPlan`: the task set (``fasbench.data.tasksets``), only the given ids (``ids``, ``ids_file``:
``fasbench.data.selection.pick_ids``), the first ``limit``, only those usable on the corpus kind
(``fasbench.data.selection.usable``; the excluded ones with their reasons in ``OUT/excluded.jsonl``), on
perturbed corpora (``perturb``: ``fasbench.data.perturb_gold.perturb_tasks``), shard ``i/n``
(``fasbench.evaluation.shards``), and the run directory (``out``, else a run name derived from every
option that changes what the run holds: :func:`fasbench.evaluation.rundir.run_name`). What it decides
is said in lines (``say``; the CLI prints them on stderr). :meth:`RunPlan.run` then runs it
(:func:`fasbench.evaluation.evaluate.run_eval`, which records the plan in ``run.json``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fasbench.base.paths import cache_dir
from fasbench.data.perturb import parse_perturb
from fasbench.data.perturb_gold import perturb_tasks
from fasbench.data.selection import describe_excluded, describe_run_count, pick_ids, read_ids_file, usable
from fasbench.data.tasksets import corpus_kind_of, load_task_set, parse_task_set
from fasbench.evaluation.evaluate import run_eval
from fasbench.evaluation.rundir import run_name
from fasbench.evaluation.shards import parse_shard, select_shard, shard_record
from fasbench.harness import Limits
from fasbench.policies import check_policy_spec
from fasbench.records import Task, write_tasks
from fasbench.scoring.reward import DEFAULT_REWARD
from fasbench.tools import toolset_class

CORPUS_KINDS = ("offline", "online")


@dataclass
class RunPlan:
    """What a run will run and where: the tasks chosen, the run directory, and what ``run.json`` records."""

    tasks: list[Task]
    out: Path
    policy: str
    toolset: str
    limits: Limits
    reward: str
    task_source: str  # the task set as asked for, with the limit and the perturbation noted
    corpus: str  # the corpus kind the tasks were chosen on
    excluded: list[dict] = field(default_factory=list)  # {id, reason, detail}: not usable, not perturbable
    shard: dict | None = None  # run.json's shard (fasbench.evaluation.shards.shard_record)
    count: str = ""  # one line: how many tasks run of those asked for, and why fewer
    narrowed: bool = False  # whether a limit, an exclusion or a shard made the run smaller than the task set

    def run(self, **kw):
        """:func:`fasbench.evaluation.evaluate.run_eval` of this plan (``kw``: workers, backend, judge,
        progress, warn, scoring); returns the summary."""
        return run_eval(
            self.tasks,
            self.policy,
            self.toolset,
            self.out,
            self.limits,
            reward=self.reward,
            task_source=self.task_source,
            corpus=self.corpus,
            shard=self.shard,
            **kw,
        )


def plan_run(
    tasks: str | Sequence[Task],
    policy: str,
    toolset: str = "relace",
    out: str | Path | None = None,
    *,
    ids: Sequence[str] = (),
    ids_file: str | Path | None = None,
    limit: int = 0,
    corpus: str | None = None,
    perturb: str = "",
    shard: str = "",
    limits: Limits | None = None,
    reward: str = DEFAULT_REWARD,
    prefix: str | None = None,
    task_source: str | None = None,
    say: Callable[[str], None] = print,
) -> RunPlan:
    """The plan of a run of ``policy`` on the task set ``tasks`` (``SOURCE[:SPLIT]``, a Task JSONL file,
    ``git:PATH``; or the tasks themselves, e.g. a notebook's drawn sample, recorded as ``task_source``,
    default ``N tasks``): the module doc lists the steps. ``out`` None: ``CACHE/runs/<prefix>-KEY`` (``prefix``
    default ``eval-<policy family>``). Bad options and an empty choice raise a one-line ``ValueError``;
    the excluded tasks are written to ``OUT/excluded.jsonl`` before any episode runs."""
    limits = limits or Limits()
    check_policy_spec(policy)  # a bad policy or tool set fails before any corpus is prepared
    toolset_class(toolset)
    if corpus not in (None, *CORPUS_KINDS):
        raise ValueError(f"--corpus must be {' or '.join(CORPUS_KINDS)}, got {corpus!r}")
    if perturb:
        parse_perturb(perturb)  # a bad spec fails before any corpus is built
    where = parse_shard(shard) if shard else None  # idem
    if isinstance(tasks, str):
        name = parse_task_set(tasks)
        ts = load_task_set(name)
        source = task_source or (
            f"{name.target}:fasbench-{name.split}"
            if name.kind == "file" and name.split
            else (name.target if name.kind == "file" else name.spec)
        )  # a file by its absolute path; a split in its canonical spelling (fasbench-test, not test)
    else:
        ts = list(tasks)
        source = task_source or f"{len(ts)} tasks"
    chosen = list(ids or []) + (read_ids_file(ids_file) if ids_file else [])
    if chosen:
        ts = pick_ids(ts, chosen)
    available = len(ts)
    ts = ts[:limit] if limit else ts
    n = len(ts)
    if out is None:  # the default run name: every option that changes what the run holds
        out = cache_dir("runs") / run_name(
            prefix or f"eval-{policy.split(':', 1)[0]}",
            {
                "policy": policy,
                "toolset": toolset,
                "tasks": source,
                "ids": chosen,
                "limit": limit,
                "corpus": corpus,
                "max_turns": limits.max_turns,
                "max_calls": limits.max_calls_per_turn,
                "shard": shard,
                **({"report_contract": limits.report_contract} if limits.report_contract != "free" else {}),
                **({"reward": reward} if reward != DEFAULT_REWARD else {}),
                **({"perturb": perturb} if perturb else {}),
            },
        )
        say(f"run directory: {out}")
    out = Path(out)
    ts, excluded = usable(ts, corpus)
    if perturb:  # the same tasks on their perturbed corpora; a task that cannot be perturbed is excluded
        ts, unperturbed = perturb_tasks(ts, perturb)
        excluded = excluded + unperturbed
    say(describe_excluded(excluded, n, corpus))
    if excluded:
        out.mkdir(parents=True, exist_ok=True)
        write_tasks(out / "excluded.jsonl", excluded)
        for r in excluded[:10]:
            say(f"  {r['id']}: {r['reason']} {r.get('detail', '')[:120]}")
    record = None
    if where:
        record = shard_record(where[0], where[1], len(ts))
        ts = select_shard(ts, *where)
    count = describe_run_count(len(ts), limit or None, available, excluded, corpus, out / "excluded.jsonl")
    if not ts:
        raise ValueError(f"no task left to run ({count})")
    usable_n = record["tasks_before_sharding"] if record else len(ts)  # a shard: the usable tasks of the whole run
    narrowed = bool(limit or excluded or shard)
    if narrowed:
        say(count)
    return RunPlan(
        ts,
        out,
        policy,
        toolset,
        limits,
        reward,
        source + _subset(limit, usable_n, excluded) + (f" [{perturb}]" if perturb else ""),
        corpus or corpus_kind_of(ts) or "default",
        excluded,
        record,
        count,
        narrowed,
    )


def _subset(limit: int | None, usable_n: int, excluded: list) -> str:
    """The recorded task source's subset note: ``(first N)`` for ``--limit``; ``(K usable)`` when tasks were
    excluded as not usable (so that a label never reads "all of Lite's 300" over the 215 that ran)."""
    parts = ([f"first {limit}"] if limit else []) + ([f"{usable_n} usable"] if excluded else [])
    return f" ({', '.join(parts)})" if parts else ""
