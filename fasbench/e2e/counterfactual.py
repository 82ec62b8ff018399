"""Counterfactual handoff savings: what a search subagent's report would have replaced in a real
main-agent trajectory, net of the handoff's own tokens. An estimate with stated assumptions, not a
measured resolve rate or a rerun of the agent.

Definitions (tested on hand-made trajectories in tests/test_e2e_counterfactual.py):

- *Pre-edit exploration*: the read/search calls (``fasbench.trajectories`` classifier) in turns before
  the trajectory's first edit turn (``analysis.py``: the first turn that edits a file the submission
  changes). Trajectories without a first edit have no pre-edit phase and are left out (counted).
- *Looks*: the files and line ranges each such call showed the agent (``looked.py``).
- A look is *covered* by a report when the report cites its file and, for a look with known lines, at
  least ``MIN_LINE_SHARE`` of those lines fall in the cited ranges (a file cited without ranges covers
  every line; a file-level look, e.g. ``cat F``, is covered by citing F). The report's ranges are on
  the search corpus; they are moved onto the agent's tree by the file's gold-relocation offset when the
  corpus is a PyPI release (``line_map`` = ``gold-offset``), used as they are for a git checkout at
  the task's commit (``exact``) and for files without a gold hunk (``unshifted``: approximate).
- A call is *replaced* under three rules: ``strict`` — it has looks and all are covered; ``any`` — at
  least one of its looks is covered (the search surfaced what the report gives); ``all`` — every
  pre-edit read/search call (the upper bound: Relace's ~12% "initial search" share and
  ``analysis.py``'s handoff share). A turn with k calls of which j are replaced is replaced by the
  weight j/k (``w_t``).
- Tokens, with per-turn prompt p, completion c, reasoning r (not fed back) and observation o of the
  real run: removing a fraction w_t of turn t saves ``w_t·(p_t + c_t)`` (its own model call) plus
  ``w_t·(c_t − r_t + o_t)`` in the prompt of every later turn that remains (weighted by ``1 − w_u``);
  the handoff of h tokens sits in the first user message, so it costs ``h`` in the prompt of every
  remaining turn: ``net = Σ_t w_t(p_t+c_t) + Σ_t w_t(c_t−r_t+o_t)·Σ_{u>t}(1−w_u) − h·Σ_u(1−w_u)``.
  No prompt caching is modelled (tokens, not cost); the subagent's own tokens (another, smaller model)
  are reported beside, not subtracted. ``h`` is counted with the offline SmolLM2 tokenizer
  (``handoff.py``), the agent's tokens with its provider's: a stated mismatch.
- *Replaced turns* = Σ_t w_t.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from fasbench.base.lines import clamp, merge_ranges, overlap, total
from fasbench.data.agent_traces import RUNS
from fasbench.e2e.looked import Look, call_looks
from fasbench.records import Task, Trace
from fasbench.scoring.process import process_row
from fasbench.scoring.reward import report_files_prf, report_lines_prf
from fasbench.stats.metrics import normalize_files
from fasbench.studies.handoff import FORMATS, render
from fasbench.trajectories.analysis import EXPLORE
from fasbench.trajectories.parsers import Trajectory, load
from fasbench.trajectories.raw import shell_calls

RULES = ("strict", "any", "all")
MIN_LINE_SHARE = 0.5  # share of a look's lines the report must cite for the look to count as covered

# The seeds' end-to-end numbers, for side-by-side tables: different setups, not comparable one to one.
SEEDS_E2E = {
    "fastcontext": {
        "setup": "FastContext subagent (4B-30B) inside Mini-SWE-Agent; SWE-bench Multilingual, SWE-bench Pro, "
        "SWE-QA (paper abstract and introduction)",
        "resolve_rate_points": "+5.5 at most",
        "main_agent_tokens": "-60% at most",
    },
    "relace": {
        "setup": "FAS subagent handing a compressed trace (reasoning + relevant file sections) to an 'oracle' "
        "agent; SWE-bench Verified, 500 tasks",
        "median_latency": "7m1s vs 7m44s: -9.3% (43 s)",
        "accuracy": "71.4% vs 72.0%",
        "total_tokens": "890M vs 1.03B: -13.6% (140M)",
        "initial_search_token_share": 0.12,
    },
}


# ---------------------------------------------------------------- the report, on the agent's lines


@dataclass
class Handoff:
    """A search run's report on the agent's tree, and the handoff's size in each rendering."""

    files: dict[str, list[list[int]]]  # cited path -> ranges on the agent's tree ([] = whole file)
    tokens: dict[str, int]  # rendering -> tokens
    line_map: dict[str, str] = field(default_factory=dict)  # path -> exact | gold-offset | unshifted
    search_tokens: int = 0  # the subagent's own prompt + completion tokens
    search_turns: int = 0
    search_wall_s: float = 0.0
    task_id: str = ""
    contract: str = "free"  # the search run's report contract (fasbench.tools.contract): free | ids
    cited_lines: int | None = None  # lines the report cites (scoring.process); None: not recorded (older files)
    unseen_lines: int | None = None  # of those, lines never shown to the searcher before its report
    file_precision: float | None = None  # the report's files against the task's edited files
    file_recall: float | None = None
    file_f1: float | None = None
    line_precision: float | None = None  # the report's (path, line) pairs against the edited lines
    line_recall: float | None = None
    line_f1: float | None = None


