"""Evaluation: run a policy over tasks in parallel, append traces, summarise with intervals.

``run_eval(tasks, policy, toolset, out)`` runs one episode per task over a process (or thread) pool
with a progress bar, appends each finished trace to ``out/traces.jsonl`` from the main process only
(so no line is written twice), and resumes: the file is repaired (a truncated last line cut) and the
tasks it already holds are skipped. ``out/summary.parquet`` then has one row per task: reward and
its parts under each reward of ``fasbench.reward.REWARDS``, file/line precision/recall/F1/F2,
Acc@k and Recall@k (LocAgent: Acc@k = every gold file in the top k), turns, calls per turn, wall
time split into model and tool time, tokens. ``aggregate`` gives macro averages with bootstrap 95%
intervals; ``compare`` a paired bootstrap between two runs on their shared tasks.
"""

from __future__ import annotations

import json
import os
import re
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

from fasbench.episode_pool import guard_worker, run_pool
from fasbench.harness import Limits, run_episode
from fasbench.localization import localization_row
from fasbench.metrics import acc_at_k, bootstrap_ci, file_prf, line_prf, normalize_path, paired_bootstrap
from fasbench.provenance import code_version, timestamp
from fasbench.records import Task, Trace, append_jsonl, iter_jsonl, read_tasks, repair_jsonl
from fasbench.judge import make_judge
from fasbench.reward import REWARDS, episode_kwargs, finish_reason, judge_requests, score_report

KS = (1, 3, 5, 10)
MAIN_METRICS = ("file_f2", "file_recall", "file_precision", "line_f1", "reward_relace_f2", "turns", "wall_s")


@dataclass
class EvalConfig:
    """What a run directory holds; a resumed run must match it."""

    policy: str  # policy spec, e.g. "heuristic:turns=3"
    toolset: str = "relace"  # relace | fastcontext
    max_turns: int = 6  # episode turn limit (Limits.max_turns)
    max_calls: int = 12  # parallel calls per turn (Limits.max_calls_per_turn)


# ---------------------------------------------------------------- tasks

def load_task_arg(spec: str, limit: int | None = None) -> list[Task]:
    """Tasks from a JSONL file, or from ``SOURCE[:SPLIT]`` (``fasbench.data.load_tasks``)."""
    p = Path(spec)
    if p.exists():
        tasks = read_tasks(p)
    else:
        from fasbench.data import SOURCES, load_tasks

        source, _, split = spec.partition(":")
        if source not in SOURCES:
            raise ValueError(f"--tasks {spec!r} is neither an existing JSONL file nor SOURCE[:SPLIT] with SOURCE "
                             f"in {', '.join(SOURCES)}")
        tasks = load_tasks(source, split or None)
    return tasks[:limit] if limit else tasks


def ensure_roots(tasks: Sequence[Task], skipped: Path | None = None) -> list[Task]:
    """Tasks with a corpus: those without ``root`` are materialised (``fasbench.data.corpus``);
    the ones that cannot be are dropped, with a line each in ``skipped``."""
    out, todo = [], []
    for t in tasks:
        (out if t.root and Path(t.root).is_dir() else todo).append(t)
    if not todo:
        return out
    from tqdm.auto import tqdm

    from fasbench.data.corpus import CorpusError, materialize

    for t in tqdm(todo, desc="corpora", unit="task"):
        try:
            out.append(materialize(t))
        except CorpusError as e:
            if skipped is not None:
                append_jsonl(skipped, [{"task_id": t.id, "reason": getattr(e, "reason", "corpus"), "detail": str(e)}])
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted(out, key=lambda t: order[t.id])


# ---------------------------------------------------------------- running

_WORKER: dict = {}


def _init_worker(spec: str) -> None:
    from fasbench.policies import make_policy

    _WORKER["policy"] = make_policy(spec)


def _init_process_worker(spec: str, main_pid: int) -> None:
    guard_worker(main_pid)  # dies with the run, even after a SIGKILL (fasbench/episode_pool.py)
    _init_worker(spec)


def safe_episode(task: Task, policy, toolset: str, limits: Limits) -> Trace:
    """``run_episode``, where anything that escapes it (a policy that cannot be bound, a tool that
    crashes) fails this episode with its error instead of the run. Policy errors — a model server
    that still fails after the last retry — are already caught by ``run_episode`` (``policy_error``)."""
    from fasbench.policies import bind_policy

    t0 = time.time()
    try:
        _prepare(policy, task)  # the retrieval index of this task's corpus, outside the episode's timing
        return run_episode(task, bind_policy(policy, task), toolset, limits)
    except Exception as e:  # noqa: BLE001 - recorded in the trace, the run goes on
        return Trace(task_id=task.id, policy=getattr(policy, "name", str(policy)), toolset=toolset,
                     stop_reason="policy_error", error=f"episode failed: {type(e).__name__}: {e}",
                     started_at=t0, ended_at=time.time())


