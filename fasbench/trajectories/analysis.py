"""Trajectories → one polars frame per action → shares, first-edit statistics, handoff share.

Definitions (issue 4; FastContext's and Relace's analyses):

- A *turn* is one model call (1-based ``turn``); a turn with k tool calls gives each call
  ``weight = 1/k`` of the turn. A turn without any call (a format error) is one row with category
  ``none``: it counts for tokens, not for tool-use turns.
- *Call tokens* = (prompt + completion tokens of the model call) × weight. *Observation tokens* =
  the growth of the next prompt beyond this call's prompt and the part of its completion that is fed
  back (completion − reasoning tokens), clipped at 0 (× weight). The last turn has none.
- *First edit turn*: the first turn with an action that edits a file the final submission changes
  (the files the submission modifies; its added files only when it modifies none). Edits are found
  from the action's named targets (redirections, ``sed -i``, editor tools …), from code that writes
  files and names the file, and from running a script the agent wrote with code that edits it.
  Without a submission (Claude Code, traces) it is the first edit outside /tmp.
- *Exploration before the first edit*: read/search calls (and the turns holding any) in turns before
  the first edit turn.
- *Counterfactual handoff share*: tokens of read/search calls before the first edit ÷ all tokens, over
  trajectories with a first edit — what a search subagent could take over (ours; not a seed measure).
- Relace's two measures (tokens before the first non-search call: 56.6% on ~1,200 real agent traces,
  ~12% "initial search" on SWE-bench Verified) are defined and computed in ``relace_measures``
  (summary key ``relace``).

Trajectory files and labels are found by ``files``, the first edit decided by ``first_edit``.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from tqdm.auto import tqdm

from fasbench.trajectories.classify import CATEGORIES_PLOT_ORDER, SHELL_TOOLS, Action, analyze, analyze_call
from fasbench.trajectories.first_edit import edits_submission, submission_files
from fasbench.trajectories.guard import check_parsed, unparsable
from fasbench.trajectories.parsers import Trajectory, TrajectoryError, parse_file
from fasbench.trajectories.relace_measures import RELACE_SEEDS
from fasbench.trajectories.relace_measures import measures as relace_measures
from fasbench.trajectories.relace_measures import measures_by as relace_measures_by
from fasbench.trajectories.tokens import TOKENIZER_NAME
from fasbench.trajectories.trajectory_files import FileReport, discover, load_labels

EXPLORE = ("read", "search")
# the subagent's work counted as search: its rows are kept and the delegation call counts as search
EXPLORE_WITH_SUBAGENTS = ("read", "search", "delegate")
MAIN = pl.col("agent_role") == "main"

# The seeds' published numbers, for side-by-side tables (not computed here).
SEEDS = {
    "fastcontext": {
        "source": "Microsoft FastContext, 300 GPT-5.4 mini-swe-agent trajectories",
        "read_search_turn_share": 0.562,
        "read_search_token_share": 0.465,
        "first_edit_turn_mean": 8.47,
        "explore_turns_before_median": 6.0,
        "explore_calls_before_median": 15.5,
        "explore_turns_before_mean_unresolved": 8.34,
        "explore_turns_before_mean_resolved": 6.67,
    },
    "relace": RELACE_SEEDS,  # 56.6% on ~1,200 real agent traces; ~12% on SWE-bench Verified (see relace_measures)
}


def _repo(instance_id: str) -> str:
    m = re.match(r"^(.+?)__(.+)-\d+$", instance_id)
    return f"{m.group(1)}/{m.group(2)}" if m else ""


# ------------------------------------------------------------------ frames

STEP_COLUMNS = (
    "dataset",
    "trajectory_id",
    "instance_id",
    "repo",
    "agent",
    "model",
    "format",
    "turn",
    "call",
    "n_calls",
    "tool",
    "action",
    "category",
    "parser",
    "is_call",
    "weight",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "obs_tokens",
    "call_tokens",
    "call_obs_tokens",
    "tokens_estimated",
    "resolved",
    "edits_submission",
    "first_edit_turn",
    "before_first_edit",
    "agent_role",
    "subagent_id",
    "depth",
    "sub_turn",
)


def classify_call(tool: str, action: str, args) -> Action:
    """The category and effects of one call: shell text by the rubric, other tools by name."""
    if args is None or tool in SHELL_TOOLS or tool.lower() in SHELL_TOOLS:
        return analyze(action)
    return analyze_call(tool, args)


_ROW = (
    "turn",
    "call",
    "n_calls",
    "tool",
    "action",
    "category",
    "parser",
    "is_call",
    "weight",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "obs_tokens",
    "call_tokens",
    "call_obs_tokens",
    "tokens_estimated",
    "edits_submission",
    "agent_role",
    "subagent_id",
    "depth",
    "sub_turn",
)


def _agent_rows(
    traj: Trajectory, rows: list, subs: set, scripts: set, state: dict, depth: int = 0, parent_turn: int | None = None
) -> None:
    """The rows of one agent's turns; a delegation call's subagent follows its row (depth first),
    numbered by the delegating main turn (``turn``) with its own turn in ``sub_turn``. The first edit
    is the main agent's (``state["first_edit"]``)."""
    turns = traj.turns
    role, sid = ("main", None) if depth == 0 else ("subagent", traj.trajectory_id)
    for sub in traj.handed_off:  # a hand-off before the first turn: its rows come first, at turn 0
        _agent_rows(sub, rows, subs, scripts, state, depth + 1, 0 if depth == 0 else parent_turn)
    for ti, t in enumerate(turns):
        p, c, r = t.prompt_tokens, t.completion_tokens, t.reasoning_tokens or 0
        total = (p or 0) + (c or 0)
        obs = t.obs_tokens
        if obs is None and ti + 1 < len(turns) and p is not None and c is not None:
            nxt = turns[ti + 1].prompt_tokens
            if nxt is not None:
                obs = max(0, nxt - p - (c - r))
        turn, sub_turn = (t.index, None) if depth == 0 else (parent_turn, t.index)
        tail = (role, sid, depth, sub_turn)
        k = len(t.calls)
        if not k:
            rows.append(
                (
                    turn,
                    0,
                    0,
                    None,
                    None,
                    "none",
                    "empty",
                    False,
                    1.0,
                    p,
                    c,
                    r,
                    obs,
                    float(total),
                    obs,
                    t.estimated,
                    False,
                    *tail,
                )
            )
            continue
        w = 1.0 / k
        for ci, call in enumerate(t.calls):
            a = analyze(call.action) if call.args is None else classify_call(call.tool, call.action, call.args)
            if a.category == "edit" or a.created or (a.runs and scripts):
                hit = edits_submission(a, call.action, subs, scripts)
            else:
                hit = False
            if hit and depth == 0 and state["first_edit"] is None:
                state["first_edit"] = t.index
            category = "delegate" if call.subagent is not None else a.category
            rows.append(
                (
                    turn,
                    ci,
                    k,
                    call.tool,
                    call.action,
                    category,
                    a.parser,
                    True,
                    w,
                    p,
                    c,
                    r,
                    obs,
                    total * w,
                    obs * w if obs is not None else None,
                    t.estimated,
                    hit,
                    *tail,
                )
            )
            if call.subagent is not None:
                _agent_rows(call.subagent, rows, subs, scripts, state, depth + 1, turn)


