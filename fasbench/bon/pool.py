"""Rollout pools: N episodes of a stochastic policy per task, summarised and cached as JSONL.

One line per rollout (append-only, so a killed build resumes where it stopped). Each line holds
what the best-of-N machinery needs and nothing large: the reported files, the searched paths,
per-rollout quality, cost (reported tokens, an estimate of billed tokens, tool time, calls) and
latency (episode wall time). Full traces can be kept in a sibling file when asked.
"""

from __future__ import annotations

import gzip
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from tqdm.auto import tqdm

from fasbench.base.paths import cache_dir, child, data_dir
from fasbench.bon.verify import probe, verify_report
from fasbench.harness import Limits, run_episode
from fasbench.records import (
    Gold,
    RecordError,
    Report,
    Task,
    ToolCall,
    ToolResult,
    Trace,
    append_jsonl,
    iter_jsonl,
    iter_traces,
    repair_jsonl,
)
from fasbench.scoring.reward import score_report
from fasbench.stats.metrics import normalize_files, normalize_path
from fasbench.tools import make_toolset

COSTS = ("tokens", "est_tokens", "tool_time", "calls", "latency")
PATH_KEYS = ("path", "file_path", "directory", "target_file", "dir_path")
CHARS_PER_TOKEN = 4.0  # the usual rough ratio for code and English; used only for estimated tokens


