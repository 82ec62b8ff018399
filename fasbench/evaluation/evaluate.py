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

A run directory is what its ``run.json`` says: the configuration and the tasks asked for (their
count and a key of their ids, with the corpus kind) are checked on every resume, and a run asked for
with other parameters is refused in one line (:func:`run_name` derives a directory name from the
parameters, so two parameter sets never share one). Every call prints and records (``run.json``
``calls``; summary column ``resumed``) how many episodes it ran and how many it resumed from disk;
:func:`resume_note` says it in one line for tables and findings.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import polars as pl
from tqdm.auto import tqdm

from fasbench.base.contain import read_json, read_regular
from fasbench.data.corpora import with_corpora
from fasbench.evaluation.episode_pool import guard_worker, run_pool
from fasbench.evaluation.episodes import check_scoring, episode_table
from fasbench.harness import Limits, parsable_calls, run_episode
from fasbench.scoring.judge import make_judge
from fasbench.stats.metrics import column_bounds, interval_method, mean_ci, paired_bootstrap
from fasbench.policies import make_policy
from fasbench.base.provenance import code_version, timestamp
from fasbench.records import Task, Trace, append_jsonl, iter_jsonl, iter_traces, repair_jsonl
from fasbench.scoring.reward import REWARDS
from fasbench.data.tasksets import corpus_kind_of
from fasbench.tools import TOOLSETS

MAIN_METRICS = ("file_f2", "file_recall", "file_precision", "line_f1", "reward_relace_f2", "turns", "wall_s")
OLD = {"report_contract": "free"}  # what run.json files written before a RunConfig key mean by its absence


@dataclass
class RunConfig:
    """What a run directory holds; a resumed run must match it."""

    policy: str  # policy spec, e.g. "heuristic:turns=3"
    toolset: str = "relace"  # relace | fastcontext
    max_turns: int = 6  # episode turn limit (Limits.max_turns)
    max_calls: int = 12  # parallel calls per turn (Limits.max_calls_per_turn)
    report_contract: str = "free"  # Limits.report_contract; a run.json written before it holds none: free

# ---------------------------------------------------------------- run names and parameters

def params_key(params: Mapping) -> str:
    """A short key (8 hex digits) of a parameter mapping: equal parameters, equal key."""
    blob = json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def tasks_key(ids: Iterable[str]) -> str:
    """A key of a set of task ids (order does not matter)."""
    return hashlib.sha256("\n".join(sorted(set(ids))).encode()).hexdigest()[:12]


def run_name(prefix: str, params: Mapping) -> str:
    """A default run directory name: ``prefix`` (the notebook or command, e.g. ``03`` or ``eval-bm25``)
    and the key of every parameter that changes what the run holds (policy, tool set, task set with
    its split, corpus kind, limits, n, the task ids...), so two notebooks or two parameter sets never
    share a run directory: ``03-1a2b3c4d``."""
    slug = re.sub(r"[^\w.-]+", "-", str(prefix)).strip("-")[:100] or "run"
    return f"{slug}-{params_key(params)}"  # [\w.-] and a key: one path component, never . or ..


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
        policy.prepare([task])  # e.g. the retrieval index of this task's corpus: built lazily, one corpus at a
        # time, so the first traces appear after one index, not after all of them; outside the episode's timing
        return run_episode(task, policy.bind(task), toolset, limits)
    except Exception as e:  # noqa: BLE001 - recorded in the trace, the run goes on
        return Trace(task_id=task.id, policy=policy.name, toolset=toolset,
                     stop_reason="policy_error", error=f"episode failed: {type(e).__name__}: {e}",
                     started_at=t0, ended_at=time.time())


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
    """The summary without its failed episodes (``failed``, else ``stop_reason`` policy_error), their count."""
    if "failed" in df.columns:
        bad = df["failed"].fill_null(False)
    elif "stop_reason" in df.columns:
        bad = (df["stop_reason"] == "policy_error").fill_null(False)
    else:
        return df, 0
    return df.filter(~bad), int(bad.sum())