def _rows(traj: Trajectory, dataset: str, cols: dict[str, list]) -> None:
    subs = submission_files(traj.submission)
    scripts: set[str] = set()
    state = {"first_edit": None}
    rows: list = []
    _agent_rows(traj, rows, subs, scripts, state)
    first_edit = state["first_edit"]
    n = len(rows)
    if not n:
        return
    for name, values in zip(_ROW, zip(*rows)):
        cols[name].extend(values)
    for name, value in (
        ("dataset", dataset),
        ("trajectory_id", traj.trajectory_id),
        ("instance_id", traj.instance_id),
        ("repo", _repo(traj.instance_id)),
        ("agent", traj.agent),
        ("model", traj.model),
        ("format", traj.format),
        ("resolved", traj.resolved),
        ("first_edit_turn", first_edit),
    ):
        cols[name].extend([value] * n)
    cols["before_first_edit"].extend([None] * n if first_edit is None else [row[0] < first_edit for row in rows])


class StepSink:
    """Rows of (trajectory, data set) pairs appended one at a time, turned into polars chunks every
    ``chunk_rows`` rows: the parsed trajectories and the Python row lists are dropped as the analysis
    goes, so memory holds the columnar step frame, not every parsed trajectory (50,000 trajectories:
    benchmarks/trajectory_scale.py)."""

    def __init__(self, chunk_rows: int = 25_000):
        self.chunk_rows = chunk_rows
        self.chunks: list = []
        self.traj_chunks: list = []  # trajectory_frame of each chunk: its group-by's working memory stays per chunk
        self._new()

    def _new(self) -> None:
        self.cols: dict[str, list] = {c: [] for c in STEP_COLUMNS}

    def append(self, item: tuple[Trajectory, str]) -> None:
        traj, dataset = item
        _rows(traj, dataset, self.cols)
        if len(self.cols["turn"]) >= self.chunk_rows:
            self._flush()

    def _flush(self) -> None:

        schema = {
            "turn": pl.Int32,
            "call": pl.Int32,
            "n_calls": pl.Int32,
            "prompt_tokens": pl.Int64,
            "completion_tokens": pl.Int64,
            "reasoning_tokens": pl.Int64,
            "obs_tokens": pl.Int64,
            "call_tokens": pl.Float64,
            "call_obs_tokens": pl.Float64,
            "weight": pl.Float64,
            "resolved": pl.Boolean,
            "first_edit_turn": pl.Int32,
            "before_first_edit": pl.Boolean,
            "is_call": pl.Boolean,
            "edits_submission": pl.Boolean,
            "tokens_estimated": pl.Boolean,
            "depth": pl.Int32,
            "sub_turn": pl.Int32,
        }
        cols = self.cols
        self._new()
        chunk = pl.DataFrame({c: pl.Series(c, cols.pop(c), dtype=schema.get(c, pl.Utf8)) for c in STEP_COLUMNS})
        self.chunks.append(chunk)
        self.traj_chunks.append(trajectory_frame(chunk))  # a chunk holds whole trajectories

    def frame(self):
        """The step frame (chunks concatenated without copying them into one buffer)."""

        if self.cols["turn"] or not self.chunks:
            self._flush()
        return self.chunks[0] if len(self.chunks) == 1 else pl.concat(self.chunks, rechunk=False)

    def trajectories(self):
        """``trajectory_frame`` of the steps, computed chunk by chunk (the same frame unless one
        trajectory id of one data set was split over two chunks: then it is computed whole)."""

        steps = self.frame()
        if len(self.traj_chunks) == 1:
            return self.traj_chunks[0]
        t = pl.concat(self.traj_chunks)
        if t.select(pl.struct("dataset", "trajectory_id").is_duplicated().any()).item():
            return trajectory_frame(steps)
        return t


