"""The replay's timeline: every tool call of an episode as a span on a lane, one lane per concurrent
call slot (greedy interval partitioning), x = seconds since the episode started, or the turn index
when the trace has no timings (:func:`call_spans`); the same bars in one equal-width column per turn,
time scaled within each turn only (:func:`turn_columns`: what the replay and its figure draw); and what
the turn header shows of a turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fasbench.records import ToolResult, Trace, Turn


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


def results_by_call(turn: Turn) -> list[ToolResult | None]:
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
            res = results_by_call(t)
            ms, me = t.model_started_at - t0, t.model_ended_at - t0
            ts = (t.tools_started_at - t0) if t.tools_started_at is not None else me
            te = (t.tools_ended_at - t0) if t.tools_ended_at is not None else ts
            turns.append(TurnSpan(t.index, ms, me, ts, te, len(t.calls)))
            for j, (c, r) in enumerate(zip(t.calls, res)):
                s = (r.started_at - t0) if r is not None else ts
                e = (r.ended_at - t0) if r is not None else ts
                spans.append(
                    CallSpan(t.index, j, c.id, c.name, s, max(s, e), 0, bool(r and r.is_error), c.arguments_json())
                )
        for sp, lane in zip(spans, assign_lanes([(sp.start, sp.end) for sp in spans])):
            sp.lane = lane
        return turns, spans, "s"
    for i, t in enumerate(trace.turns):
        res = results_by_call(t)
        turns.append(TurnSpan(t.index, i, i + 0.3, i + 0.35, i + 0.95, len(t.calls)))
        for j, (c, r) in enumerate(zip(t.calls, res)):
            spans.append(
                CallSpan(t.index, j, c.id, c.name, i + 0.35, i + 0.95, j, bool(r and r.is_error), c.arguments_json())
            )
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
        "tool_s": t.tool_time,
        "prompt_tokens": t.prompt_tokens,
        "completion_tokens": t.completion_tokens,
        "is_last": i == len(trace.turns) - 1,
    }


def fmt_s(x: float) -> str:
    """A duration for labels: milliseconds below a second."""
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


@dataclass
class Placed:
    """A bar in its turn's column of the turn-scaled timeline: ``row`` 0 is the model phase, row
    ``k`` the call slot ``k`` (the call's lane + 1); ``left`` and ``width`` are fractions of the column."""

    turn: int
    row: int
    left: float
    width: float
    call: CallSpan | None  # None: the model phase


def turn_columns(trace: Trace, min_width: float = 0.04) -> tuple[list[list[Placed]], int]:
    """The timeline as one equal-width column per turn: inside a column, x is the time since the
    turn's model phase started over the turn's duration (the model and its calls), so that a short
    late turn is as wide as a long first one and its label stays readable. Bars are at least
    ``min_width`` of the column wide (the hover, the inspector show the real duration). Returns the
    bars of each turn and the number of rows (the model's and one per concurrent call slot)."""
    turns, spans, _ = call_spans(trace)
    n_rows = 1 + max((s.lane + 1 for s in spans), default=0)
    cols: list[list[Placed]] = []
    for k, t in enumerate(turns):
        ss = [s for s in spans if s.turn == t.turn]
        start = t.model_start
        end = max([t.model_end, t.tools_end] + [s.end for s in ss])
        dur = (end - start) or 1.0

        def place(a: float, b: float, start: float = start, dur: float = dur) -> tuple[float, float]:
            w = min(1.0, max((b - a) / dur, min_width))
            return min(max(0.0, (a - start) / dur), 1.0 - w), w

        col = [Placed(k, 0, *place(t.model_start, t.model_end), None)]
        col += [Placed(k, s.lane + 1, *place(s.start, s.end), s) for s in ss]
        cols.append(col)
    return cols, n_rows
