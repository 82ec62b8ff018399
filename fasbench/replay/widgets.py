"""The replay widgets (ipywidgets + plotly): :class:`TraceReplay` steps through one episode (timeline,
turn header, step slider and Play button linked in the browser, call inspector, file panel),
:func:`compare` shows two episodes of one task on one time axis, :class:`TraceBrowser` is a
filterable, sortable list of episodes that opens the replay of the selected one.

The logic they show is in headless modules: :mod:`~fasbench.replay.timeline` (spans, lanes),
:mod:`~fasbench.replay.overlay` (lines viewed, matched, cited, gold), :mod:`fasbench.episodes` (the
one episode table: rows and columns), :mod:`~fasbench.replay.episodes` (the browser's filter and sort),
:mod:`~fasbench.replay.plots` (figures), :mod:`~fasbench.replay.panels` (HTML).
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import ipywidgets as W
import plotly.graph_objects as go
from IPython import get_ipython
from IPython.display import display

from fasbench.episodes import episode_row, episode_rows, task_map
from fasbench.linerefs import short_path
from fasbench.records import Task, Trace
from fasbench.replay.episodes import SORT_KEYS, filter_sort
from fasbench.replay.overlay import file_overlay, overlay_totals
from fasbench.replay.panels import call_html, call_label, counts_html, header_html
from fasbench.replay.plots import file_figure, timeline_figure
from fasbench.replay.timeline import call_spans, fmt_s, results_by_call


def _in_kernel() -> bool:
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _show(out, fig: go.Figure) -> None:
    """Render a figure into an Output widget (only inside a kernel: headless code keeps the
    figure objects and skips the rendering)."""
    if not _in_kernel():
        return
    with out:
        out.clear_output(wait=True)
        display(fig)


class TraceReplay:
    """Step through one episode: timeline, turn header, Play + slider (linked in the browser),
    call inspector, file panel. Display it as the last expression of a cell (or
    ``display(replay)``); ``replay.widget`` is the ipywidgets box.

    State for code and tests: ``step`` (0-based turn shown), ``header.value``,
    ``calls.options``/``calls.value``, ``call_detail.value``, ``overlay`` (FileOverlay rows so
    far), ``timeline_fig`` and ``file_fig`` (plotly figures)."""

    def __init__(self, trace: Trace, task: Task | None = None, interval_ms: int = 1200,
                 xrange: tuple[float, float] | None = None, width: str | None = None):
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
                 f"{fmt_s(trace.wall_time)} · stop: {html.escape(trace.stop_reason)}</h4>")
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
        display(self.widget)

    def _on_slider(self, change) -> None:
        self.show_turn(change["new"] - 1)

    def _on_call(self, change) -> None:
        j = change["new"]
        if j is None or not self.trace.turns:
            self.call_detail.value = ""
            return
        t = self.trace.turns[self.step]
        self.call_detail.value = call_html(t.calls[j], results_by_call(t)[j])

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
        res = results_by_call(t)
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
    """The comparison table: the episode-table row (``fasbench.episodes.episode_row``, scored with
    ``reward`` only, no localization columns) plus the overlay totals (``lines_*``) of each trace."""
    out = []
    for tr in traces:
        r = episode_row(tr, task, reward, rewards=[reward], localization=False)
        r.update({f"lines_{k}": v for k, v in overlay_totals(file_overlay(tr, task)).items()})
        out.append(r)
    return out


class Comparison:
    """Two episodes of the same task side by side (see :func:`compare`)."""

    def __init__(self, trace_a: Trace, trace_b: Trace, task: Task | None = None, reward: str = "relace"):
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
                ("wall_s", "{:.3f}"), ("lines_viewed", "{}"), ("lines_cited", "{}")]
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
        display(self.widget)


def compare(trace_a: Trace, trace_b: Trace, task: Task | None = None, reward: str = "relace") -> Comparison:
    """Two episodes of one task side by side: a summary table and two replays sharing a time axis."""
    return Comparison(trace_a, trace_b, task, reward)


class TraceBrowser:
    """A table of episodes (reward, turns, calls, wall time, stop reason) with a filter and a sort order;
    selecting one opens its replay below. State: ``rows`` (all: rows of the episode table,
    ``fasbench.episodes.episode_rows``, scored with ``reward``), ``shown`` (after filter and sort),
    ``table`` (the Select), ``replay`` (the open TraceReplay or None)."""

    def __init__(self, traces: Sequence[Trace], tasks=None, reward: str = "relace", rows_shown: int = 10):
        traces = list(traces)
        if not traces:
            raise ValueError("TraceBrowser needs at least one trace")
        ids = [t.trace_id for t in traces]
        if len(set(ids)) != len(ids):
            raise ValueError("TraceBrowser: trace ids repeat; each episode needs its own trace_id")
        self.traces = {t.trace_id: t for t in traces}
        self.tasks = task_map(tasks)
        self.rows = episode_rows(traces, self.tasks, reward, rewards=[reward], localization=False)
        self.filter = W.Text(placeholder="filter: task, policy, stop reason …", description="filter")
        self.sort_by = W.Dropdown(options=list(SORT_KEYS), value="reward", description="sort by")
        self.descending = W.Checkbox(value=True, description="descending", indent=False)
        self.table = W.Select(rows=rows_shown, layout=W.Layout(width="100%"))
        self.table.add_class("fasbench-browser-table")
        self.count = W.HTML()
        self.detail = W.VBox()
        self.replay: TraceReplay | None = None
        head = self._fmt({"task_id": "task", "policy": "policy", "reward": "reward", "turns": "turns",
                          "calls": "calls", "wall_s": "wall_s", "stop_reason": "stop_reason"}, header=True)
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
                f"{num(r['wall_s'], '{:.2f}'):>7} {r['stop_reason']}")

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
        display(self.widget)