def steps_frame(trajs: Iterable[tuple[Trajectory, str]]):
    """One row per action (see ``STEP_COLUMNS``) from (trajectory, data set) pairs (an iterator is
    consumed as it goes: see ``StepSink``)."""
    sink = StepSink()
    for item in trajs:
        sink.append(item)
    return sink.frame()


def trajectory_frame(steps):
    """One row per trajectory: sizes, first edit turn, exploration before it, handoff tokens."""

    explore = pl.col("category").is_in(EXPLORE) & MAIN
    before = pl.col("before_first_edit").fill_null(False)
    return (  # lazy: only the columns used are read (an eager group-by copies every column of a chunked frame)
        steps.lazy()
        .group_by(["dataset", "trajectory_id"], maintain_order=True)
        .agg(
            pl.first("instance_id"),
            pl.first("repo"),
            pl.first("agent"),
            pl.first("model"),
            pl.first("format"),
            pl.first("resolved"),
            pl.first("first_edit_turn"),
            pl.col("turn").filter(MAIN).n_unique().alias("n_turns"),
            pl.col("turn").filter(pl.col("is_call") & MAIN).n_unique().alias("n_tool_turns"),
            (pl.col("is_call") & MAIN).sum().alias("n_calls"),
            pl.col("call_tokens").filter(MAIN).sum().alias("tokens"),
            (pl.col("category") == "delegate").sum().alias("delegations"),
            pl.col("subagent_id").drop_nulls().n_unique().alias("subagents"),
            (pl.col("is_call") & ~MAIN).sum().alias("subagent_calls"),
            pl.col("call_tokens").filter(~MAIN).sum().alias("subagent_tokens"),
            pl.col("tokens_estimated").any().alias("tokens_estimated"),
            pl.col("turn").filter(explore & before).n_unique().alias("explore_turns_before"),
            (explore & before).sum().alias("explore_calls_before"),
            pl.col("call_tokens").filter(explore & before).sum().alias("handoff_tokens"),
        )
        .with_columns(
            pl.when(pl.col("first_edit_turn").is_null())
            .then(None)
            .otherwise(pl.col("explore_turns_before"))
            .alias("explore_turns_before"),
            pl.when(pl.col("first_edit_turn").is_null())
            .then(None)
            .otherwise(pl.col("explore_calls_before"))
            .alias("explore_calls_before"),
        )
        .collect()
    )