def check_config(out: Path, cfg: RunConfig, task_source: str | None = None, ids: Sequence[str] = (),
                  corpus: str | None = None, done: set[str] | frozenset = frozenset()) -> dict:
    """Write ``run.json`` (the configuration, the tasks asked for — ``tasks``: their count and
    :func:`tasks_key` — the corpus kind, plus provenance: the task source, the code version and the
    creation time), or check that a resumed run has the same configuration and the same tasks (a
    one-line ``ValueError`` otherwise: a run directory never mixes two requests). The provenance keys
    are not compared; a resume adds its own code version to ``resumed_with`` when it differs.
    Returns the run.json as written."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder (a run directory)")
    f = out / "run.json"
    req = {"n": len(ids), "key": tasks_key(ids)}
    if f.exists():
        old = read_run_meta(out)
        diff = {k: (old.get(k), v) for k, v in asdict(cfg).items() if old.get(k, OLD.get(k)) != v}
        if corpus and old.get("corpus") and old["corpus"] != corpus:
            diff["corpus"] = (old["corpus"], corpus)
        if diff:
            raise ValueError(f"{out} holds a run with another configuration {diff} (was, now); "
                             "use another --out or delete it")
        was = old.get("tasks")
        if was and was.get("key") != req["key"]:
            raise ValueError(f"{out} holds a run on other tasks ({was.get('n')} tasks, key {was.get('key')}; now "
                             f"{req['n']} tasks, key {req['key']}); use another --out (or the default run name) "
                             "or delete it")
        extra = set(done) - set(ids)
        if not was and extra:  # a run.json from before the tasks key: its traces say what it holds
            raise ValueError(f"{out} holds traces of {len(extra)} tasks not asked for now (e.g. {sorted(extra)[0]}); "
                             "use another --out (or the default run name) or delete it")
        ver = code_version()["describe"]
        changed = False
        for k, v in (("task_source", task_source), ("corpus", corpus), ("tasks", req)):
            if v and not old.get(k):
                old[k], changed = v, True
        if old.get("code_version", {}).get("describe") != ver and ver not in old.get("resumed_with", []):
            old.setdefault("resumed_with", []).append(ver)
            changed = True
        if changed:
            f.write_text(json.dumps(old, indent=1), encoding="utf-8")
        return old
    out.mkdir(parents=True, exist_ok=True)
    meta = {**asdict(cfg), "task_source": task_source, "corpus": corpus, "tasks": req,
            "code_version": code_version(), "created": timestamp()}
    f.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def _record_call(out: Path, call: dict) -> None:
    """Append this call's counts (episodes run now, resumed from disk, asked for) to ``run.json``."""
    f = out / "run.json"
    meta = read_run_meta(out)
    meta.setdefault("calls", []).append(call)
    f.write_text(json.dumps(meta, indent=1), encoding="utf-8")


def last_call(out: str | Path) -> dict:
    """The last call's counts of a run directory: ``ran`` (episodes run in that call), ``resumed``
    (episodes it found on disk), ``asked``, ``at``, ``resumed_since`` (when the resumed ones were
    run: the first call's time); {} for a run written before calls were recorded."""
    calls = read_run_meta(out).get("calls") or []
    return calls[-1] if calls else {}


def resume_note(out: str | Path) -> str | None:
    """"resumed: k of n episodes from an earlier run (date)" when the last call of the run found
    episodes on disk, else None (every episode ran in that call)."""
    c = last_call(out)
    if not c.get("resumed"):
        return None
    when = (c.get("resumed_since") or "")[:16].replace("T", " ")
    return f"resumed: {c['resumed']} of {c['resumed'] + c['ran']} episodes from an earlier run" + (f" ({when})" if when else "")


def read_run_meta(out: str | Path) -> dict:
    """``run.json`` of a run directory ({} for one written before it; a FIFO or a bad file: ValueError)."""
    f = Path(out) / "run.json"
    return read_json(f, want=dict) if f.exists() else {}


def _record_tasks(out: Path, tasks: Sequence[Task]) -> None:
    """Keep the run's tasks (with their gold) in ``out/tasks.jsonl``, so the gold of a run can be found
    again (replay, re-scoring) without its task source; tasks already recorded are not repeated."""
    f = out / "tasks.jsonl"
    repair_jsonl(f)
    have = {d["id"] for d in iter_jsonl(f)} if f.exists() else set()
    new = [t for t in tasks if t.id not in have]
    if new:
        append_jsonl(f, new)


