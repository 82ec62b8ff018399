"""Interactive replay of parallel tool-call traces (ipywidgets + plotly).

The logic is in pure functions that tests check headlessly:

- :func:`call_spans` / :func:`assign_lanes` — every call as a bar on a lane, one lane per
  concurrent call slot (greedy interval partitioning), x = seconds since the episode started,
  or the turn index when the trace has no timings;
- :func:`viewed_ranges` / :func:`grep_hits` / :func:`file_overlay` — per file, the lines the
  policy viewed (``view_file``/``Read`` arguments and numbered output), the lines grep showed it,
  the lines it cited in its report and the gold lines, with overlap counts;
- :func:`browser_rows` / :func:`filter_sort` — the table of :class:`TraceBrowser`.

The widgets put them together: :class:`TraceReplay` (timeline, turn header, step slider and Play
button linked in the browser, call inspector, file panel), :func:`compare` (two episodes of one
task side by side) and :class:`TraceBrowser` (a filterable, sortable list of episodes that opens
the replay of the selected one). Figures for papers come from :func:`timeline_figure`,
:func:`compare_figure` and :func:`file_figure`, saved with :func:`fasbench.figures.save`.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import plotly.graph_objects as go

from fasbench.figures import PALETTE, TOOL_COLORS
from fasbench.metrics import merge_ranges, normalize_path
from fasbench.linerefs import short_path, to_eof
from fasbench.lines import overlap as _inter, total as _n
from fasbench.records import Ranges, Task, ToolCall, ToolResult, Trace, Turn

VIEW_TOOLS = ("view_file", "Read")  # calls whose output shows numbered file lines
GREP_TOOLS = ("grep_search", "Grep")  # calls whose output shows `path:line:text` matches
MODEL_COLOR = "#BBBBBB"
LAYER_COLORS = {"gold": "#E69F00", "cited": "#CC79A7", "viewed": "#56B4E9", "grep": "#0072B2"}


def tool_color(name: str) -> str:
    """The figure colour of a tool; tools without a fixed colour get a stable palette colour."""
    if name in TOOL_COLORS:
        return TOOL_COLORS[name]
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


# ---------------------------------------------------------------- timeline: spans and lanes

@dataclass
class CallSpan:
    """One tool call placed on the timeline. ``start``/``end`` are seconds since the episode
    started (or turn units when the trace has no timings); ``lane`` is its concurrent slot."""

    turn: int  # 0-based turn index
    index: int  # position of the call in its turn
    call_id: str
    tool: str
    start: float
    end: float
    lane: int
    is_error: bool
    arguments: str  # the arguments as JSON text

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class TurnSpan:
    """The model and tool phases of one turn, on the same axis as the calls."""

    turn: int
    model_start: float
    model_end: float
    tools_start: float
    tools_end: float
    n_calls: int


def assign_lanes(intervals: Sequence[tuple[float, float]]) -> list[int]:
    """Greedy interval partitioning: each interval, taken by start time, goes on the lowest lane
    that is free at its start. The number of lanes used is the largest number of intervals that
    overlap at one instant (zero-length intervals at the same instant count as overlapping)."""
    lanes = [0] * len(intervals)
    busy: list[tuple[float, float]] = []  # (start, end) of the last interval on each lane
    for i in sorted(range(len(intervals)), key=lambda k: (intervals[k][0], intervals[k][1], k)):
        s, e = intervals[i]
        if e < s:
            raise ValueError(f"interval {i} ends before it starts: ({s}, {e})")
        for k, (ls, le) in enumerate(busy):
            if le < s or (le == s and ls < le):
                busy[k] = (s, e)
                lanes[i] = k
                break
        else:
            busy.append((s, e))
            lanes[i] = len(busy) - 1
    return lanes


def has_timings(trace: Trace) -> bool:
    """True when every call result and every turn carries wall-clock timings."""
    for t in trace.turns:
        if t.model_started_at is None or t.model_ended_at is None:
            return False
        for r in t.results:
            if r.started_at is None or r.ended_at is None:
                return False
    return bool(trace.turns)


def _results_by_call(turn: Turn) -> list[ToolResult | None]:
    """The result of each call of a turn, matched by call id (by position when ids repeat or miss)."""
    by_id = {r.call_id: r for r in turn.results}
    out = []
    for j, c in enumerate(turn.calls):
        r = by_id.get(c.id) if len(by_id) == len(turn.results) else None
        if r is None and j < len(turn.results):
            r = turn.results[j]
        out.append(r)
    return out


def _origin(trace: Trace) -> float:
    stamps = [trace.started_at] + [t.model_started_at for t in trace.turns]
    stamps += [r.started_at for t in trace.turns for r in t.results]
    stamps = [s for s in stamps if s is not None]
    return min(stamps) if stamps else 0.0


def call_spans(trace: Trace) -> tuple[list[TurnSpan], list[CallSpan], str]:
    """The turns and calls of a trace on one axis, and the axis unit ("s" or "turn").

    With timings, x is seconds since the episode started and lanes come from
    :func:`assign_lanes` over all calls. Without, turn ``i`` spans ``[i, i + 1)``: the model
    phase takes its first third, the calls the rest, one lane per call of the turn."""
    turns: list[TurnSpan] = []
    spans: list[CallSpan] = []
    if has_timings(trace):
        t0 = _origin(trace)
        for t in trace.turns:
            res = _results_by_call(t)
            ms, me = t.model_started_at - t0, t.model_ended_at - t0
            ts = (t.tools_started_at - t0) if t.tools_started_at is not None else me
            te = (t.tools_ended_at - t0) if t.tools_ended_at is not None else ts
            turns.append(TurnSpan(t.index, ms, me, ts, te, len(t.calls)))
            for j, (c, r) in enumerate(zip(t.calls, res)):
                s = (r.started_at - t0) if r is not None else ts
                e = (r.ended_at - t0) if r is not None else ts
                spans.append(CallSpan(t.index, j, c.id, c.name, s, max(s, e), 0,
                                      bool(r and r.is_error), c.arguments_json()))
        for sp, lane in zip(spans, assign_lanes([(sp.start, sp.end) for sp in spans])):
            sp.lane = lane
        return turns, spans, "s"
    for i, t in enumerate(trace.turns):
        res = _results_by_call(t)
        turns.append(TurnSpan(t.index, i, i + 0.3, i + 0.35, i + 0.95, len(t.calls)))
        for j, (c, r) in enumerate(zip(t.calls, res)):
            spans.append(CallSpan(t.index, j, c.id, c.name, i + 0.35, i + 0.95, j,
                                  bool(r and r.is_error), c.arguments_json()))
    return turns, spans, "turn"


def turn_summary(trace: Trace, i: int) -> dict:
    """What the turn header shows for turn ``i`` (0-based)."""
    if not 0 <= i < len(trace.turns):
        raise IndexError(f"trace {trace.trace_id} has {len(trace.turns)} turns; no turn {i + 1}")
    t = trace.turns[i]
    return {
        "turn": i + 1,
        "n_turns": len(trace.turns),
        "text": t.text or "",
        "n_calls": len(t.calls),
        "tools": [c.name for c in t.calls],
        "n_errors": sum(1 for r in t.results if r.is_error),
        "model_s": t.model_time,
        "tools_s": t.tool_time,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "is_last": i == len(trace.turns) - 1,
    }


# ---------------------------------------------------------------- lines viewed, matched, cited

_NUMBERED = re.compile(r"^\s*(\d+)(?:[\t|:→│ ]|$)")
_GREP_MATCH = re.compile(r"^(.+?):(\d+):")  # ripgrep `path:line:text`
_GREP_CONTEXT = re.compile(r"^(.+?\.\w+)-(\d+)-")  # ripgrep context lines `path-line-text`
_HEADED = re.compile(r"^(\d+)[:-]")  # a line below its file's path in `rg --heading` output


def _args(call: ToolCall) -> dict:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        a = json.loads(call.arguments)
    except (TypeError, ValueError):
        return {}
    return a if isinstance(a, dict) else {}


def _as_int(v, default: int | None) -> int | None:
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return default


def _numbered_lines(output: str, lo: int | None, hi: int | None) -> list[int]:
    """Line numbers of a numbered file listing: the leading numbers that increase line by line
    (a line of content starting with digits cannot break in), kept within [lo, hi] when given."""
    nums: list[int] = []
    for line in output.splitlines():
        m = _NUMBERED.match(line)
        if not m:
            continue
        n = int(m.group(1))
        if nums and n != nums[-1] + 1:
            continue
        if not nums and ((lo is not None and n < lo) or (hi is not None and hi > 0 and n > hi)):
            continue
        nums.append(n)
    return nums


def viewed_ranges(call: ToolCall, result: ToolResult | None, root: str | None = None) -> tuple[str, Ranges] | None:
    """The file and line ranges one ``view_file`` / ``Read`` call showed the policy, or None
    for other tools and failed calls.

    The numbered lines in the output are the truth (they reflect end-of-file and truncation);
    when the output has none, the requested range is used: ``view_file`` ``view_range=[s, e]``
    (default [1, 100], ``e = -1`` = to the end, counted from the output), ``Read``
    ``offset``/``limit`` (1-based offset, default limit 2000)."""
    if call.name not in VIEW_TOOLS or (result is not None and result.is_error):
        return None
    a = _args(call)
    path = a.get("path") or a.get("file_path")
    if not isinstance(path, str) or not path.strip():
        return None
    path = normalize_path(path, root)
    if call.name == "view_file":
        vr = a.get("view_range") or [1, 100]
        s = _as_int(vr[0], 1) if isinstance(vr, (list, tuple)) and vr else 1
        e = _as_int(vr[1], 100) if isinstance(vr, (list, tuple)) and len(vr) > 1 else 100
    else:
        off = _as_int(a.get("offset"), 1) or 1
        limit = _as_int(a.get("limit"), 2000) or 2000
        s, e = (max(1, off), max(1, off) + limit - 1) if off > 0 else (1, -1)  # < 0: from the end
    output = result.output if result is not None else ""
    nums = _numbered_lines(output, s, e)
    if nums:
        return path, merge_ranges([[n, n] for n in nums])
    if result is None:
        return path, merge_ranges([[s, e]]) if e and e > 0 else []
    if e is None or e < 0:
        n_out = len(output.splitlines())
        e = s + n_out - 1 if n_out else s - 1
    return path, merge_ranges([[s, e]])


def grep_hits(call: ToolCall, result: ToolResult | None, root: str | None = None) -> dict[str, list[int]]:
    """The ``path:line:`` matches (and ``path-line-`` context lines) a grep call showed."""
    if call.name not in GREP_TOOLS or result is None or result.is_error:
        return {}
    out: dict[str, list[int]] = {}
    heading = None  # FastContext's Grep prints `rg --heading` groups: a path line, then `N:` / `N-` lines
    for line in result.output.splitlines():
        h = _HEADED.match(line)
        if heading is not None and h:
            out.setdefault(heading, []).append(int(h.group(1)))
            continue
        m = _GREP_MATCH.match(line) or _GREP_CONTEXT.match(line)
        if m and not m.group(1).startswith(("[", "Error")):
            out.setdefault(normalize_path(m.group(1), root), []).append(int(m.group(2)))
        elif line.startswith("/repo/") and " " not in line:
            heading = normalize_path(line, root)
        elif line.strip() and line != "--":
            heading = None
    return out


@dataclass
class FileOverlay:
    """The lines of one file the episode viewed, grep-matched and cited, and its gold lines."""

    path: str
    viewed: Ranges = field(default_factory=list)
    grep: list[int] = field(default_factory=list)
    cited: Ranges = field(default_factory=list)
    gold: Ranges = field(default_factory=list)
    is_cited: bool = False  # the report names the file (possibly without lines)
    is_gold: bool = False  # the gold names the file (possibly without lines)
    first_turn: int | None = None  # first turn that viewed or matched it

    def counts(self) -> dict:
        return {
            "path": self.path,
            "viewed": _n(self.viewed),
            "grep": len(self.grep),
            "cited": _n(self.cited),
            "gold": _n(self.gold),
            "gold_viewed": _inter(self.gold, self.viewed),
            "gold_cited": _inter(self.gold, self.cited),
            "cited_viewed": _inter(self.cited, self.viewed),
            "is_cited": self.is_cited,
            "is_gold": self.is_gold,
        }


def report_turn(trace: Trace) -> int | None:
    """The 0-based turn that delivered the report (the last turn), or None without a report."""
    return len(trace.turns) - 1 if trace.report is not None and trace.turns else None


def file_overlay(trace: Trace, task: Task | None = None, upto_turn: int | None = None,
                 root: str | None = None) -> list[FileOverlay]:
    """Per touched file (viewed, matched, cited or gold): the overlaid line sets. ``upto_turn``
    (0-based, inclusive) limits viewed/matched lines to the turns so far, and the report's cited lines
    appear from the reporting turn on; gold is always shown. A range end of -1 means the end of the
    file. Gold files come first, then files in the order they were touched."""
    root = root or (task.root if task is not None else None)
    files: dict[str, FileOverlay] = {}

    def get(p: str) -> FileOverlay:
        if p not in files:
            files[p] = FileOverlay(p)
        return files[p]

    last = len(trace.turns) - 1 if upto_turn is None else upto_turn
    for t in trace.turns[: last + 1]:
        for c, r in zip(t.calls, _results_by_call(t)):
            v = viewed_ranges(c, r, root)
            if v is not None:
                f = get(v[0])
                f.viewed = merge_ranges(f.viewed + v[1])
                f.first_turn = t.index if f.first_turn is None else f.first_turn
            for p, lines in grep_hits(c, r, root).items():
                f = get(p)
                f.grep = sorted(set(f.grep) | set(lines))
                f.first_turn = t.index if f.first_turn is None else f.first_turn
    rt = report_turn(trace)
    if rt is not None and last >= rt:
        for p, rs in trace.report.files.items():
            q = normalize_path(p, root)
            f = get(q)
            f.cited, f.is_cited = merge_ranges(f.cited + to_eof(rs, root, q)), True
    if task is not None:
        for p, rs in task.gold.edited.items():
            q = normalize_path(p, root)
            f = get(q)
            f.gold, f.is_gold = merge_ranges(f.gold + to_eof(rs, root, q)), True
    order = {p: i for i, p in enumerate(files)}
    return sorted(files.values(), key=lambda f: (not f.is_gold, not f.is_cited,
                                                 f.first_turn if f.first_turn is not None else 1 << 30, order[f.path]))


def overlay_totals(rows: Iterable[FileOverlay]) -> dict:
    """Line counts summed over files, with the shares of gold lines viewed and cited."""
    tot = {"files": 0, "viewed": 0, "grep": 0, "cited": 0, "gold": 0, "gold_viewed": 0, "gold_cited": 0,
           "cited_viewed": 0}
    for f in rows:
        c = f.counts()
        tot["files"] += 1
        for k in tot:
            if k != "files":
                tot[k] += c[k]
    tot["gold_viewed_share"] = tot["gold_viewed"] / tot["gold"] if tot["gold"] else float("nan")
    tot["gold_cited_share"] = tot["gold_cited"] / tot["gold"] if tot["gold"] else float("nan")
    return tot


# ---------------------------------------------------------------- episode table

def episode_row(trace: Trace, task: Task | None = None, reward: str = "relace") -> dict:
    """One row of the episode table. The reward is computed from the task's gold when a task is
    given, else taken from ``trace.meta["reward"]`` (NaN when absent)."""
    from fasbench.reward import score_report

    if task is not None:
        r = score_report(reward, task.gold, trace.report, turns=trace.n_turns, root=task.root).value
    else:
        m = trace.meta.get("reward")
        r = float(m["score"] if isinstance(m, dict) else m) if m is not None else float("nan")
    model = sum(t.model_time for t in trace.turns)
    tools = sum(t.tool_time for t in trace.turns)
    return {"trace_id": trace.trace_id, "task_id": trace.task_id, "policy": trace.policy,
            "toolset": trace.toolset, "reward": r, "turns": trace.n_turns, "calls": trace.n_calls,
            "time_s": trace.wall_time, "model_s": model, "tools_s": tools,
            "max_parallel": max((len(t.calls) for t in trace.turns), default=0), "stop": trace.stop_reason}


def _task_map(tasks: Iterable[Task] | Mapping[str, Task] | None) -> dict[str, Task]:
    if tasks is None:
        return {}
    if isinstance(tasks, Mapping):
        return dict(tasks)
    return {t.id: t for t in tasks}


def browser_rows(traces: Sequence[Trace], tasks=None, reward: str = "relace") -> list[dict]:
    tm = _task_map(tasks)
    return [episode_row(tr, tm.get(tr.task_id), reward) for tr in traces]


SORT_KEYS = ("reward", "turns", "calls", "time_s", "max_parallel", "task_id", "policy")
_TEXT_KEYS = ("task_id", "policy", "toolset", "stop", "trace_id")


def filter_sort(rows: Sequence[dict], text: str = "", sort_by: str = "reward", descending: bool = True) -> list[dict]:
    """Rows whose task, policy, tool set, stop reason or trace id contain every word of
    ``text`` (case-insensitive), sorted by ``sort_by`` (NaN last whatever the direction)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"cannot sort by {sort_by!r}; choose one of {', '.join(SORT_KEYS)}")
    words = text.lower().split()
    kept = [r for r in rows if all(any(w in str(r[k]).lower() for k in _TEXT_KEYS) for w in words)]

    def nan(r):
        v = r[sort_by]
        return isinstance(v, float) and math.isnan(v)

    good = sorted((r for r in kept if not nan(r)), key=lambda r: r[sort_by], reverse=descending)
    return good + [r for r in kept if nan(r)]