def _offset(offsets: Sequence[int | None]) -> int | None:
    vals = [o for o in offsets if o is not None]
    return int(statistics.median(vals)) if vals else None


def make_handoff(trace: Trace, task: Task, count) -> Handoff:
    """The report of ``trace`` moved onto the agent's lines, and ``count(text)`` of each rendering."""
    files = normalize_files(trace.report.files, task.root) if trace.report else {}
    corpus = task.meta.get("corpus") or {}
    offsets = corpus.get("offsets") or {}
    moved, how = {}, {}
    for p, rs in files.items():
        if corpus.get("mode") == "online":
            off, how[p] = 0, "exact"
        else:
            off = _offset(offsets.get(p, []))
            how[p] = "gold-offset" if off is not None else "unshifted"
            off = off or 0
        moved[p] = [[a - off, b - off] for a, b in rs]
    tokens = {fmt: count(render(trace, task.root, fmt)) for fmt in FORMATS}
    st = sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in trace.turns)
    wall = (trace.ended_at - trace.started_at) if trace.ended_at and trace.started_at else 0.0
    grounding = process_row(trace, task)
    prf = report_files_prf(task.gold, trace.report, task.root)
    lprf = report_lines_prf(task.gold, trace.report, task.root)
    return Handoff(
        moved,
        tokens,
        how,
        st,
        len(trace.turns),
        wall,
        trace.task_id,
        contract=str(trace.meta.get("report_contract") or "free"),
        cited_lines=grounding["cited_lines"],
        unseen_lines=grounding["cited_lines_unseen"],
        file_precision=prf.precision,
        file_recall=prf.recall,
        file_f1=prf.f(),
        line_precision=lprf.precision,
        line_recall=lprf.recall,
        line_f1=lprf.f(),
    )


def pair_key(task: Task) -> tuple[str, str]:
    """(data set folder or "*", instance id) a search task answers for."""
    run = task.meta.get("agent_run")
    iid = task.meta.get("instance_id") or task.id.split("@", 1)[0]
    return (RUNS[run][0] if run in RUNS else "*", iid)


# ---------------------------------------------------------------- coverage


def covered(look: Look, files: Mapping[str, Sequence[Sequence[int]]]) -> bool:
    """Whether a report (path -> ranges on the agent's lines) covers a look (see the module doc)."""
    if look.path not in files:
        return False
    rs = files[look.path]
    if not look.lines or not rs:
        return True
    looked = merge_ranges([c for a, b in look.lines if (c := clamp(a, b))])  # clipped: no line-by-line walk
    inside = overlap(looked, merge_ranges([c for a, b in rs if (c := clamp(a, b))]))
    return inside >= MIN_LINE_SHARE * total(looked)


