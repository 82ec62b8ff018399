"""The replay widgets (ipywidgets + plotly): :class:`TraceReplay` steps through one episode (timeline,
turn header, step slider and Play button linked in the browser, call inspector, file panel),
:func:`compare` shows two episodes of one task on one time axis, :class:`TraceBrowser` is a
filterable, sortable list of episodes that opens the replay of the selected one.

The logic they show is in headless modules: :mod:`~fasbench.replay.timeline` (spans, lanes),
:mod:`~fasbench.replay.overlay` (lines viewed, matched, cited, gold), :mod:`fasbench.evaluation.episodes` (the
one episode table: rows and columns), :mod:`~fasbench.replay.episode_filter` (the browser's filter and sort),
:mod:`~fasbench.replay.plots` (figures), :mod:`~fasbench.replay.panels` (HTML).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ipywidgets as W
import plotly.graph_objects as go
from IPython import get_ipython
from IPython.display import display

from fasbench.base.markup import Markup, html, join
from fasbench.evaluation.episodes import episode_row, episode_rows, task_map
from fasbench.records import Task, Trace
from fasbench.replay.episode_filter import SORT_KEYS, filter_sort
from fasbench.replay.linerefs import short_path
from fasbench.replay.overlay import file_overlay, overlay_totals
from fasbench.replay.panels import call_html, call_label, counts_html, header_html, title_html
from fasbench.replay.plots import file_figure, timeline_figure
from fasbench.replay.seen import call_kind
from fasbench.replay.static import MODEL_COLOR, browser_html, compare_html, display_bundle, replay_html
from fasbench.replay.timeline import fmt_s, results_by_call, turn_columns
from fasbench.stats.figures import kind_color


def _in_kernel() -> bool:
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


TIMELINE_CSS = """<style>
.fasbench-timeline .fasbench-bar{padding:0;border:1px solid #222;border-radius:0;min-width:3px}
.fasbench-timeline .fasbench-bar-error{background-image:repeating-linear-gradient(45deg,#fff 0 2px,transparent 2px 5px)}
.fasbench-timeline .fasbench-turn-label{padding:0;font-size:11px;background:none;border:none;box-shadow:none}
.fasbench-timeline .fasbench-turn-col{border-left:1px dotted #888}
.fasbench-timeline .fasbench-current-turn{background:rgba(120,120,120,0.15)}
.fasbench-timeline .fasbench-current-turn .fasbench-turn-label{font-weight:bold}
</style>"""
ROW_H = "18px"


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

    def __init__(
        self,
        trace: Trace,
        task: Task | None = None,
        interval_ms: int = 1200,
        xrange: tuple[float, float] | None = None,
        width: str | None = None,
    ):
        if not isinstance(trace, Trace):
            raise TypeError(f"TraceReplay needs a fasbench.records.Trace, got {type(trace).__name__}")
        if task is not None and task.id != trace.task_id:
            raise ValueError(f"task {task.id!r} does not match the trace's task {trace.task_id!r}")
        self.trace, self.task, self.xrange = trace, task, xrange
        n = max(1, trace.n_turns)
        self.play = W.Play(
            value=1, min=1, max=n, step=1, interval=interval_ms, description="play", disabled=trace.n_turns == 0
        )
        self.slider = W.IntSlider(
            value=1, min=1, max=n, step=1, description="turn", disabled=trace.n_turns == 0, continuous_update=False
        )
        self.slider.add_class("fasbench-turn-slider")
        self.link = W.jslink((self.play, "value"), (self.slider, "value"))
        self.header = W.HTML()
        self.bars: dict[tuple[int, int], W.Button] = {}  # (turn, call) -> its bar on the timeline
        self.timeline = self._timeline()
        self.calls = W.Dropdown(description="call", layout=W.Layout(width="98%"))
        self.call_detail = W.HTML()
        self.files = W.Output()
        self.file_counts = W.HTML()
        title = title_html(trace, task)
        call_box = W.VBox(
            [W.HTML("<b>Calls of this turn</b>"), self.calls, self.call_detail], layout=W.Layout(width="46%")
        )
        file_box = W.VBox(
            [W.HTML("<b>Files: gold, cited, viewed so far</b>"), self.files, self.file_counts],
            layout=W.Layout(width="54%"),
        )
        self.widget = W.VBox(
            [W.HTML(title), W.HBox([self.play, self.slider]), self.header, self.timeline, W.HBox([call_box, file_box])],
            layout=W.Layout(width=width or "100%"),
        )
        self.widget.add_class("fasbench-replay")
        self.step = -1
        self.slider.observe(self._on_slider, "value")
        self.calls.observe(self._on_call, "value")
        self.show_turn(0)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.widget, self.static_html(), include, exclude)

    def static_html(self) -> Markup:
        """Every turn of the episode as HTML that needs no kernel (a CSS turn switcher, clickable
        bars): what a page exported without a kernel shows instead of the widget."""
        return replay_html(self.trace, self.task)

    def _timeline(self) -> W.Box:
        """The timeline: one equal-width column per turn (time scaled within the turn), a row for the
        model and one per concurrent call slot, a bar per call coloured by its kind; a turn label or a
        bar, clicked, shows that turn (and that call in the inspector)."""
        cols, n_rows = turn_columns(self.trace)
        if self.xrange is not None:  # a comparison: as many columns as the longer episode has turns
            cols = cols + [[] for _ in range(max(0, math.ceil(self.xrange[1]) - len(cols)))]
        names = ["", "model"] + [f"slot {k}" for k in range(1, n_rows)]
        lanes = W.VBox(
            [W.HTML(html("<small>{}</small>", n), layout=W.Layout(height=ROW_H, margin="0")) for n in names],
            layout=W.Layout(width="52px", min_width="52px"),
        )
        self.turn_cols: list[W.VBox] = []
        for k, col in enumerate(cols):
            label = W.Button(
                description=f"T{k + 1}" if col else "",
                tooltip=f"show turn {k + 1}" if col else "",
                disabled=not col,
                layout=W.Layout(width="100%", height=ROW_H, margin="0"),
            )
            label.add_class("fasbench-turn-label")
            label.on_click(lambda _b, k=k: self.show_turn(k))
            rows = []
            for r in range(n_rows):
                items, right = [], 0.0
                for b in sorted((b for b in col if b.row == r), key=lambda b: b.left):
                    items.append(self._bar(b, max(0.0, b.left - right)))
                    right = max(right, b.left + b.width)
                rows.append(W.HBox(items, layout=W.Layout(height=ROW_H, width="100%", margin="0", overflow="hidden")))
            c = W.VBox([label] + rows, layout=W.Layout(flex="1 1 0px", min_width="0", padding="0 2px"))
            c.add_class("fasbench-turn-col")
            self.turn_cols.append(c)
        box = W.HBox(
            [W.HTML(TIMELINE_CSS, layout=W.Layout(width="0", margin="0")), lanes] + self.turn_cols,
            layout=W.Layout(width="100%"),
        )
        box.add_class("fasbench-timeline")
        return box

    def _bar(self, b, gap: float) -> W.Button:
        lay = W.Layout(
            width=f"{100 * b.width:.2f}%", margin=f"2px 0 2px {100 * gap:.2f}%", height="14px", flex="0 0 auto"
        )
        if b.call is None:
            t = self.trace.turns[b.turn]
            btn = W.Button(
                tooltip=f"turn {b.turn + 1}: model {fmt_s(t.model_time)}",
                layout=lay,
                style=W.ButtonStyle(button_color=MODEL_COLOR),
            )
            btn.on_click(lambda _b, k=b.turn: self.show_turn(k))
        else:
            c = b.call
            kind = call_kind(self.trace.toolset, c.tool)
            btn = W.Button(
                tooltip=f"turn {b.turn + 1}, call {c.index + 1}: {c.tool}{f' ({kind})' if kind else ''}"
                f"{' · ERROR' if c.is_error else ''} · {c.arguments[:100]}",
                layout=lay,
                style=W.ButtonStyle(button_color=kind_color(kind)),
            )
            if c.is_error:
                btn.add_class("fasbench-bar-error")
            btn.on_click(lambda _b, k=b.turn, j=c.index: self.select_call(k, j))
            self.bars[(b.turn, c.index)] = btn
        btn.add_class("fasbench-bar")
        return btn

    def select_call(self, turn: int, j: int) -> None:
        """Show turn ``turn`` (0-based) with its call ``j`` in the inspector (a timeline bar's click)."""
        self.show_turn(turn)
        self.calls.value = j

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
        for k, c in enumerate(self.turn_cols):
            (c.add_class if k == i else c.remove_class)("fasbench-current-turn")
        self.overlay = file_overlay(self.trace, self.task, upto_turn=i)
        self.file_fig = file_figure(self.overlay)
        self.file_counts.value = counts_html(self.overlay, self.task is not None)
        _show(self.files, self.file_fig)


def compare_rows(traces: Sequence[Trace], task: Task | None = None, reward: str = "relace") -> list[dict]:
    """The comparison table: the episode-table row (``fasbench.evaluation.episodes.episode_row``, scored with
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
            raise ValueError(f"compare needs two episodes of one task, got {trace_a.task_id!r} and {trace_b.task_id!r}")
        self.rows = compare_rows([trace_a, trace_b], task, reward)
        xr = (0.0, float(max(trace_a.n_turns, trace_b.n_turns, 1)))  # turn columns of one width in both
        self.a = TraceReplay(trace_a, task, xrange=xr)
        self.b = TraceReplay(trace_b, task, xrange=xr)
        cols = [
            ("policy", "{}"),
            ("reward", "{:.3f}"),
            ("turns", "{}"),
            ("calls", "{}"),
            ("max_parallel", "{}"),
            ("wall_s", "{:.3f}"),
            ("lines_viewed", "{}"),
            ("lines_cited", "{}"),
            ("lines_cited_unseen", "{}"),
            ("calls_nothing_new", "{}"),
        ]
        if task is not None:
            cols += [("lines_gold_viewed", "{}"), ("lines_gold_cited", "{}")]
        th = join(html("<th style='padding:0 8px'>{}</th>", c) for c, _ in cols)
        trs = join(
            html("<tr>{}</tr>", join(html("<td style='padding:0 8px'>{}</td>", f.format(r[c])) for c, f in cols))
            for r in self.rows
        )  # a trace's policy string was put in the page unescaped (issue 36)
        self.table_html = html(
            "<div style='overflow-x:auto;max-width:100%'><table class='fasbench-compare' "
            "style='font-size:12px;white-space:nowrap'><tr>{}</tr>{}</table></div>",
            th,
            trs,
        )
        self.table = W.HTML(self.table_html)
        # one replay above the other, each at full width and on one time axis: side by side at half
        # width their labels collided, their legends scrolled and the table was cut off
        self.widget = W.VBox([self.table, self.a.widget, self.b.widget], layout=W.Layout(width="100%"))

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.widget, self.static_html(), include, exclude)

    def static_html(self) -> Markup:
        """The table and both episodes, every turn, as HTML that needs no kernel."""
        return compare_html(self.table_html, self.a.static_html(), self.b.static_html())


def compare(trace_a: Trace, trace_b: Trace, task: Task | None = None, reward: str = "relace") -> Comparison:
    """Two episodes of one task side by side: a summary table and two replays sharing a time axis."""
    return Comparison(trace_a, trace_b, task, reward)


class TraceBrowser:
    """A table of episodes (reward, turns, calls, wall time, stop reason) with a filter and a sort order;
    selecting one opens its replay below. State: ``rows`` (all: rows of the episode table,
    ``fasbench.evaluation.episodes.episode_rows``, scored with ``reward``), ``shown`` (after filter and sort),
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
        head = self._fmt(
            {
                "task_id": "task",
                "policy": "policy",
                "reward": "reward",
                "turns": "turns",
                "calls": "calls",
                "wall_s": "wall_s",
                "stop_reason": "stop_reason",
            },
            header=True,
        )
        style = "<style>.fasbench-browser-table select{font-family:monospace;font-size:12px}</style>"
        self.widget = W.VBox(
            [
                W.HTML(style),
                W.HBox([self.filter, self.sort_by, self.descending]),
                self.count,
                W.HTML(html("<pre style='margin:0;font-size:12px'>{}</pre>", head)),
                self.table,
                self.detail,
            ]
        )
        for w in (self.filter, self.sort_by, self.descending):
            w.observe(self._refresh, "value")
        self.table.observe(self._on_select, "value")
        self._refresh()

    @staticmethod
    def _fmt(r: dict, header: bool = False) -> str:
        def num(v, f):
            return str(v) if header else ("nan" if isinstance(v, float) and math.isnan(v) else f.format(v))

        return (
            f"{short_path(str(r['task_id']), 30):30} {short_path(str(r['policy']), 16):16} "
            f"{num(r['reward'], '{:.3f}'):>7} {num(r['turns'], '{}'):>5} {num(r['calls'], '{}'):>5} "
            f"{num(r['wall_s'], '{:.2f}'):>7} {r['stop_reason']}"
        )

    def _refresh(self, change=None) -> None:
        self.shown = filter_sort(self.rows, self.filter.value, self.sort_by.value, self.descending.value)
        keep = self.table.value
        self.table.options = [(self._fmt(r), r["trace_id"]) for r in self.shown]
        ids = [r["trace_id"] for r in self.shown]
        self.table.value = keep if keep in ids else None
        self.count.value = html("<small>{} of {} episodes</small>", len(self.shown), len(self.rows))

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

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display_bundle(self.widget, self.static_html(), include, exclude)

    def static_html(self) -> Markup:
        """The episodes (in the shown order) as a table, and the open replay, as HTML that needs no kernel."""
        return browser_html(self.shown, self.replay.static_html() if self.replay is not None else html(""))