# ---------------------------------------------------------------- figures

# A horizontal legend under the plot: it never scrolls, whatever the plot's height.
_BOTTOM_LEGEND = dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container")


def _fmt_s(x: float) -> str:
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def _add_timeline(fig: go.Figure, trace: Trace, row: int | None = None, highlight: int | None = None,
                  legend: bool = True, seen: set | None = None) -> None:
    turns, spans, unit = call_spans(trace)
    kw = dict(row=row, col=1) if row is not None else {}
    n_lanes = max((s.lane for s in spans), default=-1) + 1
    lane_names = ["model"] + [f"slot {k + 1}" for k in range(n_lanes)]
    end = max([s.end for s in spans] + [t.tools_end for t in turns] + [t.model_end for t in turns] + [1e-9])
    min_w = end * 0.004  # bars thinner than this would vanish; hover shows the real duration
    seen = seen if seen is not None else set()
    # model phases
    fig.add_trace(go.Bar(
        orientation="h", y=["model"] * len(turns), base=[t.model_start for t in turns],
        x=[max(t.model_end - t.model_start, min_w) for t in turns], marker_color=MODEL_COLOR,
        name="model", legendgroup="model", showlegend=legend and "model" not in seen,
        hovertext=[f"turn {t.turn + 1}: model {_fmt_s(t.model_end - t.model_start)}" if unit == "s"
                   else f"turn {t.turn + 1}: model" for t in turns], hoverinfo="text", width=0.7), **kw)
    seen.add("model")
    for tool in dict.fromkeys(s.tool for s in spans):
        ss = [s for s in spans if s.tool == tool]
        hover = [f"turn {s.turn + 1}, call {s.index + 1}: {html.escape(s.tool)}"
                 + (f" · {_fmt_s(s.duration)}" if unit == "s" else "")
                 + (" · ERROR" if s.is_error else "") + "<br>" + html.escape(s.arguments[:120]) for s in ss]
        fig.add_trace(go.Bar(
            orientation="h", y=[f"slot {s.lane + 1}" for s in ss], base=[s.start for s in ss],
            x=[max(s.duration, min_w) for s in ss], name=tool, legendgroup=tool,
            showlegend=legend and tool not in seen, hovertext=hover, hoverinfo="text", width=0.7,
            marker=dict(color=tool_color(tool), line=dict(color="#222", width=0.5),
                        pattern=dict(shape=["x" if s.is_error else "" for s in ss])),
            customdata=[[s.turn, s.index] for s in ss]), **kw)
        seen.add(tool)
    xref = "x" if row in (None, 1) else f"x{row}"
    yref = "y" if row in (None, 1) else f"y{row}"
    last_label = -math.inf
    for t in turns:
        fig.add_shape(type="line", x0=t.model_start, x1=t.model_start, y0=0, y1=1, xref=xref,
                      yref=f"{yref} domain", line=dict(color="#666", width=1, dash="dot"))
        if t.model_start - last_label < 0.04 * end:  # labels this close would print over each other
            continue
        last_label = t.model_start
        fig.add_annotation(x=t.model_start, y=1, xref=xref, yref=f"{yref} domain", text=f"T{t.turn + 1}",
                           showarrow=False, xanchor="left", yanchor="bottom", font=dict(size=10, color="#444"))
    if highlight is not None and 0 <= highlight < len(turns):
        t = turns[highlight]
        x1 = turns[highlight + 1].model_start if highlight + 1 < len(turns) else max(end, t.tools_end)
        fig.add_shape(type="rect", x0=t.model_start, x1=x1, y0=0, y1=1, xref=xref, yref=f"{yref} domain",
                      fillcolor="rgba(230,159,0,0.15)", line=dict(width=0), layer="below", name="current-turn")
    fig.update_yaxes(categoryorder="array", categoryarray=lane_names, autorange="reversed", **kw)
    fig.update_xaxes(title_text="seconds since episode start" if unit == "s" else "turn", **kw)