@dataclass
class Rollout:
    """One episode of a pool, summarised. ``index`` is the launch order within the pool."""

    task_id: str
    index: int
    seed: int
    files: dict[str, list[list[int]]] | None  # normalised reported files; None = no report
    quality: float  # reward of this rollout's own report, without turn penalty (the pool's measure)
    reward: float  # reward with turn penalty (as the policy would be trained on)
    latency: float  # episode wall time, seconds
    turns: int
    n_calls: int
    tool_errors: int
    tool_time: float  # summed per-turn tool wall time, seconds
    est_tokens: float  # estimated billed tokens: the context re-read every turn + what was written
    searched: list[str] = field(default_factory=list)  # normalised paths the calls touched
    tokens: float | None = None  # prompt + completion tokens as the policy reported them
    confidence: float | None = None  # self-confidence in [0, 1], when the policy gives one
    input_tokens: float | None = None  # billed input tokens: the context re-read every turn (reported, else chars/4)
    prefill_tokens: float | None = (
        None  # input tokens not in the previous turn's context (to prefill with a prefix cache)
    )
    decode_tokens: float | None = None  # tokens the model wrote (reported completion tokens, else chars/4)
    verify: dict | None = None  # report-vs-repository checks (fasbench.bon.verify), when computed
    stop_reason: str = "reported"
    trace_id: str = ""

    @property
    def error_rate(self) -> float:
        return self.tool_errors / self.n_calls if self.n_calls else 0.0

    @property
    def file_set(self) -> frozenset[str]:
        return frozenset(self.files or ())

    def cost(self, kind: str = "tokens") -> float:
        """Cost of this rollout: ``tokens`` (reported, else estimated), ``est_tokens``,
        ``tool_time``, ``calls`` or ``latency``."""
        if kind == "tokens":
            return float(self.tokens) if self.tokens else float(self.est_tokens)
        if kind == "est_tokens":
            return float(self.est_tokens)
        if kind == "tool_time":
            return float(self.tool_time)
        if kind == "calls":
            return float(self.n_calls)
        if kind == "latency":
            return float(self.latency)
        raise ValueError(f"unknown cost {kind!r}; choose one of {', '.join(COSTS)}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Rollout:
        known = {f.name for f in fields(cls)}
        missing = [k for k in ("task_id", "index", "quality", "latency") if k not in d]
        if missing:
            raise RecordError(f"rollout: missing field(s) {missing}")
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class Pool:
    """The rollouts of one task, in launch order, with the gold to score selections against."""

    task_id: str
    gold: Gold
    rollouts: list[Rollout]
    split: str | None = None
    reward: str = "relace-f2"
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.rollouts = sorted(self.rollouts, key=lambda r: r.index)

    @property
    def n(self) -> int:
        return len(self.rollouts)

    def quality_of(self, files: dict | None) -> float:
        """Quality of an answer (a file → ranges mapping) on this task: the pool's reward,
        without turn penalty (a selection has no turn count of its own)."""
        report = Report(files=files or {}) if files else None
        return float(score_report(self.reward, self.gold, report, turns=None).value)

    def finish_order(self) -> list[Rollout]:
        """Rollouts in the order they would finish if all were launched at once."""
        return sorted(self.rollouts, key=lambda r: (r.latency, r.index))

    def prefix(self, n: int, order: str = "launch") -> list[Rollout]:
        if order == "launch":
            return self.rollouts[:n]
        if order == "finish":
            return self.finish_order()[:n]
        raise ValueError(f"unknown order {order!r}; choose launch or finish")


# ------------------------------------------------------------------ from traces


def searched_paths(trace: Trace, root: str | None = None) -> list[str]:
    """Paths the episode's calls touched (path-like arguments), normalised, sorted."""
    out = set()
    for t in trace.turns:
        for c in t.calls:
            if not isinstance(c.arguments, dict):
                continue
            for k in PATH_KEYS:
                v = c.arguments.get(k)
                if isinstance(v, str):
                    p = normalize_path(v, root)
                    out.add(p or ".")
    return sorted(out)


def estimate_tokens(trace: Trace) -> float:
    """Billed tokens an LLM searcher would pay for this episode: each turn re-reads the whole
    context (prompt, earlier turns and observations) and writes its own message."""
    ctx = sum(len(str(m.get("content") or "")) for m in trace.prompt)
    total = 0.0
    for t in trace.turns:
        written = len(t.text or "") + sum(len(c.name) + len(c.arguments_json()) for c in t.calls)
        total += ctx + written
        ctx += written + sum(len(r.output) for r in t.results)
    return total / CHARS_PER_TOKEN


def tool_time(trace: Trace) -> float:
    """Tool wall time of an episode: per turn, the slowest of its concurrent calls (each result's
    own measured duration, so results replayed by ``MemoToolset`` count what they first took)."""
    return float(sum(max((r.duration for r in t.results), default=0.0) for t in trace.turns))


class MemoToolset:
    """A toolset whose identical calls (same tool, same arguments) on one task are run once: a
    repeat returns the first execution's output and error flag, stamped with the duration that
    execution measured. The tools are read-only and deterministic on a fixed tree, so the
    observations are exactly what a re-run gives; this cuts the N rollouts of a pool (which
    repeat many searches) to about the cost of the distinct calls. Everything else is delegated."""

    def __init__(self, inner, memo: dict | None = None):
        self.inner = inner
        self.memo = {} if memo is None else memo

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def execute(self, call: ToolCall) -> ToolResult:
        key = (call.name, call.arguments_json())
        hit = self.memo.get(key)
        if hit is None:
            r = self.inner.execute(call)
            self.memo[key] = (r.output, r.is_error, r.duration)
            return r
        out, err, dur = hit
        now = time.time()
        return ToolResult(call_id=call.id, output=out, is_error=err, started_at=now, ended_at=now + dur)


def token_split(trace: Trace) -> tuple[float, float, float]:
    """``(input, prefill, decode)`` tokens of an episode. Reported per-turn prompt / completion
    tokens when the policy gives them, else chars / 4: input re-reads the whole context every turn
    (what an API bills), prefill counts only what is new since the last turn (a server with a
    prefix cache), decode is what the model wrote."""
    rep = [(t.prompt_tokens, t.completion_tokens) for t in trace.turns]
    if rep and all(p is not None and c is not None for p, c in rep) and any(p or c for p, c in rep):
        inp = float(sum(p for p, _ in rep))
        dec = float(sum(c for _, c in rep))
        pre, prev = 0.0, 0.0
        for p, c in rep:
            pre += max(0.0, p - prev)
            prev = p + c
        return inp, pre, dec
    ctx = sum(len(str(m.get("content") or "")) for m in trace.prompt)
    inp = pre = dec = 0.0
    new = ctx
    for t in trace.turns:
        written = len(t.text or "") + sum(len(c.name) + len(c.arguments_json()) for c in t.calls)
        inp += ctx
        pre += new
        dec += written
        obs = sum(len(r.output) for r in t.results)
        ctx += written + obs
        new = obs  # the model's own message is already in its KV cache
    return inp / CHARS_PER_TOKEN, pre / CHARS_PER_TOKEN, dec / CHARS_PER_TOKEN


def summarize(trace: Trace, task: Task, index: int, seed: int, reward: str = "relace-f2", probe=None) -> Rollout:
    """The pool line of one episode; with ``probe`` (``fasbench.bon.verify.probe(task)``) the
    verifier's checks of its report too."""
    report = trace.report
    files = normalize_files(report.files, task.root) if report is not None else None
    rep = Report(files=files) if files is not None else None
    q = score_report(reward, task.gold, rep, turns=None).value
    rw = score_report(reward, task.gold, rep, turns=trace.n_turns).value
    tok = [(t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in trace.turns]
    conf = report.confidence if report is not None and report.confidence is not None else trace.meta.get("confidence")
    inp, pre, dec = token_split(trace)
    return Rollout(
        task_id=task.id,
        index=index,
        seed=seed,
        files=files,
        quality=float(q),
        reward=float(rw),
        latency=trace.wall_time,
        turns=trace.n_turns,
        n_calls=trace.n_calls,
        tool_errors=sum(r.is_error for t in trace.turns for r in t.results),
        tool_time=tool_time(trace),
        est_tokens=estimate_tokens(trace),
        searched=searched_paths(trace, task.root),
        tokens=float(sum(tok)) if any(tok) else None,
        confidence=float(conf) if isinstance(conf, (int, float)) and math.isfinite(conf) else None,
        stop_reason=trace.stop_reason,
        trace_id=trace.trace_id,
        input_tokens=inp,
        prefill_tokens=pre,
        decode_tokens=dec,
        verify=verify_report(probe, files, trace) if probe is not None else None,
    )


# ------------------------------------------------------------------ cache


def pool_path(name: str) -> Path:
    """Where the pool ``name`` lives in the cache: ``<cache>/bon/<name>.jsonl``."""
    return child(cache_dir("bon"), name, ".jsonl", "pool name")


def find_pool(name: str) -> Path:
    """The pool ``name``: in the cache when built there, else shipped in ``data/bon/<name>.jsonl.gz``."""
    cached = child(cache_dir("bon"), name, ".jsonl", "pool name")
    if cached.exists() and cached.stat().st_size > 0:
        return cached
    shipped = child(data_dir() / "bon", name, ".jsonl.gz", "pool name")
    if shipped.exists():
        return shipped
    raise FileNotFoundError(
        f"no pool {name!r}: neither {cached} nor {shipped}; build one with "
        f"`fasbench bon pools --tasks ... --name {name}`"
    )


def _line(r: Rollout, task: Task, reward: str) -> dict:
    return {"split": task.split, "reward_name": reward, "gold": task.gold.to_dict(), **r.to_dict()}


def seeded_policies(policy: str, reward: str = "relace-f2", n: int = 1) -> Callable[[int], object]:
    """Rollout ``k``'s policy, ``policy`` with ``seed=k`` (each made once), for :func:`build_pools`: the
    checks of ``fasbench bon pools`` before any task loads. A spec that sets ``seed`` itself, an unknown
    reward or ``n < 1`` is a ValueError naming the option."""
    # local import: the policy registry's makers, only for pools built from a spec
    from fasbench.policies import make_policy
    from fasbench.scoring.reward import REWARDS

    if n < 1:
        raise ValueError("--n must be >= 1")
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)}")
    if "seed=" in policy:
        raise ValueError("--policy must not set seed: rollout k uses seed=k")
    sep, cache = ("," if ":" in policy else ":"), {}

    def make(k: int):
        if k not in cache:
            cache[k] = make_policy(f"{policy}{sep}seed={k}")
        return cache[k]

    return make


