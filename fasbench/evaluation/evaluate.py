"""Evaluation: run a policy over tasks in parallel, append traces, summarise with intervals.

``run_eval(tasks, policy, toolset, out)`` runs one episode per task over a process (or thread) pool
with a progress bar, appends each finished trace to ``out/traces.jsonl`` from the main process only
(so no line is written twice), and resumes: the file is repaired (a truncated last line cut) and the
tasks it already holds are skipped, except failed ones (:func:`trace_failed`, e.g. a model server that
was down), which run again; their retry replaces the failed trace (one trace per task). Summary column
``failed`` marks those still failed; means leave them out (:func:`split_failed`).
``out/summary.parquet`` then has one row per task, the episode
table of :mod:`fasbench.evaluation.episodes` (its ``COLUMNS``): reward and its parts under each reward of
``fasbench.scoring.reward.REWARDS``, file/line precision/recall/F1/F2, all-gold@k (every gold file in the
top k) and Recall@k, turns, calls per turn, wall time split into model and tool time,
tokens, well-formed calls, the localization grains. Tasks are named by ``fasbench.data.tasksets`` and get
their corpora from ``fasbench.data.corpora``. ``aggregate`` gives macro averages with 95%
intervals; ``compare`` the paired test (``fasbench.stats.metrics.paired_test``: exact sign-flip p and interval)
between two runs on their shared tasks. A model checkpoint
is evaluated through here too (``fasbench.evaluation.checkpoints``).

A run directory is what its ``run.json`` says (:mod:`fasbench.evaluation.rundir`: its typed record,
the migration of older layouts, ``summary.parquet``'s reader): the configuration, the headline reward
and the tasks asked for are checked on every resume, and a run asked for with other parameters is
refused in one line. Every call prints and records (``run.json`` ``calls``; summary column
``resumed``) how many episodes it ran and how many it resumed from disk. Task choice for a run (ids,
limit, usability, perturbation, shard, run name) is :func:`fasbench.evaluation.plan.plan_run`.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import polars as pl
from tqdm.auto import tqdm

from fasbench.base.provenance import timestamp
from fasbench.data.corpora import with_corpora
from fasbench.data.tasksets import corpus_kind_of
from fasbench.evaluation.episode_pool import guard_worker, run_pool
from fasbench.evaluation.episodes import check_scoring, column_bounds, episode_table
from fasbench.evaluation.rundir import RunMeta, open_run, record_call
from fasbench.harness import Limits, parsable_calls, run_episode, with_prepare_s
from fasbench.policies import make_policy
from fasbench.records import Task, Trace, append_jsonl, iter_jsonl, iter_traces, repair_jsonl
from fasbench.scoring.judge import make_judge
from fasbench.scoring.reward import DEFAULT_REWARD, REWARDS
from fasbench.stats.metrics import interval_method, mean_ci, paired_bootstrap
from fasbench.tools import toolset_class

MAIN_METRICS = ("file_f2", "file_recall", "file_precision", "line_f1", "reward_relace_f2", "turns", "wall_s")


# ---------------------------------------------------------------- running

_WORKER: dict = {}


def _init_worker(spec: str) -> None:
    _WORKER["policy"] = make_policy(spec)


def _init_process_worker(spec: str, main_pid: int) -> None:
    guard_worker(main_pid)  # dies with the run, even after a SIGKILL (fasbench/evaluation/episode_pool.py)
    _init_worker(spec)


def safe_episode(task: Task, policy, toolset: str, limits: Limits) -> Trace:
    """``run_episode``, where anything that escapes it (a policy that cannot be bound, a tool that
    crashes) fails this episode with its error instead of the run. Policy errors — a model server
    that still fails after the last retry — are already caught by ``run_episode`` (``policy_error``)."""
    t0 = time.time()
    try:
        policy.prepare([task])  # e.g. a retrieval index, built lazily one corpus at a time; timed apart (prepare_s)
        return with_prepare_s(policy, time.time() - t0, run_episode(task, policy.bind(task), toolset, limits))
    except Exception as e:  # noqa: BLE001 - recorded in the trace, the run goes on
        return Trace(
            task_id=task.id,
            policy=policy.name,
            toolset=toolset,
            stop_reason="policy_error",
            error=f"episode failed: {type(e).__name__}: {e}",
            started_at=t0,
            ended_at=time.time(),
        )


def _thread_episode(task: Task, policy, toolset: str, limits: Limits) -> dict:
    """One episode in the thread backend, with the run's one policy object."""
    return safe_episode(task, policy, toolset, limits).to_dict()


