"""The replay as HTML that needs no kernel: what a page exported from an executed notebook (``python -m
fasbench.mainjob.report``) shows instead of the widgets, whose Python callbacks cannot run there. Every turn is
in the page; a CSS-only switcher (radio inputs and their labels, no script) shows one turn at a time:
click a turn label, or a bar of the timeline (that turn, with that call in the inspector). The widgets
hand it to Jupyter beside their live view (``text/html`` in their display bundle); Jupyter shows the
live view, the report this (see ``fasbench.mainjob.report``: an output carrying both keeps only this one).
"""

from __future__ import annotations

import itertools
import math
import uuid
from collections.abc import Sequence

from fasbench.base.markup import Markup, html, join
from fasbench.records import Task, Trace
from fasbench.replay.linerefs import short_path
from fasbench.replay.overlay import file_overlay
from fasbench.replay.panels import call_html, call_label, counts_html, header_html, title_html
from fasbench.replay.seen import call_kind
from fasbench.replay.timeline import fmt_s, results_by_call, turn_columns
from fasbench.stats.figures import kind_color

STATIC_CLASS = "fasbench-static"  # the marker fasbench.mainjob.report looks for
MODEL_COLOR = "#BBBBBB"
NOTE = (
    "<div class='fasbench-static-note' style='font-size:12px;color:#555;margin:2px 0'><i>Static snapshot "
    "(no kernel): click a turn label or a bar to see that turn and call; run the notebook for the live "
    "replay (Play, slider, file figure).</i></div>"
)
_CSS = """<style>
#{u} .fbs-turn, #{u} .fbs-call {{display:none}}
#{u} .fbs-bar, #{u} .fbs-tlabel, #{u} .fbs-clabel {{cursor:pointer}}
#{u} .fbs-bar {{position:absolute;top:2px;height:14px;border:1px solid #222;box-sizing:border-box;min-width:3px}}
#{u} .fbs-err {{background-image:repeating-linear-gradient(45deg,#fff 0 2px,transparent 2px 5px)}}
#{u} .fbs-tlabel {{display:block;text-align:center;font-size:11px;height:18px}}
#{u} .fbs-clabel {{display:block;font-family:monospace;font-size:12px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis}}
#{u} .fbs-clabel:hover, #{u} .fbs-tlabel:hover {{text-decoration:underline}}
{rules}
</style>"""


def _turn_rules(u: str, key: str, i: int, j: int) -> str:
    sel = f"#{u}-{key}:checked ~ .fbs-body"
    out = [
        f"{sel} .fbs-turn-{i} {{display:block}}",
        f"{sel} .fbs-col-{i} {{background:rgba(120,120,120,.15)}}",
        f"{sel} .fbs-col-{i} .fbs-tlabel {{font-weight:bold}}",
    ]
    if j >= 0:
        out += [
            f"{sel} .fbs-call-{i}-{j} {{display:block}}",
            f"{sel} .fbs-bar-{i}-{j} {{outline:2px solid #000}}",
            f"{sel} .fbs-clabel-{i}-{j} {{font-weight:bold}}",
        ]
    return "\n".join(out)


def _timeline(trace: Trace, u: str, key) -> Markup:
    cols, n_rows = turn_columns(trace)
    names = ["", "model"] + [f"slot {k}" for k in range(1, n_rows)]
    lanes = join(html("<div style='height:18px;font-size:11px'>{}</div>", n) for n in names)
    parts = [html("<div style='width:52px;min-width:52px'>{}</div>", lanes)]
    for i, col in enumerate(cols):
        rows = []
        for r in range(n_rows):
            bars = []
            for b in (b for b in col if b.row == r):
                pos = f"left:{100 * b.left:.2f}%;width:{100 * b.width:.2f}%"
                if b.call is None:
                    tip = f"turn {i + 1}: model {fmt_s(trace.turns[i].model_time)}"
                    bars.append(
                        html(
                            "<label for='{}-{}' class='fbs-bar' title='{}' style='{};background-color:{}'></label>",
                            u,
                            key(i, -1),
                            tip,
                            pos,
                            MODEL_COLOR,
                        )
                    )
                    continue
                c = b.call
                kind = call_kind(trace.toolset, c.tool)
                tip = (
                    f"turn {i + 1}, call {c.index + 1}: {c.tool}{f' ({kind})' if kind else ''}"
                    f"{' · ERROR' if c.is_error else ''} · {c.arguments[:100]}"
                )
                bars.append(
                    html(
                        "<label for='{}-{}' class='fbs-bar fbs-bar-{}-{}{}' title='{}' "
                        "style='{};background-color:{}'></label>",
                        u,
                        key(i, c.index),
                        i,
                        c.index,
                        " fbs-err" if c.is_error else "",
                        tip,
                        pos,
                        kind_color(kind),
                    )
                )
            rows.append(html("<div style='position:relative;height:18px'>{}</div>", join(bars)))
        parts.append(
            html(
                "<div class='fbs-col fbs-col-{0}' style='flex:1 1 0;min-width:0;border-left:1px dotted #888;"
                "padding:0 2px'><label for='{1}-{2}' class='fbs-tlabel'>T{3}</label>{4}</div>",
                i,
                u,
                key(i, -1),
                i + 1,
                join(rows),
            )
        )
    return html("<div class='fbs-timeline' style='display:flex;width:100%;margin:4px 0'>{}</div>", join(parts))