def timeline_figure(trace: Trace, highlight: int | None = None, title: str | None = None) -> go.Figure:
    """A Gantt chart of one episode: a lane for the model and one per concurrent call slot, a bar
    per call coloured by tool (hatched when it failed), turn boundaries dotted and labelled
    T1, T2, …; ``highlight`` (0-based) shades one turn."""
    fig = go.Figure()
    _add_timeline(fig, trace, highlight=highlight)
    n_lanes = len({s.lane for s in call_spans(trace)[1]})
    fig.update_layout(
        barmode="overlay", height=170 + 34 * (n_lanes + 1),
        title=title if title is not None else
        f"{trace.policy} on {trace.task_id}: {trace.n_turns} turns, {trace.n_calls} calls",
        legend=_BOTTOM_LEGEND, margin=dict(t=60, b=100, r=20))
    fig.update_layout(height=fig.layout.height + 50)
    return fig


def compare_figure(trace_a: Trace, trace_b: Trace, titles: Sequence[str] | None = None) -> go.Figure:
    """Two timelines stacked on a shared time axis: which episode searched faster and how."""
    from plotly.subplots import make_subplots

    la = len({s.lane for s in call_spans(trace_a)[1]}) + 1
    lb = len({s.lane for s in call_spans(trace_b)[1]}) + 1
    units = {call_spans(trace_a)[2], call_spans(trace_b)[2]}
    titles = titles or [f"{t.policy}: {t.n_turns} turns, {t.n_calls} calls, {_fmt_s(t.wall_time)}"
                        for t in (trace_a, trace_b)]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=len(units) == 1, row_heights=[la, lb],
                        vertical_spacing=0.22, subplot_titles=list(titles))
    seen: set = set()
    _add_timeline(fig, trace_a, row=1, seen=seen)
    _add_timeline(fig, trace_b, row=2, seen=seen)
    if len(units) == 1:
        fig.update_xaxes(title_text="", row=1, col=1)
    for a in fig.layout.annotations[:2]:  # subplot titles: left, above the turn labels
        a.update(x=0, xanchor="left", yshift=18, font=dict(size=13))
    fig.update_layout(barmode="overlay", height=290 + 34 * (la + lb),
                      title=f"Task {trace_a.task_id}" if trace_a.task_id == trace_b.task_id else None,
                      legend=_BOTTOM_LEGEND, margin=dict(t=100, b=110, r=20))
    return fig