def run_eval(tasks: Sequence[Task], policy: str, toolset: str = "relace", out: str | Path = "runs/eval",
             limits: Limits | None = None, workers: int | None = None, backend: str | None = None,
             progress: bool = True, judge: str | None = None, task_source: str | None = None,
             reward: str = "relace", corpus: str | None = None, warn: bool = True,
             scoring: Sequence[str] = ()) -> pl.DataFrame:
    """Run ``policy`` (a spec string) on every task not yet in ``out/traces.jsonl``; return the summary
    (the episode table of ``fasbench.evaluation.episodes``; ``reward`` names its headline ``reward`` column).
    ``judge``: FastContext's LLM judge (``openai:model=…,base_url=…``) for the ``fastcontext`` reward's
    quality term (without one that term is 0, and the reward's reason says so). ``task_source`` (a task
    set name, ``fasbench.data.tasksets``) is recorded in ``run.json``; the tasks themselves, with their gold,
    go to ``out/tasks.jsonl``. Tasks without a corpus get one (``fasbench.data.corpora``); those that
    cannot are listed with their reason in ``out/skipped.jsonl``. The policy is built only when an
    episode is left to run (a finished run is re-summarised without loading a model). ``corpus``
    (offline | online, the kind the tasks were chosen on) is recorded and checked like the tasks: a
    resume must ask for the same tasks (``run.json`` ``tasks``), else a one-line ``ValueError``.
    Prints how many episodes ran in this call and how many were resumed; the summary's ``resumed``
    column marks the resumed ones and ``run.json`` keeps the counts of every call (:func:`resume_note`).
    :func:`tool_call_warnings` (episodes without a parsable tool call, calls read from reply text) are
    kept in that call's record (``warnings``) and printed last unless ``warn`` is False (the CLI prints
    them at its own end).
    ``backend`` (process | thread | serial) defaults to the policy's own (``Policy.backend``).
    ``scoring`` (``fastcontext`` | ``fastcontext-all``) adds FastContext's run_score.py columns ``fc_*``
    (fasbench.scoring.localization.fastcontext_row); it changes the summary only, not the run."""
    if toolset not in TOOLSETS:
        raise ValueError(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
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
    meta = check_config(out, RunConfig(policy, toolset, limits.max_turns, limits.max_calls_per_turn,
                                       limits.report_contract), task_source, ids, corpus, done)
    resumed = [i for i in ids if i in done]
    calls = meta.get("calls") or []
    since = (calls[0].get("at") if calls else None) or meta.get("created")
    todo = with_corpora(pending, skipped=out / "skipped.jsonl", progress=progress).tasks
    _record_tasks(out, [t for t in tasks if t.id in done] + todo)  # done ones too: a run from before tasks.jsonl
    note = main_policy.cache_note(todo) if todo else None
    if note:  # e.g. "bm25: 2 of 6 corpus indexes cached under …"
        print(note)
    backend = backend or (main_policy.backend if main_policy is not None else "serial")  # the policy's own
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
    _record_call(out, {"at": timestamp(), "ran": ran, "resumed": len(resumed), "asked": len(ids),
                       "failed": len(failed_ids & set(ids)),
                       "no_corpus": len(pending) - len(todo), "resumed_since": since if resumed else None,
                       **({"warnings": warnings} if warnings else {})})
    when = f" ({since[:16].replace('T', ' ')})" if resumed and since else ""
    print(f"eval {policy}: {ran} episodes run in this call, {len(resumed)} of {len(ids)} resumed from an earlier "
          f"run{when} in {out}")
    df = summarize(tasks, traces, judge=the_judge, reward=reward, scoring=scoring)
    df = df.with_columns(pl.col("task_id").is_in(resumed).alias("resumed"),
                         pl.col("task_id").is_in(sorted(failed_ids)).alias("failed"))
    df = _record_query_sources(out, df, traces)
    df.write_parquet(out / "summary.parquet")
    for w in warnings if warn else ():
        print(w)
    return df


def _run_todo(todo, traces: Path, bar, policy: str, main_policy, toolset: str, limits: Limits, backend: str,
              workers: int) -> None:
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
        out.append(f"warning: {silent} of {n} episodes had no parsable tool call in any turn ({wrote}); "
                   "see docs/own_model.md")
    if from_text:
        out.append(f"note: {from_text} of {n} episodes had tool calls read from the reply text "
                   f"({', '.join(sorted(formats))}), not from structured tool_calls: the server's tool-call "
                   "parser is off or does not know this format; see docs/own_model.md")
    return out


def _record_query_sources(out: Path, df: pl.DataFrame, traces: Path) -> pl.DataFrame:
    """The summary with a ``query_source`` column (what each episode's explorer was given:
    ``trace.meta["query_source"]``, e.g. ``problem_statement`` or a FastContext query generator; null
    for a trace written before it was recorded), and ``run.json`` ``query_sources`` (count per source)."""
    src: dict[str, str | None] = {}
    if traces.exists():
        for d in iter_jsonl(traces):
            src.setdefault(d.get("task_id"), (d.get("meta") or {}).get("query_source"))
    df = df.with_columns(pl.Series("query_source", [src.get(t) for t in df["task_id"].to_list()], dtype=pl.Utf8))
    counts: dict[str, int] = {}
    for v in df["query_source"].to_list():
        counts[v or "unrecorded"] = counts.get(v or "unrecorded", 0) + 1
    meta = read_run_meta(out)
    meta["query_sources"] = counts
    (out / "run.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return df


def query_source_label(meta: dict) -> str | None:
    """One line for the runs table: the run's query sources with their counts (``problem_statement 3,
    query_gen.py@5fb8c1d model=m … 7``); None for a run written before they were recorded."""
    counts = meta.get("query_sources")
    if not counts:
        return None
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# ---------------------------------------------------------------- summary

def summarize(tasks: Sequence[Task], traces: str | Path | Iterable[Trace], judge=None,
              reward: str = "relace", scoring: Sequence[str] = ()) -> pl.DataFrame:
    """The episode table (``fasbench.evaluation.episodes``) of a run: one row per task that has a trace (the
    first trace of a task wins; duplicates are reported), every reward with its parts, ``reward`` =
    the value of ``reward``. ``judge`` (a :class:`fasbench.scoring.judge.Judge`) is asked about every
    episode at once, concurrently, before the rows are built."""
    if isinstance(traces, (str, Path)):
        items = iter_traces(traces) if Path(traces).exists() else iter(())
    else:
        items = traces
    return episode_table(items, tasks, reward=reward, judge=judge, first_per_task=True, only_tasks=True,
                         scoring=scoring)


def aggregate(df, metrics: Sequence[str] = MAIN_METRICS, by: str | Sequence[str] = "policy", n_boot: int = 2000,
              seed: int = 0):
    """Macro average of each metric per group, with its 95% interval (columns ``<m>``, ``<m>_lo``,
    ``<m>_hi``; :func:`fasbench.stats.metrics.mean_ci`: percentile bootstrap from 10 tasks on, Student t
    below, none for one task), ``n`` tasks and ``interval`` (which of those)."""
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
            mean, lo, hi = mean_ci(vals, n=n_boot, seed=seed, bounds=column_bounds(m))
            r[m], r[f"{m}_lo"], r[f"{m}_hi"] = mean, lo, hi
        rows.append(r)
    return pl.DataFrame(rows)


def compare(a, b, metric: str = "file_f2", n_boot: int = 2000, seed: int = 0) -> dict:
    """The paired test of ``metric`` (A − B) between two summaries on the tasks they share
    (:func:`fasbench.stats.metrics.paired_test`: diff, interval, two-sided sign-flip p, n)."""
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
    """A run's ``summary.parquet`` (legacy ``acc_at_k`` columns read as ``all_gold_at_k``)."""
    p = Path(out) / "summary.parquet"
    if not p.exists():
        raise FileNotFoundError(f"{p} not found; run `fasbench eval --out {out}` first")
    try:  # read through contain: a FIFO or a special file is refused, never waited on
        df = pl.read_parquet(read_regular(p, 1 << 30)[0])
    except Exception as e:  # polars raises its own error types for a truncated or foreign file
        raise ValueError(f"{p} is not a readable summary ({type(e).__name__}: {e}); it is rebuilt from "
                         f"traces.jsonl by rerunning `fasbench eval --out {out}` with the same options") from None
    if "task_id" not in df.columns:
        raise ValueError(f"{p} has no task_id column; not a fasbench eval summary")
    # summaries written before the all-gold@k columns had their own name called them acc_at_k
    legacy = {c: "all_gold" + c[3:] for c in df.columns if re.fullmatch(r"acc_at_\d+", c)}
    return df.rename({c: n for c, n in legacy.items() if n not in df.columns})