def _episode(task_d: dict, spec: str, toolset: str, limits: Limits) -> dict:
    if "policy" not in _WORKER:
        _WORKER["policy"] = make_policy(spec)
    return safe_episode(Task.from_dict(task_d), _WORKER["policy"], toolset, limits).to_dict()


def trace_failed(d: Mapping) -> bool:
    """Whether a trace (its dict) is an infrastructure failure, not a score: the policy failed
    (``stop_reason`` ``policy_error``, e.g. a model server that still failed after the last retry) or
    the harness kept the failed requests (``meta.failed_requests``). Such an episode is retried on resume."""
    return d.get("stop_reason") == "policy_error" or bool((d.get("meta") or {}).get("failed_requests"))


def compact_traces(traces: Path) -> None:
    """Drop each failed trace that a later one of its task replaces (its retry): an atomic rewrite."""
    if not traces.exists():
        return
    rows = list(iter_jsonl(traces))
    last = {d["task_id"]: i for i, d in enumerate(rows)}
    keep = [d for i, d in enumerate(rows) if not (trace_failed(d) and last[d["task_id"]] != i)]
    if len(keep) == len(rows):
        return
    tmp = traces.with_name(traces.name + ".tmp")
    tmp.write_text("".join(json.dumps(d) + "\n" for d in keep), encoding="utf-8")
    os.replace(tmp, traces)


def done_task_ids(traces: Path) -> set[str]:
    """Task ids with a complete trace that did not fail (:func:`trace_failed`; a failed one runs again),
    after cutting a truncated last line and dropping replaced failures (:func:`compact_traces`)."""
    repair_jsonl(traces)
    if not traces.exists():
        return set()
    compact_traces(traces)
    return {d["task_id"] for d in iter_jsonl(traces) if not trace_failed(d)}