def build_pools(
    tasks: Iterable[Task],
    make_policy: Callable[[int], object],
    toolset: str,
    n: int,
    out: str | Path,
    limits=None,
    reward: str = "relace-f2",
    traces_out: str | Path | None = None,
    progress: bool = True,
    memo_tools: bool = True,
    verify: bool = True,
) -> Path:
    """Run ``n`` rollouts per task (rollout ``k`` is ``make_policy(k)``), appending one line per
    rollout to ``out`` as it finishes. Rollouts already in ``out`` are skipped (resume). Tasks must
    have a materialised ``root``; each rollout's policy is bound to its task (``Policy.bind``). ``memo_tools``: the
    rollouts of a task share identical tool calls (``MemoToolset``; tool time stays what each
    call first measured). ``verify``: run the report verifier (``fasbench.bon.verify``) on each.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    out = Path(out)
    repair_jsonl(out)
    done: set[tuple[str, int]] = set()
    if out.exists():
        done = {(d["task_id"], int(d["seed"])) for d in iter_jsonl(out)}
    tasks = list(tasks)
    todo = [(t, k) for t in tasks for k in range(n) if (t.id, k) not in done]
    memo_for = None
    for task, k in tqdm(todo, desc="rollouts", disable=not progress):
        if not task.root:
            raise ValueError(f"task {task.id} has no corpus root; materialise it first")
        if memo_for != task.id:  # one memo per task: the N rollouts share their identical calls
            memo_for, memo = task.id, {}
            pr = probe(task) if verify else None
        policy = make_policy(k)
        ts = MemoToolset(make_toolset(toolset, task.root, (limits or Limits()).tool), memo) if memo_tools else toolset
        trace = run_episode(task, policy.bind(task), ts, limits)
        trace.meta.update({"bon_seed": k})
        if traces_out is not None:
            append_jsonl(traces_out, [trace])
        append_jsonl(out, [_line(summarize(trace, task, k, k, reward, pr), task, reward)])
    return out


def read_pools(path: str | Path, n: int | None = None, complete: bool = True) -> list[Pool]:
    """Pools from a pool JSONL file. With ``n``, keep the first ``n`` rollouts of each task, and
    with ``complete`` drop tasks with fewer (a build that is still running)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no pool file at {path}")
    by: dict[str, dict] = {}
    for i, d in enumerate(iter_jsonl(path)):
        try:
            r = Rollout.from_dict(d)
        except (RecordError, TypeError) as e:
            raise RecordError(f"{path}: line {i + 1}: {e}") from e
        e = by.setdefault(
            r.task_id, {"gold": d.get("gold"), "split": d.get("split"), "reward": d.get("reward_name"), "rollouts": {}}
        )
        e["rollouts"].setdefault(r.index, r)  # a duplicate line (a rerun) keeps the first
    pools = []
    for tid, e in by.items():
        rs = sorted(e["rollouts"].values(), key=lambda r: r.index)
        if n is not None:
            if complete and len(rs) < n:
                continue
            rs = rs[:n]
        if e["gold"] is None:
            raise RecordError(f"{path}: task {tid} has no gold")
        pools.append(Pool(tid, Gold.from_dict(e["gold"]), rs, e["split"], e["reward"] or "relace-f2"))
    return sorted(pools, key=lambda p: p.task_id)