def _thread_episode(task: Task, policy, toolset: str, limits: Limits) -> dict:
    """One episode in the thread backend, with the run's one policy object."""
    return safe_episode(task, policy, toolset, limits).to_dict()


def _episode(task_d: dict, spec: str, toolset: str, limits: Limits) -> dict:
    from fasbench.policies import make_policy

    if "policy" not in _WORKER:
        _WORKER["policy"] = make_policy(spec)
    return safe_episode(Task.from_dict(task_d), _WORKER["policy"], toolset, limits).to_dict()


def _prepare(policy, task: Task) -> None:
    """Build or load what the policy needs for this task (a retrieval index of its corpus) just before
    its episode and outside the timed part: indexes are built lazily, one corpus at a time, so the
    first traces appear after one index, not after all of them."""
    prep = getattr(policy, "prepare", None)
    if callable(prep):
        prep([task])


def done_task_ids(traces: Path) -> set[str]:
    """Task ids with a complete trace in the file (after cutting a truncated last line)."""
    repair_jsonl(traces)
    if not traces.exists():
        return set()
    return {d["task_id"] for d in iter_jsonl(traces)}


def _check_config(out: Path, cfg: EvalConfig, task_source: str | None = None) -> None:
    """Write ``run.json`` (the configuration, plus provenance: the task source, the code version and
    the creation time), or check that a resumed run has the same configuration. The provenance keys
    are not compared; a resume adds its own code version to ``resumed`` when it differs."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder (a run directory)")
    f = out / "run.json"
    if f.exists():
        old = json.loads(f.read_text(encoding="utf-8"))
        diff = {k: (old.get(k), v) for k, v in asdict(cfg).items() if old.get(k) != v}
        if diff:
            raise ValueError(f"{out} holds a run with another configuration {diff} (was, now); "
                             "use another --out or delete it")
        ver = code_version()["describe"]
        changed = False
        if task_source and not old.get("task_source"):
            old["task_source"], changed = task_source, True
        if old.get("code_version", {}).get("describe") != ver and ver not in old.get("resumed_with", []):
            old.setdefault("resumed_with", []).append(ver)
            changed = True
        if changed:
            f.write_text(json.dumps(old, indent=1), encoding="utf-8")
    else:
        out.mkdir(parents=True, exist_ok=True)
        meta = {**asdict(cfg), "task_source": task_source, "code_version": code_version(), "created": timestamp()}
        f.write_text(json.dumps(meta, indent=1), encoding="utf-8")


def read_run_meta(out: str | Path) -> dict:
    """``run.json`` of a run directory ({} for a run written before it existed)."""
    f = Path(out) / "run.json"
    return json.loads(f.read_text(encoding="utf-8")) if f.exists() else {}


def _record_tasks(out: Path, tasks: Sequence[Task]) -> None:
    """Keep the run's tasks (with their gold) in ``out/tasks.jsonl``, so the gold of a run can be found
    again (replay, re-scoring) without its task source; tasks already recorded are not repeated."""
    f = out / "tasks.jsonl"
    repair_jsonl(f)
    have = {d["id"] for d in iter_jsonl(f)} if f.exists() else set()
    new = [t for t in tasks if t.id not in have]
    if new:
        append_jsonl(f, new)


def default_backend(spec: str) -> str:
    """thread for the heuristic (its time is spent in ripgrep subprocesses and measured faster than a
    process pool: benchmarks/eval_throughput.py), for HTTP, and for retrieval (the indexes that
    ``prepare`` loaded stay in memory, so episodes time retrieval, not index loading); serial for a
    local model; process otherwise."""
    name = spec.split(":", 1)[0]
    return {"heuristic": "thread", "sequential": "thread", "openai": "thread", "bm25": "thread", "dense": "thread",
            "hf": "serial"}.get(name, "process")


def run_eval(tasks: Sequence[Task], policy: str, toolset: str = "relace", out: str | Path = "runs/eval",
             limits: Limits | None = None, workers: int | None = None, backend: str | None = None,
             progress: bool = True, judge: str | None = None, task_source: str | None = None) -> "pl.DataFrame":  # noqa: F821
    """Run ``policy`` (a spec string) on every task not yet in ``out/traces.jsonl``; return the summary.
    ``judge``: FastContext's LLM judge (``openai:model=…,base_url=…``) for the ``fastcontext`` reward's
    quality term (without one that term is 0, and the reward's reason says so). ``task_source`` (a task
    file or ``SOURCE[:SPLIT]``) is recorded in ``run.json``; the tasks themselves, with their gold, go
    to ``out/tasks.jsonl``."""
    from tqdm.auto import tqdm

    from fasbench.policies import make_policy
    from fasbench.tools import TOOLSETS

    if toolset not in TOOLSETS:
        raise ValueError(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    main_policy = make_policy(policy)  # fails early on a bad spec
    the_judge = make_judge(judge) if judge else None  # idem
    limits = limits or Limits()
    out = Path(out)
    _check_config(out, EvalConfig(policy, toolset, limits.max_turns, limits.max_calls_per_turn), task_source)
    traces = out / "traces.jsonl"
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("tasks have duplicate ids; each task must appear once")
    done = done_task_ids(traces)
    todo = ensure_roots([t for t in tasks if t.id not in done], out / "skipped.jsonl")
    _record_tasks(out, [t for t in tasks if t.id in done] + todo)  # done ones too: a run from before tasks.jsonl
    note = getattr(main_policy, "cache_note", None)
    if callable(note) and todo:  # e.g. "bm25: 2 of 6 corpus indexes cached under …"
        print(note(todo))
    backend = backend or default_backend(policy)
    workers = max(1, workers or os.cpu_count() or 1)
    if backend not in ("process", "thread", "serial"):
        raise ValueError(f"backend must be process, thread or serial, got {backend!r}")
    bar = tqdm(total=len(todo), desc=f"eval {policy}", unit="ep", disable=not progress)
    if backend == "serial" or workers == 1 or len(todo) <= 1:
        for t in todo:
            append_jsonl(traces, [safe_episode(t, main_policy, toolset, limits)])
            bar.update()
    else:
        pool_cls = ProcessPoolExecutor if backend == "process" else ThreadPoolExecutor
        kw: dict = {}
        if backend == "process":
            # not fork: a forked child inherits the harness's tool thread pool without its threads
            # (a parent that ran episodes itself would deadlock its workers)
            import multiprocessing as mp

            kw = {"initializer": _init_process_worker, "initargs": (policy, os.getpid()),
                  "mp_context": mp.get_context("forkserver")}

        def keep(d: dict) -> None:
            append_jsonl(traces, [d])
            bar.update()

        # bounded queue; Ctrl-C cancels what is queued and stops the workers (finished traces are kept)
        if backend == "thread":  # one policy object (one HTTP connection pool) for all episodes
            run_pool(pool_cls(max_workers=workers, **kw), _thread_episode,
                     ((t, main_policy, toolset, limits) for t in todo), keep, workers)
        else:
            run_pool(pool_cls(max_workers=workers, **kw), _episode,
                     ((t.to_dict(), policy, toolset, limits) for t in todo), keep, workers)
    bar.close()
    df = summarize(tasks, traces, judge=the_judge)
    df.write_parquet(out / "summary.parquet")
    return df


# ---------------------------------------------------------------- summary

def _col(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_")


def ranked_files(trace: Trace, root: str | None = None) -> list[str]:
    """Reported files in the order the report lists them (its rank)."""
    if trace.report is None:
        return []
    seen = dict.fromkeys(normalize_path(p, root) for p in trace.report.files)  # ordered, linear
    seen.pop("", None)
    return list(seen)


def summary_row(task: Task, trace: Trace, judge=None) -> dict:
    """One row of summary.parquet: every reward with its parts, P/R/F at file and line level,
    Acc@k / Recall@k, turns, calls, timings and tokens."""
    rep, root, n = trace.report, task.root, trace.n_turns
    row: dict = {"task_id": task.id, "repo": task.repo, "split": task.split, "policy": trace.policy,
                 "toolset": trace.toolset, "trace_id": trace.trace_id, "stop_reason": trace.stop_reason,
                 "error": trace.error}
    for name in REWARDS:
        s = score_report(name, task.gold, rep, n, root=root, **episode_kwargs(name, trace, task.query, judge))
        row[f"reward_{_col(name)}"] = float(s.value)
        for part, v in s.parts.items():
            row[f"reward_{_col(name)}__{_col(part)}"] = float(v)
    pred = rep.files if rep is not None else {}
    for level, prf in (("file", file_prf(pred, task.gold.edited, root)), ("line", line_prf(pred, task.gold.edited, root))):
        row[f"{level}_precision"], row[f"{level}_recall"] = prf.precision, prf.recall
        row[f"{level}_f1"], row[f"{level}_f2"] = prf.f(1.0), prf.f(2.0)
    ranked = ranked_files(trace, root)
    gold = [normalize_path(p) for p in task.gold.edited]
    for k in KS:
        row[f"acc_at_{k}"] = acc_at_k(ranked, gold, k)
        row[f"recall_at_{k}"] = (len(set(gold) & set(ranked[:k])) / len(set(gold))) if gold else 0.0
    row["n_files_reported"] = len(ranked)
    row["turns"] = n
    row["calls"] = trace.n_calls
    row["calls_per_turn"] = trace.n_calls / n if n else 0.0
    row["wall_s"] = trace.wall_time
    row["model_s"] = sum(t.model_time for t in trace.turns)
    row["tool_s"] = sum(t.tool_time for t in trace.turns)
    pt = [t.prompt_tokens for t in trace.turns if t.prompt_tokens is not None]
    ct = [t.completion_tokens for t in trace.turns if t.completion_tokens is not None]
    row["prompt_tokens"] = int(sum(pt)) if pt else None
    row["completion_tokens"] = int(sum(ct)) if ct else None
    row["gold_files"] = len(gold)
    row.update(localization_row(task, trace))  # module/function grains, LocAgent Acc@k, SWE-Explore
    return row


def summarize(tasks: Sequence[Task], traces: str | Path | Iterable[Trace], judge=None) -> "pl.DataFrame":  # noqa: F821
    """One row per task that has a trace (the first trace of a task wins; duplicates are reported).
    ``judge`` (a :class:`fasbench.judge.Judge`) is asked about every episode at once, concurrently,
    before the rows are built."""
    import polars as pl

    by_id = {t.id: t for t in tasks}
    if isinstance(traces, (str, Path)):
        items = (Trace.from_dict(d) for d in iter_jsonl(traces)) if Path(traces).exists() else iter(())
    else:
        items = traces
    rows, seen, dup, kept = [], set(), 0, []
    for tr in items:
        if tr.task_id in seen:
            dup += 1
            continue
        if tr.task_id in by_id:
            seen.add(tr.task_id)
            kept.append(tr)
    if judge is not None:
        judge.score_many(judge_requests((tr.report, by_id[tr.task_id].root, by_id[tr.task_id].query,
                                         finish_reason(tr)) for tr in kept))
    rows = [summary_row(by_id[tr.task_id], tr, judge) for tr in kept]
    if dup:
        warnings.warn(f"{dup} duplicate traces ignored (first one per task kept)")
    if not rows:
        return pl.DataFrame({"task_id": [], "policy": []}, schema={"task_id": pl.Utf8, "policy": pl.Utf8})
    return pl.DataFrame(rows, infer_schema_length=None)


def aggregate(df, metrics: Sequence[str] = MAIN_METRICS, by: str | Sequence[str] = "policy", n_boot: int = 2000,
              seed: int = 0):
    """Macro average of each metric per group, with its bootstrap 95% interval (columns
    ``<m>``, ``<m>_lo``, ``<m>_hi``) and ``n`` tasks."""
    import polars as pl

    by = [by] if isinstance(by, str) else list(by)
    missing = [m for m in list(metrics) + by if m not in df.columns]
    if missing:
        raise ValueError(f"aggregate: columns {missing} not in the summary (has {df.columns})")
    rows = []
    for key, g in df.group_by(by, maintain_order=True):
        r = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        r["n"] = g.height
        for m in metrics:
            vals = g[m].drop_nulls().cast(pl.Float64).to_list()
            mean, lo, hi = bootstrap_ci(vals, n=n_boot, seed=seed)
            r[m], r[f"{m}_lo"], r[f"{m}_hi"] = mean, lo, hi
        rows.append(r)
    return pl.DataFrame(rows)


def compare(a, b, metric: str = "file_f2", n_boot: int = 2000, seed: int = 0) -> dict:
    """Paired bootstrap of ``metric`` between two summaries on the tasks they share."""
    for name, df in (("A", a), ("B", b)):
        if metric not in df.columns:
            raise ValueError(f"compare: run {name} has no metric {metric!r} (numeric columns: "
                             f"{', '.join(c for c, t in df.schema.items() if t.is_numeric())})")
    ja = a.select("task_id", metric).join(b.select("task_id", metric), on="task_id", suffix="_b")
    if ja.height == 0:
        raise ValueError("compare: the two runs share no task")
    res = paired_bootstrap(ja[metric].to_list(), ja[f"{metric}_b"].to_list(), n=n_boot, seed=seed)
    return {"metric": metric, **res}


def load_summary(out: str | Path):
    import polars as pl

    p = Path(out) / "summary.parquet"
    if not p.exists():
        raise FileNotFoundError(f"{p} not found; run `fasbench eval --out {out}` first")
    try:
        df = pl.read_parquet(p)
    except Exception as e:  # polars raises its own error types for a truncated or foreign file
        raise ValueError(f"{p} is not a readable summary ({type(e).__name__}: {e}); it is rebuilt from "
                         f"traces.jsonl by rerunning `fasbench eval --out {out}` with the same options") from None
    if "task_id" not in df.columns:
        raise ValueError(f"{p} has no task_id column; not a fasbench eval summary")
    return df