def split_failed(df: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The summary without its failed episodes (column ``failed``; a summary from before it gets it from
    :func:`fasbench.evaluation.rundir.load_summary`), their count."""
    if "failed" not in df.columns:
        return df, 0
    bad = df["failed"].fill_null(False)
    return df.filter(~bad), int(bad.sum())


def _record_tasks(out: Path, tasks: Sequence[Task]) -> None:
    """Keep the run's tasks (with their gold) in ``out/tasks.jsonl``, so the gold of a run can be found
    again (replay, re-scoring) without its task source; tasks already recorded are not repeated."""
    f = out / "tasks.jsonl"
    repair_jsonl(f)
    have = {d["id"] for d in iter_jsonl(f)} if f.exists() else set()
    new = [t for t in tasks if t.id not in have]
    if new:
        append_jsonl(f, new)


def run_eval(
    tasks: Sequence[Task],
    policy: str,
    toolset: str = "relace",
    out: str | Path = "runs/eval",
    limits: Limits | None = None,
    workers: int | None = None,
    backend: str | None = None,
    progress: bool = True,
    judge: str | None = None,
    task_source: str | None = None,
    reward: str = DEFAULT_REWARD,
    corpus: str | None = None,
    warn: bool = True,
    scoring: Sequence[str] = (),
    shard: dict | None = None,
) -> pl.DataFrame:
    """Run ``policy`` (a spec string) on every task not yet in ``out/traces.jsonl``; return the summary
    (the episode table of ``fasbench.evaluation.episodes``; ``reward`` names its headline ``reward`` column).
    ``judge``: FastContext's LLM judge (``openai:model=…,base_url=…``) for the ``fastcontext`` reward's
    quality term (without one that term is 0, and the reward's reason says so). ``task_source`` (a task
    set name, ``fasbench.data.tasksets``) is recorded in ``run.json``; the tasks themselves, with their gold,
    go to ``out/tasks.jsonl``. Tasks without a corpus get one (``fasbench.data.corpora``); those that
    cannot are listed with their reason in ``out/skipped.jsonl``. The policy is built only when an
    episode is left to run (a finished run is re-summarised without loading a model). ``corpus``
    (offline | online, the kind the tasks were chosen on) is recorded and checked like the tasks: a
    resume must ask for the same tasks (``run.json`` ``tasks``), the same configuration and the same
    headline ``reward`` (:func:`fasbench.evaluation.rundir.open_run`), else a one-line ``ValueError``.
    ``shard`` (``{index, count, tasks_before_sharding}``, :func:`fasbench.evaluation.plan.plan_run`) is
    recorded and checked the same way.
    Prints how many episodes ran in this call and how many were resumed; the summary's ``resumed``
    column marks the resumed ones and ``run.json`` keeps the counts of every call (``RunMeta.resume_note``).
    :func:`tool_call_warnings` (episodes without a parsable tool call, calls read from reply text) are
    kept in that call's record (``warnings``) and printed last unless ``warn`` is False (the CLI prints
    them at its own end).
    ``backend`` (process | thread | serial) defaults to the policy's own (``Policy.backend``), ``workers``
    to the policy's ``default_workers`` (``openai``: 1, printed) or else the CPU count.
    ``scoring`` (``fastcontext`` | ``fastcontext-all``) adds FastContext's run_score.py columns ``fc_*``
    (fasbench.scoring.localization.fastcontext_row); it changes the summary only, not the run."""
    toolset_class(toolset)  # an unknown name: a one-line ValueError naming the choices
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    limits = limits or Limits()
    out = Path(out)
    traces = out / "traces.jsonl"
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("tasks have duplicate ids; each task must appear once")
    done = done_task_ids(traces) if out.is_dir() else set()
    pending = [t for t in tasks if t.id not in done]
    check_scoring(scoring)  # a bad name fails before any episode
    main_policy = make_policy(policy) if pending else None  # fails early on a bad spec
    the_judge = make_judge(judge) if judge else None  # idem
    corpus = corpus or corpus_kind_of(tasks)  # tasks that came with their corpus: the kind they have
    meta = open_run(
        out,
        RunMeta(
            policy,
            toolset,
            limits.max_turns,
            limits.max_calls_per_turn,
            limits.report_contract,
            reward,
            shard,
            task_source,
            corpus,
        ),
        ids,
        done,
    )
    resumed = [i for i in ids if i in done]
    since = (meta.calls[0].get("at") if meta.calls else None) or meta.created
    todo = with_corpora(pending, skipped=out / "skipped.jsonl", progress=progress).tasks
    _record_tasks(out, [t for t in tasks if t.id in done] + todo)  # done ones too: a run from before tasks.jsonl
    note = main_policy.cache_note(todo) if todo else None
    if note:  # e.g. "bm25: 2 of 6 corpus indexes cached under …"
        print(note)
    backend = backend or (main_policy.backend if main_policy is not None else "serial")  # the policy's own
    if not workers and main_policy is not None and main_policy.default_workers and len(todo) > 1:
        workers = main_policy.default_workers  # e.g. openai: a CPU server generates one request at a time
        print(
            f"{policy.split(':', 1)[0]}: {workers} episode(s) at a time, the policy's default "
            "(workers=N / --workers N for a server that batches: vLLM, SGLang)"
        )
    workers = max(1, workers or os.cpu_count() or 1)
    if backend not in ("process", "thread", "serial"):
        raise ValueError(f"backend must be process, thread or serial, got {backend!r}")
    bar = tqdm(total=len(todo), desc=f"eval {policy}", unit="ep", disable=not progress)
    try:
        _run_todo(todo, traces, bar, policy, main_policy, toolset, limits, backend, workers)
    finally:  # also on Ctrl-C: a retried task's failed trace goes, so the file has one trace per task
        bar.close()
        compact_traces(traces)
    rows = list(iter_jsonl(traces)) if traces.exists() else []
    failed_ids = {d["task_id"] for d in rows if trace_failed(d)}
    ran = len({t.id for t in todo} & {d["task_id"] for d in rows})
    warnings = tool_call_warnings(traces, ids)
    record_call(
        out,
        {
            "at": timestamp(),
            "ran": ran,
            "resumed": len(resumed),
            "asked": len(ids),
            "failed": len(failed_ids & set(ids)),
            "no_corpus": len(pending) - len(todo),
            "resumed_since": since if resumed else None,
            **({"warnings": warnings} if warnings else {}),
        },
    )
    when = f" ({since[:16].replace('T', ' ')})" if resumed and since else ""
    print(
        f"eval {policy}: {ran} episodes run in this call, {len(resumed)} of {len(ids)} resumed from an earlier "
        f"run{when} in {out}"
    )
    df = summarize(tasks, traces, judge=the_judge, reward=reward, scoring=scoring)
    df = df.with_columns(
        pl.col("task_id").is_in(resumed).alias("resumed"), pl.col("task_id").is_in(sorted(failed_ids)).alias("failed")
    )
    df, counts = query_source_counts(df, traces)
    record_call(out, None, query_sources=counts)
    df.write_parquet(out / "summary.parquet")
    for w in warnings if warn else ():
        print(w)
    return df


def _run_todo(
    todo, traces: Path, bar, policy: str, main_policy, toolset: str, limits: Limits, backend: str, workers: int
) -> None:
    """Run the episodes of ``todo``, appending each trace to ``traces`` as it finishes."""
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
            kw = {
                "initializer": _init_process_worker,
                "initargs": (policy, os.getpid()),
                "mp_context": mp.get_context("forkserver"),
            }

        def keep(d: dict) -> None:
            append_jsonl(traces, [d])
            bar.update()

        # bounded queue; Ctrl-C cancels what is queued and stops the workers (finished traces are kept)
        if backend == "thread":  # one policy object (one HTTP connection pool) for all episodes
            run_pool(
                pool_cls(max_workers=workers, **kw),
                _thread_episode,
                ((t, main_policy, toolset, limits) for t in todo),
                keep,
                workers,
            )
        else:
            run_pool(
                pool_cls(max_workers=workers, **kw),
                _episode,
                ((t.to_dict(), policy, toolset, limits) for t in todo),
                keep,
                workers,
            )


def tool_call_warnings(traces: str | Path | Iterable[Trace], ids: Iterable[str] | None = None) -> list[str]:
    """One line each: how many episodes (of those of ``ids``, first trace per task) had no parsable tool
    call in any turn (``harness.parsable_calls``), quoting the start of what the model wrote instead;
    how many had calls read from the reply text instead of structured ``tool_calls`` (the
    ``calls_from_text`` of the OpenAI-compatible policy's request records). [] when neither happened."""
    if isinstance(traces, (str, Path)):
        traces = iter_traces(traces) if Path(traces).exists() else ()
    want = set(ids) if ids is not None else None
    seen: set[str] = set()
    n, silent, sample, from_text, formats = 0, 0, None, 0, {}
    for tr in traces:
        if tr.task_id in seen or (want is not None and tr.task_id not in want):
            continue
        seen.add(tr.task_id)
        n += 1
        if tr.turns and not parsable_calls(tr):
            silent += 1
            sample = sample or next((" ".join(t.text.split()) for t in tr.turns if t.text.strip()), None)
        recs = [r for t in tr.turns for r in t.requests if r.get("calls_from_text")]
        from_text += bool(recs)
        for r in recs:
            formats[str(r.get("text_format"))] = formats.get(str(r.get("text_format")), 0) + 1
    out = []
    if silent:
        wrote = f"model wrote text like: {sample[:80]!r}" if sample else "model wrote no text"
        out.append(
            f"warning: {silent} of {n} episodes had no parsable tool call in any turn ({wrote}); see docs/own_model.md"
        )
    if from_text:
        out.append(
            f"note: {from_text} of {n} episodes had tool calls read from the reply text "
            f"({', '.join(sorted(formats))}), not from structured tool_calls: the server's tool-call "
            "parser is off or does not know this format; see docs/own_model.md"
        )
    return out


def query_source_counts(df: pl.DataFrame, traces: Path) -> tuple[pl.DataFrame, dict[str, int]]:
    """The summary with a ``query_source`` column (what each episode's explorer was given:
    ``trace.meta["query_source"]``, e.g. ``problem_statement`` or a FastContext query generator; null
    for a trace written before it was recorded), and the count per source (``run.json`` ``query_sources``)."""
    src: dict[str, str | None] = {}
    if traces.exists():
        for d in iter_jsonl(traces):
            src.setdefault(d.get("task_id"), (d.get("meta") or {}).get("query_source"))
    df = df.with_columns(pl.Series("query_source", [src.get(t) for t in df["task_id"].to_list()], dtype=pl.Utf8))
    counts: dict[str, int] = {}
    for v in df["query_source"].to_list():
        counts[v or "unrecorded"] = counts.get(v or "unrecorded", 0) + 1
    return df, counts


# ---------------------------------------------------------------- summary


def summarize(
    tasks: Sequence[Task],
    traces: str | Path | Iterable[Trace],
    judge=None,
    reward: str = "relace",
    scoring: Sequence[str] = (),
) -> pl.DataFrame:
    """The episode table (``fasbench.evaluation.episodes``) of a run: one row per task that has a trace (the
    first trace of a task wins; duplicates are reported), every reward with its parts, ``reward`` =
    the value of ``reward``. ``judge`` (a :class:`fasbench.scoring.judge.Judge`) is asked about every
    episode at once, concurrently, before the rows are built."""
    if isinstance(traces, (str, Path)):
        items = iter_traces(traces) if Path(traces).exists() else iter(())
    else:
        items = traces
    return episode_table(
        items, tasks, reward=reward, judge=judge, first_per_task=True, only_tasks=True, scoring=scoring
    )


def aggregate(
    df,
    metrics: Sequence[str] = MAIN_METRICS,
    by: str | Sequence[str] = "policy",
    n_boot: int = 2000,
    seed: int = 0,
    reward: str | None = None,
):
    """Macro average of each metric per group, with its 95% interval (columns ``<m>``, ``<m>_lo``,
    ``<m>_hi``; ``mean_ci``: bootstrap from 10 tasks on, Student t below, none for one task, clipped to
    ``episodes.column_bounds(m, reward)``), ``n`` tasks and ``interval`` (which of those)."""
    by = [by] if isinstance(by, str) else list(by)
    missing = [m for m in list(metrics) + by if m not in df.columns]
    if missing:
        raise ValueError(f"aggregate: columns {missing} not in the summary (has {df.columns})")
    rows = []
    for key, g in df.group_by(by, maintain_order=True):
        r = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        r["n"], r["interval"] = g.height, interval_method(g.height)
        for m in metrics:
            vals = g[m].drop_nulls().cast(pl.Float64).to_list()
            mean, lo, hi = mean_ci(vals, n=n_boot, seed=seed, bounds=column_bounds(m, reward))
            r[m], r[f"{m}_lo"], r[f"{m}_hi"] = mean, lo, hi
        rows.append(r)
    return pl.DataFrame(rows)


def compare(a, b, metric: str = "file_f2", n_boot: int = 2000, seed: int = 0) -> dict:
    """The paired test of ``metric`` (A − B) between two summaries on the tasks they share
    (:func:`fasbench.stats.metrics.paired_test`: diff, interval, two-sided sign-flip p, n)."""
    for name, df in (("A", a), ("B", b)):
        if metric not in df.columns:
            raise ValueError(
                f"compare: run {name} has no metric {metric!r} (numeric columns: "
                f"{', '.join(c for c, t in df.schema.items() if t.is_numeric())})"
            )
    ja = a.select("task_id", metric).join(b.select("task_id", metric), on="task_id", suffix="_b")
    if ja.height == 0:
        raise ValueError("compare: the two runs share no task")
    res = paired_bootstrap(ja[metric].to_list(), ja[f"{metric}_b"].to_list(), n=n_boot, seed=seed)
    return {"metric": metric, **res}