def file_figure(rows: Sequence[FileOverlay], title: str | None = None, max_files: int = 12) -> go.Figure:
    """Per file a band of three rows: gold lines, cited lines, viewed lines (grep matches as
    ticks on the viewed row). x = line number."""
    rows = list(rows)[:max_files]
    fig = go.Figure()
    layers = [("gold", -0.28), ("cited", 0.0), ("viewed", 0.28)]
    for name, off in layers:
        ys, bases, xs, hover = [], [], [], []
        for i, f in enumerate(rows):
            for a, b in getattr(f, name):
                ys.append(i + off)
                bases.append(a - 0.5)
                xs.append(b - a + 1)
                hover.append(f"{html.escape(f.path)}: {name} {a}-{b}")
        fig.add_trace(go.Bar(orientation="h", y=ys, base=bases, x=xs, width=0.24, name=name,
                             marker_color=LAYER_COLORS[name], hovertext=hover, hoverinfo="text"))
    gy, gx, gh = [], [], []
    for i, f in enumerate(rows):
        for n in f.grep:
            gy.append(i + 0.28)
            gx.append(n)
            gh.append(f"{html.escape(f.path)}: grep match at line {n}")
    fig.add_trace(go.Scatter(x=gx, y=gy, mode="markers", name="grep match", hovertext=gh, hoverinfo="text",
                             marker=dict(symbol="line-ns-open", size=11, color=LAYER_COLORS["grep"],
                                         line=dict(width=2))))
    labels = [short_path(f.path) + (" ★" if f.is_gold else "") for f in rows]
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=labels, autorange="reversed", range=None)
    fig.update_layout(barmode="overlay", height=190 + 46 * max(1, len(rows)), title=title,
                      xaxis_title="line (★ gold file)", legend=_BOTTOM_LEGEND,
                      margin=dict(l=20 + 7 * max([len(x) for x in labels] + [8]), t=50 if title else 20, b=100, r=20))
    return fig