def replaced(looks: Sequence[Look], files: Mapping[str, Sequence[Sequence[int]]] | None, rule: str) -> bool:
    if rule == "all":
        return True
    if files is None:
        return False
    cov = [covered(lk, files) for lk in looks]
    return bool(cov) and (all(cov) if rule == "strict" else any(cov))


def coverage(looks: Iterable[Look], files: Mapping[str, Sequence[Sequence[int]]]) -> dict:
    """Shares of the looked-at files (all; read = display or grep hit) and lines the report cites."""
    looks = list(looks)
    all_files = {lk.path for lk in looks}
    read_files = {lk.path for lk in looks if lk.how != "search-file"}
    spans: dict[str, list] = {}  # looked lines as intervals: a look at lines 1..3·10⁷ costs one entry
    for lk in looks:
        for a, b in lk.lines or ():
            if a <= b:
                spans.setdefault(lk.path, []).append((a, b))
    looked = {p: merge_ranges(rs, max(b for _, b in rs)) for p, rs in spans.items()}
    n_lines = sum(total(rs) for rs in looked.values())
    cited = set(files)

    def in_report(p: str, rs: list) -> int:
        got = files.get(p)
        if got is None:
            return 0
        if not got:
            return total(rs)
        proper = [(a, b) for a, b in got if a <= b]
        return overlap(rs, merge_ranges(proper, max(b for _, b in proper))) if proper else 0

    share = lambda hit, n: hit / n if n else None  # noqa: E731
    return {
        "looked_files": len(all_files),
        "read_files": len(read_files),
        "looked_lines": n_lines,
        "file_coverage": share(len(all_files & cited), len(all_files)),
        "read_file_coverage": share(len(read_files & cited), len(read_files)),
        "line_coverage": share(sum(in_report(p, rs) for p, rs in looked.items()), n_lines),
    }


# ---------------------------------------------------------------- tokens


@dataclass
class TurnTokens:
    p: float  # prompt tokens
    c: float  # completion tokens
    r: float = 0.0  # reasoning tokens (not fed back)
    o: float = 0.0  # observation tokens fed back after this turn


def savings(turns: Sequence[TurnTokens], w: Sequence[float], handoff: float) -> dict:
    """The token model of the module doc: saved own calls, saved later context, handoff cost, net."""
    n = len(turns)
    remain = [1.0 - x for x in w]
    later = np.cumsum(remain[::-1])[::-1]  # Σ_{u>=t} (1 - w_u)
    own = sum(x * (t.p + t.c) for t, x in zip(turns, w))
    ctx = sum(x * (t.c - t.r + t.o) * (later[i + 1] if i + 1 < n else 0.0) for i, (t, x) in enumerate(zip(turns, w)))
    cost = handoff * float(sum(remain))
    total = float(sum(t.p + t.c for t in turns))
    return {
        "total_tokens": total,
        "saved_calls": float(own),
        "saved_context": float(ctx),
        "handoff_cost": cost,
        "net": float(own + ctx - cost),
        "replaced_turns": float(sum(w)),
    }


# ---------------------------------------------------------------- one trajectory


def _turn_tokens(steps: pl.DataFrame) -> tuple[list[int], list[TurnTokens]]:
    per = (
        steps.group_by("turn", maintain_order=True)
        .agg(
            pl.first("prompt_tokens"),
            pl.first("completion_tokens"),
            pl.first("reasoning_tokens"),
            pl.first("obs_tokens"),
        )
        .sort("turn")
    )
    idx, out = [], []
    for t, p, c, r, o in per.iter_rows():
        idx.append(t)
        out.append(TurnTokens(float(p or 0), float(c or 0), float(r or 0), float(o or 0)))
    return idx, out