# ------------------------------------------------------------------ summary


def _f(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, 6)


_FE_COLS = ("first_edit_turn", "explore_turns_before", "explore_calls_before")


def _shares_by(steps, key: str | None, subagents: bool = False) -> dict:
    """{group: {turn_share, token_share, obs_token_share, read_search_*}} in one pass per measure: the
    main agent's rows (a delegation call its own category), or with ``subagents`` every agent's rows
    with the delegation counted as search (``read_search_*`` over read, search and delegate)."""

    keys = [key] if key else []
    lazy = steps.lazy()  # lazy: the filter and group-bys read only the columns they need (no copy of the actions)
    if not subagents:
        lazy = lazy.filter(MAIN)
    explore = EXPLORE_WITH_SUBAGENTS if subagents else EXPLORE
    calls = lazy.filter(pl.col("is_call"))
    per = {}
    for measure, frame, col in (
        ("turn_share", calls, "weight"),
        ("token_share", lazy, "call_tokens"),
        ("obs_token_share", lazy, "call_obs_tokens"),
    ):
        g = frame.group_by([*keys, "category"], maintain_order=True).agg(pl.col(col).sum().alias("v")).collect()
        for row in g.iter_rows():
            k = row[0] if key else None
            per.setdefault(k, {}).setdefault(measure, {})[row[-2]] = row[-1] or 0.0
    out = {}
    for k, d in per.items():
        res = {}
        for measure in ("turn_share", "token_share", "obs_token_share"):
            vals = d.get(measure, {})
            tot = sum(vals.values())
            cats = list(CATEGORIES_PLOT_ORDER) + [
                c for c in ("delegate", "none") if c in vals and (c != "none" or measure != "turn_share")
            ]
            res[measure] = {c: _f(vals.get(c, 0.0) / tot) if tot else None for c in cats}
        for name, src in (
            ("read_search_turn_share", "turn_share"),
            ("read_search_token_share", "token_share"),
            ("read_search_obs_token_share", "obs_token_share"),
        ):
            v = [res[src].get(c, 0.0) for c in explore]
            res[name] = _f(sum(v)) if all(x is not None for x in v) else None
        out[k] = res
    return out