def write_pools(path: str | Path, pools: Sequence[Pool]) -> Path:
    """Write pools (e.g. synthetic ones, or a subset to ship) as a pool JSONL file (``.gz`` ok)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        for p in pools:
            for r in p.rollouts:
                d = {"split": p.split, "reward_name": p.reward, "gold": p.gold.to_dict(), **r.to_dict()}
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
    return path


def reverify(
    pool_in: str | Path, tasks: Sequence[Task], traces: str | Path, out: str | Path, progress: bool = True
) -> Path:
    """Add (or redo) the verifier's checks, the per-call tool time and the token split on every
    line of a pool file from its kept traces (``fasbench bon pools --keep-traces``); lines whose
    trace is missing are verified without the grep-hit check. Writes ``out`` (``.gz`` ok)."""
    by_task = {t.id: t for t in tasks}
    lines = list(iter_jsonl(pool_in))
    want = {d.get("trace_id") for d in lines}
    trs = {}
    for tr in iter_traces(traces):  # a line that is no trace: skipped with its reason (verified without it)
        if tr.trace_id in want:
            trs[tr.trace_id] = tr
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    probes: dict[str, object] = {}
    with (gzip.open if out.suffix == ".gz" else open)(tmp, "wt", encoding="utf-8") as f:
        for d in tqdm(lines, desc="verify", disable=not progress):
            task = by_task.get(d["task_id"])
            if task is None:
                raise ValueError(f"reverify: no task {d['task_id']!r} among the given tasks")
            if task.id not in probes:
                probes[task.id] = probe(task)
            tr = trs.get(d.get("trace_id"))
            d["verify"] = verify_report(probes[task.id], d.get("files"), tr)
            if tr is not None:
                d["tool_time"] = tool_time(tr)
                d["input_tokens"], d["prefill_tokens"], d["decode_tokens"] = token_split(tr)
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    tmp.replace(out)
    return out