# ---------------------------------------------------------------- widgets

def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _show(out, fig: go.Figure) -> None:
    """Render a figure into an Output widget (only inside a kernel: headless code keeps the
    figure objects and skips the rendering)."""
    if not _in_kernel():
        return
    from IPython.display import display

    with out:
        out.clear_output(wait=True)
        display(fig)


def _pre(text: str, max_chars: int = 6000, height: str = "16em") -> str:
    t = text if len(text) <= max_chars else text[:max_chars] + f"\n… ({len(text) - max_chars} more characters)"
    return (f"<pre style='white-space:pre-wrap;max-height:{height};overflow:auto;margin:2px 0;"
            f"font-size:12px;background:#f7f7f7;padding:4px'>{html.escape(t)}</pre>")


def _tokens(s: dict) -> str:
    if s["prompt_tokens"] is None and s["completion_tokens"] is None:
        return "tokens n/a"
    p = "?" if s["prompt_tokens"] is None else f"{s['prompt_tokens']:,}"
    c = "?" if s["completion_tokens"] is None else f"{s['completion_tokens']:,}"
    return f"tokens {p} in / {c} out"


def header_html(trace: Trace, i: int) -> str:
    """The turn header: turn number, parallel calls, model and tool latency, tokens, text."""
    s = turn_summary(trace, i)
    err = f" ({s['n_errors']} failed)" if s["n_errors"] else ""
    calls = {0: "no tool calls", 1: "1 call"}.get(s["n_calls"], f"{s['n_calls']} parallel calls")
    line = (f"<b>Turn {s['turn']} / {s['n_turns']}</b> · {calls}{err} · model {_fmt_s(s['model_s'])} · tools "
            f"{_fmt_s(s['tools_s'])} · {_tokens(s)}")
    body = _pre(s["text"] or "(no assistant text)", 2000, "8em")
    if s["is_last"]:
        rep = trace.report
        if rep is not None:
            files = ", ".join(f"{p} {rs}" for p, rs in rep.files.items()) or "(no files)"
            body += f"<div><b>Report</b> ({trace.stop_reason}): {html.escape(files)}</div>"
        else:
            body += f"<div><b>No report</b> — stopped: {html.escape(trace.stop_reason)}" \
                    f"{(' · ' + html.escape(trace.error)) if trace.error else ''}</div>"
    return f"<div class='fasbench-turn-header'>{line}{body}</div>"


def call_label(call: ToolCall, result: ToolResult | None, j: int) -> str:
    dur = f" · {_fmt_s(result.duration)}" if result is not None and result.started_at is not None else ""
    err = " · ERROR" if result is not None and result.is_error else ""
    args = call.arguments_json()
    return f"{j + 1}. {call.name}({args[:60]}{'…' if len(args) > 60 else ''}){dur}{err}"


def call_html(call: ToolCall, result: ToolResult | None) -> str:
    if isinstance(call.arguments, dict):
        args = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    else:
        args = f"(not a JSON object) {call.arguments}"
    out = result.output if result is not None else "(no result)"
    state = "error" if result is not None and result.is_error else "output"
    return (f"<div class='fasbench-call'><b>{html.escape(call.name)}</b> <code>{html.escape(call.id)}</code>"
            f"<div>arguments</div>{_pre(args, 3000, '8em')}<div>{state}</div>{_pre(out)}</div>")