def _first_edit_by(trajs, key: str | None) -> dict:
    """{group: first-edit statistics} over trajectories with a first edit (see the module doc)."""

    fe = pl.col("first_edit_turn").is_not_null()
    aggs = [pl.len().alias("trajectories"), fe.sum().alias("with_first_edit")]
    for c in _FE_COLS:
        x = pl.col(c).filter(fe).cast(pl.Float64)
        aggs += [x.mean().alias(f"{c}_mean"), x.median().alias(f"{c}_median")]
    aggs += [pl.col("handoff_tokens").filter(fe).sum().alias("_h"), pl.col("tokens").filter(fe).sum().alias("_t")]
    g = trajs.group_by(key, maintain_order=True).agg(aggs) if key else trajs.select(aggs)
    out = {}
    for row in g.iter_rows(named=True):
        k = row.pop(key) if key else None
        h, t = row.pop("_h"), row.pop("_t")
        row = {c: (int(v) if c in ("trajectories", "with_first_edit") else _f(v)) for c, v in row.items()}
        row["without_first_edit"] = row["trajectories"] - row["with_first_edit"]
        row["handoff_share"] = _f(h / t) if row["with_first_edit"] and t else None
        out[k] = row
    return out


def _blocks(steps, trajs, key: str | None) -> dict:

    keys = [key] if key else []
    sh = _shares_by(steps, key)
    # without any delegation both views are the same numbers: computed once
    sub = _shares_by(steps, key, subagents=True) if has_delegation(steps) else sh
    fe = _first_edit_by(trajs, key)
    lazy = steps.lazy()
    aggs = [
        (pl.col("is_call") & MAIN).sum().alias("calls"),
        pl.col("call_tokens").filter(MAIN).sum().alias("t"),
        pl.col("is_call").sum().alias("calls_all"),
        pl.col("call_tokens").sum().alias("t_all"),
        (pl.col("category") == "delegate").sum().alias("delegations"),
    ]
    size = (lazy.group_by(keys, maintain_order=True).agg(aggs) if key else lazy.select(aggs)).collect()
    sizes = {(r[0] if key else None): r[-5:] for r in size.iter_rows()}
    out = {}
    for k in fe:
        calls, tokens, calls_all, tokens_all, delegations = sizes.get(k, (0, 0.0, 0, 0.0, 0))
        w = sub.get(k, {})
        out[k] = {
            **sh.get(k, {}),
            **fe[k],
            "calls": int(calls),
            "tokens": _f(tokens),
            "delegations": int(delegations),
            "with_subagents": {**w, "calls": int(calls_all), "tokens": _f(tokens_all)},
        }
    return out


def has_delegation(steps) -> bool:
    """Whether any step is a delegation call or a subagent's."""
    return bool(
        steps.lazy().select(((pl.col("depth") > 0) | (pl.col("category") == "delegate")).any()).collect().item()
    )


def block(steps, trajs) -> dict:
    """Every metric for one set of steps and the matching trajectories."""
    return _blocks(steps, trajs, None)[None]


def _split(steps, trajs, col: str) -> dict:
    out = _blocks(steps, trajs, col)
    return {("unknown" if k is None else str(k).lower() if isinstance(k, bool) else str(k)): v for k, v in out.items()}


def shares(steps) -> dict:
    """Shares of tool-use turns, call tokens and observation tokens per category."""
    return _shares_by(steps, None).get(None, {})


def first_edit_stats(trajs) -> dict:
    """First edit turn and exploration before it, over trajectories with a first edit."""
    return _first_edit_by(trajs, None)[None]