def trajectory_row(
    traj: Trajectory, dataset: str, steps: pl.DataFrame, handoff: Handoff | None, raw: dict | None = None, extra=None
) -> dict | None:
    """Coverage and savings of one trajectory (``steps``: its rows of the analysis steps frame);
    None when it has no first edit. ``extra(turns, turn_ids, first_edit, looks_by_call, weight, handoff)``
    adds columns (``fasbench.e2e.pays.arm_columns``: the hand-off arms)."""
    fe = steps["first_edit_turn"][0]
    if fe is None:
        return None
    raw = raw if raw is not None else load(traj.path)[0]
    calls = {(c.turn, c.call): c for c in shell_calls(raw)}
    pre = steps.filter((pl.col("turn") < fe) & pl.col("category").is_in(EXPLORE))
    looks_by_call = {}
    for turn, call in pre.select("turn", "call").iter_rows():
        c = calls.get((turn, call))
        looks_by_call[(turn, call)] = call_looks(c.command, c.output) if c else []
    looks = [lk for v in looks_by_call.values() for lk in v]
    idx, toks = _turn_tokens(steps)
    weight = {(t, c): w for t, c, w in pre.select("turn", "call", "weight").iter_rows()}
    files = handoff.files if handoff else None
    row = {
        "dataset": dataset,
        "trajectory_id": traj.trajectory_id,
        "instance_id": traj.instance_id,
        "repo": steps["repo"][0],
        "resolved": traj.resolved,
        "first_edit_turn": fe,
        "n_turns": len(toks),
        "explore_calls_before": pre.height,
        "explore_turns_before": pre["turn"].n_unique(),
        "calls_with_looks": sum(bool(v) for v in looks_by_call.values()),
        "has_search": handoff is not None,
        "tokens_estimated": bool(steps["tokens_estimated"].any()),
    }
    row.update(coverage(looks, files) if files is not None else {k: None for k in coverage([], {})})
    if handoff is not None:
        row.update(
            report_files=len(handoff.files),
            search_tokens=handoff.search_tokens,
            search_turns=handoff.search_turns,
            search_wall_s=handoff.search_wall_s,
            line_map_unshifted=sum(v == "unshifted" for v in handoff.line_map.values()),
        )
        for fmt in FORMATS:
            row[f"handoff_tokens_{fmt}"] = handoff.tokens[fmt]
    for rule in RULES:
        w = {t: 0.0 for t in idx}
        n = 0
        for key, lks in looks_by_call.items():
            if replaced(lks, files, rule):
                w[key[0]] += weight[key]
                n += 1
        ws = [w[t] for t in idx]
        gross = savings(toks, ws, 0.0)
        row["total_tokens"] = gross["total_tokens"]
        row[f"{rule}_replaced_calls"] = n
        row[f"{rule}_replaced_turns"] = gross["replaced_turns"]
        row[f"{rule}_gross"] = gross["net"]
        row[f"{rule}_saved_calls"] = gross["saved_calls"]  # the replaced calls' own tokens (no context effect)
        if handoff is not None:
            for fmt in FORMATS:
                s = savings(toks, ws, handoff.tokens[fmt])
                row[f"{rule}_net_{fmt}"] = s["net"]
                row[f"{rule}_net_share_{fmt}"] = s["net"] / s["total_tokens"] if s["total_tokens"] else None
    if extra is not None:
        row.update(extra(toks, idx, fe, looks_by_call, weight, handoff))
    return row


def counterfactual_frame(
    trajs: Sequence[tuple[Trajectory, str]],
    steps: pl.DataFrame,
    handoffs: Mapping[tuple[str, str], Handoff],
    progress: bool = True,
    extra=None,
) -> pl.DataFrame:
    """One row per trajectory with a first edit (see ``trajectory_row``); ``handoffs`` keyed by
    ``pair_key`` ((data set, instance id), or ("*", instance id) for any data set)."""
    by_traj = steps.partition_by(["dataset", "trajectory_id"], as_dict=True, maintain_order=True)
    rows = []
    for traj, ds in tqdm(trajs, desc="counterfactual", unit="traj", disable=not progress or len(trajs) < 50):
        st = by_traj.get((ds, traj.trajectory_id))
        if st is None:
            continue
        h = handoffs.get((ds, traj.instance_id)) or handoffs.get(("*", traj.instance_id))
        r = trajectory_row(traj, ds, st, h, extra=extra)
        if r is not None:
            rows.append(r)
    return pl.DataFrame(rows, infer_schema_length=None)