def counts_html(rows: Sequence[FileOverlay], with_gold: bool, max_rows: int = 15) -> str:
    """The file panel's counts: one row per file (the first ``max_rows``; the totals cover all), paths
    shortened in the middle (the full path on hover), in a box that scrolls sideways instead of cutting."""
    cols = ["viewed", "grep", "cited"] + (["gold", "gold_viewed", "gold_cited"] if with_gold else [])
    heads = {"grep": "grep hits", "gold_viewed": "gold ∩ viewed", "gold_cited": "gold ∩ cited"}
    th = "".join(f"<th style='padding:0 6px'>{heads.get(c, c)}</th>" for c in cols)
    trs = []
    for f in rows[:max_rows]:
        c = f.counts()
        tds = "".join(f"<td style='text-align:right;padding:0 6px'>{c[k]}</td>" for k in cols)
        mark = " ★" if f.is_gold else ""
        trs.append(f"<tr><td title='{html.escape(f.path)}'><code>{html.escape(short_path(f.path, 44))}</code>{mark}"
                   f"</td>{tds}</tr>")
    if len(rows) > max_rows:
        trs.append(f"<tr><td colspan='{len(cols) + 1}'><i>… {len(rows) - max_rows} more files</i></td></tr>")
    t = overlay_totals(rows)
    tot = "".join(f"<td style='text-align:right;padding:0 6px'><b>{t[k]}</b></td>" for k in cols)
    share = ""
    if with_gold and t["gold"]:
        share = (f"<div>gold lines viewed: {t['gold_viewed_share']:.0%} · gold lines cited: "
                 f"{t['gold_cited_share']:.0%}</div>")
    return (f"<div class='fasbench-files' style='overflow-x:auto;max-width:100%'><table style='font-size:12px;"
            f"white-space:nowrap'><tr><th>file (lines)</th>{th}</tr>{''.join(trs)}<tr><td><b>total</b></td>{tot}</tr>"
            f"</table>{share}</div>")


class TraceReplay:
    """Step through one episode: timeline, turn header, Play + slider (linked in the browser),
    call inspector, file panel. Display it as the last expression of a cell (or
    ``display(replay)``); ``replay.widget`` is the ipywidgets box.

    State for code and tests: ``step`` (0-based turn shown), ``header.value``,
    ``calls.options``/``calls.value``, ``call_detail.value``, ``overlay`` (FileOverlay rows so
    far), ``timeline_fig`` and ``file_fig`` (plotly figures)."""

    def __init__(self, trace: Trace, task: Task | None = None, interval_ms: int = 1200,
                 xrange: tuple[float, float] | None = None, width: str | None = None):
        import ipywidgets as W

        if not isinstance(trace, Trace):
            raise TypeError(f"TraceReplay needs a fasbench.records.Trace, got {type(trace).__name__}")
        if task is not None and task.id != trace.task_id:
            raise ValueError(f"task {task.id!r} does not match the trace's task {trace.task_id!r}")
        self.trace, self.task, self.xrange = trace, task, xrange
        n = max(1, trace.n_turns)
        self.play = W.Play(value=1, min=1, max=n, step=1, interval=interval_ms, description="play",
                           disabled=trace.n_turns == 0)
        self.slider = W.IntSlider(value=1, min=1, max=n, step=1, description="turn",
                                  disabled=trace.n_turns == 0, continuous_update=False)
        self.slider.add_class("fasbench-turn-slider")
        self.link = W.jslink((self.play, "value"), (self.slider, "value"))
        self.header = W.HTML()
        self.timeline = W.Output()
        self.calls = W.Dropdown(description="call", layout=W.Layout(width="98%"))
        self.call_detail = W.HTML()
        self.files = W.Output()
        self.file_counts = W.HTML()
        title = (f"<h4 style='margin:4px 0'>{html.escape(trace.policy)} · {html.escape(trace.task_id)} · "
                 f"{html.escape(trace.toolset)} · {trace.n_turns} turns, {trace.n_calls} calls, "
                 f"{_fmt_s(trace.wall_time)} · stop: {html.escape(trace.stop_reason)}</h4>")
        if task is not None:
            title += f"<div style='font-size:12px'><b>Query:</b> {html.escape(task.query[:400])}</div>"
        call_box = W.VBox([W.HTML("<b>Calls of this turn</b>"), self.calls, self.call_detail],
                          layout=W.Layout(width="46%"))
        file_box = W.VBox([W.HTML("<b>Files: gold, cited, viewed so far</b>"), self.files, self.file_counts],
                          layout=W.Layout(width="54%"))
        self.widget = W.VBox([W.HTML(title), W.HBox([self.play, self.slider]), self.header, self.timeline,
                              W.HBox([call_box, file_box])], layout=W.Layout(width=width or "100%"))
        self.widget.add_class("fasbench-replay")
        self.step = -1
        self.slider.observe(self._on_slider, "value")
        self.calls.observe(self._on_call, "value")
        self.show_turn(0)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)

    def _on_slider(self, change) -> None:
        self.show_turn(change["new"] - 1)

    def _on_call(self, change) -> None:
        j = change["new"]
        if j is None or not self.trace.turns:
            self.call_detail.value = ""
            return
        t = self.trace.turns[self.step]
        self.call_detail.value = call_html(t.calls[j], _results_by_call(t)[j])

    def show_turn(self, i: int) -> None:
        """Show turn ``i`` (0-based) everywhere; the slider follows."""
        if not self.trace.turns:
            self.header.value = "<div class='fasbench-turn-header'><b>No turns</b> — the episode is empty.</div>"
            self.calls.options = []
            self.overlay = file_overlay(self.trace, self.task, upto_turn=-1)
            self.timeline_fig = timeline_figure(self.trace)
            self.file_fig = file_figure(self.overlay)
            return
        if not 0 <= i < self.trace.n_turns:
            raise IndexError(f"turn {i + 1} is outside 1..{self.trace.n_turns}")
        if i == self.step:
            return
        self.step = i
        if self.slider.value != i + 1:
            self.slider.value = i + 1  # re-enters show_turn, which returns at once
        t = self.trace.turns[i]
        self.header.value = header_html(self.trace, i)
        res = _results_by_call(t)
        self.calls.options = [(call_label(c, r, j), j) for j, (c, r) in enumerate(zip(t.calls, res))]
        self.calls.value = 0 if t.calls else None
        self._on_call({"new": self.calls.value})
        self.timeline_fig = timeline_figure(self.trace, highlight=i)
        if self.xrange is not None:
            self.timeline_fig.update_xaxes(range=list(self.xrange))
        self.overlay = file_overlay(self.trace, self.task, upto_turn=i)
        self.file_fig = file_figure(self.overlay)
        self.file_counts.value = counts_html(self.overlay, self.task is not None)
        _show(self.timeline, self.timeline_fig)
        _show(self.files, self.file_fig)