@dataclass
class Analysis:
    steps: object  # polars.DataFrame, one row per action
    trajectories: object  # polars.DataFrame, one row per trajectory
    files: FileReport

    def summary(self) -> dict:

        s, t = self.steps, self.trajectories
        parsers = dict(
            s.lazy().filter(pl.col("is_call")).group_by("parser", maintain_order=True).len().collect().iter_rows()
        )
        out = {
            "files": self.files.to_dict(),
            "trajectories": t.height,
            "actions": int(s["is_call"].sum()),
            "turns_without_action": int((~s["is_call"]).sum()),
            "parsers": parsers,
            "unparsable_actions": parsers.get("unparsable", 0),
            "tokens_estimated_share": _f(s["tokens_estimated"].mean()) if s.height else None,
            "overall": block(s, t) if s.height else {},
            "by_resolved": _split(s, t, "resolved") if s.height else {},
            "by_dataset": _split(s, t, "dataset") if s.height else {},
            "by_repo": _split(s, t, "repo") if s.height else {},
            "relace": relace_measures(s) if s.height else {},
            "relace_by_dataset": relace_measures_by(s, "dataset") if s.height else {},
            "seeds": SEEDS,
        }

        out["estimation_tokenizer"] = TOKENIZER_NAME
        return out

    def write(self, out_dir: str | Path) -> tuple[Path, Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.steps.write_parquet(out / "steps.parquet")
        (out / "summary.json").write_text(json.dumps(self.summary(), indent=2), encoding="utf-8")
        return out / "steps.parquet", out / "summary.json"


def parse_paths(
    paths: Iterable[str | Path],
    labels: dict[str, bool] | None = None,
    progress: bool = True,
    limit: int | None = None,
    sink=None,
) -> tuple[list[tuple[Trajectory, str]], FileReport]:
    """Parse every trajectory under ``paths``; bad files are skipped and recorded with their reason.
    ``limit`` keeps the first N files of each path (for smoke runs). The (trajectory, data set) pairs
    go to ``sink.append`` as each file is parsed (default: a list, returned)."""

    report = FileReport()
    paths = list(paths)
    files: list[tuple[Path, str, dict]] = []
    for p in paths:
        found = discover([p], report)
        try:
            lab = labels if labels is not None else load_labels(p)
        except Exception as e:  # a corrupt label file: analyse without labels, say why
            report.skipped.append((str(p), f"labels unreadable, analysed without labels ({type(e).__name__}: {e})"))
            lab = {}
        files.extend((f, ds, lab) for f, ds in found[:limit])
    out = [] if sink is None else sink
    for f, ds, lab in tqdm(files, desc="trajectories", unit="file", disable=not progress or len(files) < 50):
        try:
            parsed = check_parsed(parse_file(f))
        except TrajectoryError as e:
            report.skipped.append((str(f), str(e)))
            continue
        except OSError as e:
            report.skipped.append((str(f), f"unreadable ({e})"))
            continue
        except Exception as e:  # anything else a strange file provokes (deep nesting, wrong types)
            report.skipped.append((str(f), unparsable(e)))
            continue
        report.parsed.append(str(f))
        report.formats[parsed.format] += 1
        report.sidechain_lines += parsed.dropped_lines
        if parsed.partial:
            report.partial.append((str(f), parsed.partial))
        for tr in parsed.trajectories:
            if tr.resolved is None:
                tr.resolved = lab.get(tr.instance_id)
            out.append((tr, ds))
    return out, report


def analyze_paths(
    paths: Iterable[str | Path], labels: dict[str, bool] | None = None, progress: bool = True, limit: int | None = None
) -> Analysis:
    """Parse, classify and measure every trajectory under ``paths`` (files or folders)."""

    enabled = gc.isenabled()
    gc.disable()  # the loop only allocates (no cycles to free); collections would rescan the kept turns
    try:
        sink, report = parse_paths(paths, labels, progress, limit, sink=StepSink())  # streamed: see StepSink
        steps = sink.frame()
    finally:
        if enabled:
            gc.enable()
    return Analysis(steps, sink.trajectories(), report)