def replay_html(trace: Trace, task: Task | None = None) -> Markup:
    """One episode, every turn: title, timeline (one column per turn, bars coloured by kind), and per
    turn its header, its calls (arguments and output) and the files viewed, cited and gold so far."""
    u = f"fbs{uuid.uuid4().hex[:10]}"
    keys: dict[tuple[int, int], str] = {}
    first: dict[int, str] = {}
    for i, t in enumerate(trace.turns):
        for j in range(len(t.calls)) if t.calls else [-1]:
            keys[(i, j)] = f"k{len(keys)}"
        first[i] = keys[(i, 0 if t.calls else -1)]

    def key(i: int, j: int) -> str:
        return first[i] if j < 0 else keys[(i, j)]

    rules = "\n".join(_turn_rules(u, k, i, j) for (i, j), k in keys.items())
    radios = join(
        html(
            "<input type='radio' name='{0}' id='{0}-{1}' style='display:none'{2}>",
            u,
            k,
            html(" checked") if n == 0 else "",
        )
        for n, k in enumerate(keys.values())
    )
    turns = []
    for i, t in enumerate(trace.turns):
        res = results_by_call(t)
        labels = join(
            html(
                "<label for='{}-{}' class='fbs-clabel fbs-clabel-{}-{}' title='{}'>{}</label>",
                u,
                keys[(i, j)],
                i,
                j,
                call_label(c, r, j),
                call_label(c, r, j),
            )
            for j, (c, r) in enumerate(zip(t.calls, res))
        )
        details = join(
            html("<div class='fbs-call fbs-call-{}-{}'>{}</div>", i, j, call_html(c, r))
            for j, (c, r) in enumerate(zip(t.calls, res))
        )
        counts = counts_html(file_overlay(trace, task, upto_turn=i), task is not None)
        turns.append(
            html(
                "<div class='fbs-turn fbs-turn-{}'>{}<div style='display:flex;gap:8px'>"
                "<div style='width:46%;min-width:0'><b>Calls of this turn</b>{}{}</div>"
                "<div style='width:54%;min-width:0'><b>Files: gold, cited, viewed so far</b>{}</div></div></div>",
                i,
                header_html(trace, i),
                labels or html("<div>(none)</div>"),
                details,
                counts,
            )
        )
    body = title_html(trace, task) + html(NOTE)
    body += (
        _timeline(trace, u, key) + join(turns)
        if trace.turns
        else html("<div><b>No turns</b> — the episode is empty.</div>")
    )
    return html(
        "<div class='{}' id='{}'>{}{}<div class='fbs-body'>{}</div></div>",
        STATIC_CLASS + " fasbench-static-replay",
        u,
        html(_CSS, u=u, rules=rules),
        radios,
        body,
    )


def display_bundle(widget, static: str, include=None, exclude=None) -> dict:
    """An ipywidget's display bundle plus ``static`` as ``text/html``: Jupyter shows the live widget
    (its view outranks HTML), a page read without a kernel (``fasbench.mainjob.report``) the static HTML."""
    data = widget._repr_mimebundle_(include=include, exclude=exclude)
    if isinstance(data, tuple):
        data = data[0]
    return {**data, "text/html": static}


def compare_html(table: Markup, a: Markup, b: Markup) -> Markup:
    """A comparison: its table and the two episodes' static replays (a plain string is escaped)."""
    return html("<div class='{} fasbench-static-compare'>{}{}{}</div>", STATIC_CLASS, table, a, b)


def browser_html(rows: Sequence[dict], replay: Markup = html(""), max_rows: int = 200) -> Markup:
    """An episode browser: its rows (filtered and sorted as shown) as a table, and the open replay."""

    def num(v, f):
        return "nan" if isinstance(v, float) and math.isnan(v) else f.format(v)

    cols = [
        ("task_id", "{}"),
        ("policy", "{}"),
        ("reward", "{:.3f}"),
        ("turns", "{}"),
        ("calls", "{}"),
        ("wall_s", "{:.2f}"),
        ("stop_reason", "{}"),
    ]
    th = join(html("<th style='padding:0 8px;text-align:left'>{}</th>", c) for c, _ in cols)
    trs = join(
        html(
            "<tr>{}</tr>",
            join(
                html("<td style='padding:0 8px' title='{}'>{}</td>", r[c], short_path(num(r[c], f), 40))
                for c, f in cols
            ),
        )
        for r in itertools.islice(rows, max_rows)
    )
    more = html("<div><i>… {} more episodes</i></div>", len(rows) - max_rows) if len(rows) > max_rows else ""
    note = html(
        "<div class='fasbench-static-note' style='font-size:12px;color:#555'><i>Static snapshot (no kernel): "
        "{} episodes; run the notebook to filter, sort and open any of them in the replay{}.</i></div>",
        len(rows),
        " (the one opened when it ran is below)" if replay else "",
    )
    return html(
        "<div class='{} fasbench-static-browser'>{}<div style='overflow:auto;max-height:24em'>"
        "<table style='font-size:12px;white-space:nowrap'><tr>{}</tr>{}</table></div>{}{}</div>",
        STATIC_CLASS,
        note,
        th,
        trs,
        more,
        replay,
    )


def runs_html(metrics: Markup, compare: Markup, episodes: Markup = html("")) -> Markup:
    """A runs browser: the picked runs' metrics and comparison, and the open run's episode browser."""
    note = html(
        "<div class='fasbench-static-note' style='font-size:12px;color:#555'><i>Static snapshot (no kernel): "
        "the runs picked when the notebook ran; run it to pick others.</i></div>"
    )
    return html(
        "<div class='{} fasbench-static-runs'>{}<b>Metrics</b>{}{}{}</div>",
        STATIC_CLASS,
        note,
        metrics,
        compare,
        episodes,
    )