def compare_rows(traces: Sequence[Trace], task: Task | None = None, reward: str = "relace") -> list[dict]:
    """The comparison table: the episode row plus the overlay totals of each trace."""
    out = []
    for tr in traces:
        r = episode_row(tr, task, reward)
        r.update({f"lines_{k}": v for k, v in overlay_totals(file_overlay(tr, task)).items()})
        out.append(r)
    return out


class Comparison:
    """Two episodes of the same task side by side (see :func:`compare`)."""

    def __init__(self, trace_a: Trace, trace_b: Trace, task: Task | None = None, reward: str = "relace"):
        import ipywidgets as W

        if trace_a.task_id != trace_b.task_id:
            raise ValueError(f"compare needs two episodes of one task, got {trace_a.task_id!r} and "
                             f"{trace_b.task_id!r}")
        self.rows = compare_rows([trace_a, trace_b], task, reward)
        units = {call_spans(trace_a)[2], call_spans(trace_b)[2]}
        xr = None
        if len(units) == 1:  # one x range so that durations compare by eye
            ends = [max([s.end for s in call_spans(t)[1]] + [u.model_end for u in call_spans(t)[0]] + [0.0])
                    for t in (trace_a, trace_b)]
            xr = (0.0, max(ends) * 1.03 or 1.0)
        self.a = TraceReplay(trace_a, task, xrange=xr)
        self.b = TraceReplay(trace_b, task, xrange=xr)
        cols = [("policy", "{}"), ("reward", "{:.3f}"), ("turns", "{}"), ("calls", "{}"), ("max_parallel", "{}"),
                ("time_s", "{:.3f}"), ("lines_viewed", "{}"), ("lines_cited", "{}")]
        if task is not None:
            cols += [("lines_gold_viewed", "{}"), ("lines_gold_cited", "{}")]
        th = "".join(f"<th style='padding:0 8px'>{c}</th>" for c, _ in cols)
        trs = "".join("<tr>" + "".join(f"<td style='padding:0 8px'>{f.format(r[c])}</td>" for c, f in cols)
                      + "</tr>" for r in self.rows)
        self.table = W.HTML(f"<div style='overflow-x:auto;max-width:100%'><table class='fasbench-compare' "
                            f"style='font-size:12px;white-space:nowrap'><tr>{th}</tr>{trs}</table></div>")
        # one replay above the other, each at full width and on one time axis: side by side at half
        # width their labels collided, their legends scrolled and the table was cut off
        self.widget = W.VBox([self.table, self.a.widget, self.b.widget], layout=W.Layout(width="100%"))

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def compare(trace_a: Trace, trace_b: Trace, task: Task | None = None, reward: str = "relace") -> Comparison:
    """Two episodes of one task side by side: a summary table and two replays sharing a time axis."""
    return Comparison(trace_a, trace_b, task, reward)


class TraceBrowser:
    """A table of episodes (reward, turns, calls, time) with a filter and a sort order; selecting
    one opens its replay below. State: ``rows`` (all), ``shown`` (after filter and sort),
    ``table`` (the Select), ``replay`` (the open TraceReplay or None)."""

    def __init__(self, traces: Sequence[Trace], tasks=None, reward: str = "relace", rows_shown: int = 10):
        import ipywidgets as W

        traces = list(traces)
        if not traces:
            raise ValueError("TraceBrowser needs at least one trace")
        ids = [t.trace_id for t in traces]
        if len(set(ids)) != len(ids):
            raise ValueError("TraceBrowser: trace ids repeat; each episode needs its own trace_id")
        self.traces = {t.trace_id: t for t in traces}
        self.tasks = _task_map(tasks)
        self.rows = browser_rows(traces, self.tasks, reward)
        self.filter = W.Text(placeholder="filter: task, policy, stop reason …", description="filter")
        self.sort_by = W.Dropdown(options=list(SORT_KEYS), value="reward", description="sort by")
        self.descending = W.Checkbox(value=True, description="descending", indent=False)
        self.table = W.Select(rows=rows_shown, layout=W.Layout(width="100%"))
        self.table.add_class("fasbench-browser-table")
        self.count = W.HTML()
        self.detail = W.VBox()
        self.replay: TraceReplay | None = None
        head = self._fmt({"task_id": "task", "policy": "policy", "reward": "reward", "turns": "turns",
                          "calls": "calls", "time_s": "time s", "stop": "stop"}, header=True)
        style = ("<style>.fasbench-browser-table select{font-family:monospace;font-size:12px}</style>")
        self.widget = W.VBox([W.HTML(style), W.HBox([self.filter, self.sort_by, self.descending]), self.count,
                              W.HTML(f"<pre style='margin:0;font-size:12px'>{html.escape(head)}</pre>"),
                              self.table, self.detail])
        for w in (self.filter, self.sort_by, self.descending):
            w.observe(self._refresh, "value")
        self.table.observe(self._on_select, "value")
        self._refresh()

    @staticmethod
    def _fmt(r: dict, header: bool = False) -> str:
        def num(v, f):
            return str(v) if header else ("nan" if isinstance(v, float) and math.isnan(v) else f.format(v))

        return (f"{short_path(str(r['task_id']), 30):30} {short_path(str(r['policy']), 16):16} "
                f"{num(r['reward'], '{:.3f}'):>7} {num(r['turns'], '{}'):>5} {num(r['calls'], '{}'):>5} "
                f"{num(r['time_s'], '{:.2f}'):>7} {r['stop']}")

    def _refresh(self, change=None) -> None:
        self.shown = filter_sort(self.rows, self.filter.value, self.sort_by.value, self.descending.value)
        keep = self.table.value
        self.table.options = [(self._fmt(r), r["trace_id"]) for r in self.shown]
        ids = [r["trace_id"] for r in self.shown]
        self.table.value = keep if keep in ids else None
        self.count.value = f"<small>{len(self.shown)} of {len(self.rows)} episodes</small>"

    def _on_select(self, change) -> None:
        self.open(change["new"])

    def open(self, trace_id: str | None) -> TraceReplay | None:
        """Open the replay of one episode (None closes it)."""
        if trace_id is None:
            self.replay, self.detail.children = None, ()
            return None
        if trace_id not in self.traces:
            raise KeyError(f"no episode with trace_id {trace_id!r} in this browser")
        if self.replay is not None and self.replay.trace.trace_id == trace_id:
            return self.replay
        tr = self.traces[trace_id]
        self.replay = TraceReplay(tr, self.tasks.get(tr.task_id))
        self.detail.children = (self.replay.widget,)
        if self.table.value != trace_id:
            self.table.value = trace_id
        return self.replay

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


# ---------------------------------------------------------------- runs and demo episodes

def find_runs(pattern: str = "runs/**/traces.jsonl", base=None) -> list:
    """Trace files of evaluation runs under ``base`` (default: the repository), newest first."""
    from pathlib import Path

    from fasbench.paths import repo_root

    base = Path(base) if base is not None else repo_root()
    return sorted(base.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)


def load_run(path, reward: str = "relace") -> list[Trace]:
    """The traces of a run (``traces.jsonl`` or its directory). When ``summary.parquet`` sits
    beside it (``fasbench.evaluate``), each trace gets ``meta["reward"]`` from its
    ``reward_<name>`` column, so that the browser shows rewards without the tasks."""
    from pathlib import Path

    from fasbench.records import read_traces

    p = Path(path)
    p = p / "traces.jsonl" if p.is_dir() else p
    if not p.exists():
        raise FileNotFoundError(f"no trace file at {p}")
    traces = read_traces(p)
    summary = p.parent / "summary.parquet"
    col = "reward_" + re.sub(r"[^0-9a-zA-Z]+", "_", reward).strip("_")
    if summary.exists():
        import polars as pl

        df = pl.read_parquet(summary)
        if col in df.columns and "trace_id" in df.columns:
            by_id = dict(zip(df["trace_id"].to_list(), df[col].to_list()))
            for tr in traces:
                if tr.trace_id in by_id and by_id[tr.trace_id] is not None:
                    tr.meta.setdefault("reward", float(by_id[tr.trace_id]))
    return traces


def symbol_task(package: str, symbol: str) -> Task:
    """A search task on an installed pure-Python package: find where ``package.symbol`` is
    defined; gold = the lines of its definition (from ``inspect``), corpus = the package folder."""
    import importlib
    import inspect
    from pathlib import Path

    from fasbench.records import Gold

    mod = importlib.import_module(package)
    if not getattr(mod, "__file__", None):
        raise ValueError(f"package {package!r} has no source folder")
    root = Path(mod.__file__).parent
    if not hasattr(mod, symbol):
        raise ValueError(f"{package} has no attribute {symbol!r}")
    obj = inspect.unwrap(getattr(mod, symbol))
    src = Path(inspect.getsourcefile(obj)).resolve()
    try:
        rel = src.relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"{package}.{symbol} is defined outside {root} ({src})") from None
    lines, start = inspect.getsourcelines(obj)
    gold = [start, start + len(lines) - 1]
    return Task(id=f"{package}-{symbol}", query=f"Where is {symbol} defined in {package}, and what does it do?",
                repo=package, root=str(root), gold=Gold(edited={rel: [gold]}, source="manual"))


def demo_turns(task: Task, toolset: str = "relace", parallel: bool = True) -> list[dict]:
    """A scripted search for the symbol of a :func:`symbol_task`: two searches, a directory
    listing and a first look at the file, then a read around the definition and a search for
    imports, then the report. ``parallel=True`` batches them (3 turns); ``False`` makes one call
    per turn (7 turns): the same work, the same answer, different latency."""
    (path, ranges), = task.gold.edited.items()
    a, b = ranges[0]
    symbol = task.id.split("-", 1)[1]
    if toolset == "relace":
        t1 = [{"name": "grep_search", "arguments": {"query": rf"(class|def) {symbol}\b"}},
              {"name": "grep_search", "arguments": {"query": rf"{symbol}\(", "include_pattern": "*.py"}},
              {"name": "view_directory", "arguments": {"path": "."}},
              {"name": "view_file", "arguments": {"path": path, "view_range": [1, 40]}}]
        t2 = [{"name": "view_file", "arguments": {"path": path, "view_range": [max(1, a - 5), b + 5]}},
              {"name": "grep_search", "arguments": {"query": rf"import .*\b{symbol}\b"}}]
        report = {"text": "Report the definition.", "calls": [{"name": "report_back", "arguments": {
            "explanation": f"{symbol} is defined in {path}.", "files": {path: [[a, b]]}}}]}
    elif toolset == "fastcontext":
        t1 = [{"name": "Grep", "arguments": {"pattern": rf"(class|def) {symbol}\b", "output_mode": "content"}},
              {"name": "Grep", "arguments": {"pattern": rf"{symbol}\(", "glob": "*.py", "output_mode": "content"}},
              {"name": "Glob", "arguments": {"pattern": "**/*.py"}},
              {"name": "Read", "arguments": {"path": path, "offset": 1, "limit": 40}}]
        t2 = [{"name": "Read", "arguments": {"path": path, "offset": max(1, a - 5), "limit": b - a + 11}},
              {"name": "Grep", "arguments": {"pattern": rf"import .*\b{symbol}\b", "output_mode": "content"}}]
        report = {"text": f"<final_answer>\n{path}:{a}-{b} (definition of {symbol})\n</final_answer>"}
    else:
        raise ValueError(f"unknown tool set {toolset!r}; choose relace or fastcontext")
    if parallel:
        return [{"text": f"Search for {symbol} in parallel: definition, uses, layout, file head.", "calls": t1},
                {"text": "Read the definition and find its imports.", "calls": t2}, report]
    return [{"text": f"Step {i + 1}: {c['name']}.", "calls": [c]} for i, c in enumerate(t1 + t2)] + [report]


def demo_episode(task: Task, toolset: str = "relace", parallel: bool = True):
    """Run the scripted search of :func:`demo_turns` through the real harness."""
    from fasbench.harness import Limits, run_episode
    from fasbench.policies.scripted import ScriptedPolicy

    turns = demo_turns(task, toolset, parallel)
    policy = ScriptedPolicy(turns, name=f"scripted-{'parallel' if parallel else 'sequential'}")
    return run_episode(task, policy, toolset, Limits(max_turns=len(turns) + 1))
