"""The HTML panels of the replay widgets: the title, the turn header, the call list and inspector, the
file panel's counts."""

from __future__ import annotations

import json
from collections.abc import Sequence

from fasbench.base.markup import Markup, html, join
from fasbench.records import Task, ToolCall, ToolResult, Trace
from fasbench.replay.linerefs import short_path
from fasbench.replay.overlay import FileOverlay, overlay_totals
from fasbench.replay.timeline import fmt_s, turn_summary


def pre(text: str, max_chars: int = 6000, height: str = "16em") -> Markup:
    t = text if len(text) <= max_chars else text[:max_chars] + f"\n… ({len(text) - max_chars} more characters)"
    return html(
        "<pre style='white-space:pre-wrap;max-height:{};overflow:auto;margin:2px 0;"
        "font-size:12px;background:#f7f7f7;padding:4px'>{}</pre>",
        height,
        t,
    )


def _tokens(s: dict) -> str:
    if s["prompt_tokens"] is None and s["completion_tokens"] is None:
        return "tokens n/a"
    p = "?" if s["prompt_tokens"] is None else f"{s['prompt_tokens']:,}"
    c = "?" if s["completion_tokens"] is None else f"{s['completion_tokens']:,}"
    return f"tokens {p} in / {c} out"


def title_html(trace: Trace, task: Task | None = None) -> Markup:
    """The replay's title: policy, task, tool set, turns, calls, time, stop reason, and the query."""
    out = html(
        "<h4 style='margin:4px 0'>{} · {} · {} · {} turns, {} calls, {} · stop: {}</h4>",
        trace.policy,
        trace.task_id,
        trace.toolset,
        trace.n_turns,
        trace.n_calls,
        fmt_s(trace.wall_time),
        trace.stop_reason,
    )
    if task is not None:
        out += html("<div style='font-size:12px'><b>Query:</b> {}</div>", task.query[:400])
    return out


def header_html(trace: Trace, i: int) -> Markup:
    """The turn header: turn number, parallel calls, model and tool latency, tokens, text."""
    s = turn_summary(trace, i)
    err = f" ({s['n_errors']} failed)" if s["n_errors"] else ""
    calls = {0: "no tool calls", 1: "1 call"}.get(s["n_calls"], f"{s['n_calls']} parallel calls")
    line = html(
        "<b>Turn {} / {}</b> · {}{} · model {} · tools {} · {}",
        s["turn"],
        s["n_turns"],
        calls,
        err,
        fmt_s(s["model_s"]),
        fmt_s(s["tool_s"]),
        _tokens(s),
    )
    body = pre(s["text"] or "(no assistant text)", 2000, "8em")
    if s["is_last"]:
        rep = trace.report
        if rep is not None:
            files = ", ".join(f"{p} {rs}" for p, rs in rep.files.items()) or "(no files)"
            body += html("<div><b>Report</b> ({}): {}</div>", trace.stop_reason, files)
        else:
            body += html(
                "<div><b>No report</b> — stopped: {}{}</div>",
                trace.stop_reason,
                (" · " + str(trace.error)) if trace.error else "",
            )
    return html("<div class='fasbench-turn-header'>{}{}</div>", line, body)


def call_label(call: ToolCall, result: ToolResult | None, j: int) -> str:
    dur = f" · {fmt_s(result.duration)}" if result is not None and result.started_at is not None else ""
    err = " · ERROR" if result is not None and result.is_error else ""
    args = call.arguments_json()
    return f"{j + 1}. {call.name}({args[:60]}{'…' if len(args) > 60 else ''}){dur}{err}"


def call_html(call: ToolCall, result: ToolResult | None) -> Markup:
    if isinstance(call.arguments, dict):
        args = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    else:
        args = f"(not a JSON object) {call.arguments}"
    out = result.output if result is not None else "(no result)"
    state = "error" if result is not None and result.is_error else "output"
    return html(
        "<div class='fasbench-call'><b>{}</b> <code>{}</code><div>arguments</div>{}<div>{}</div>{}</div>",
        call.name,
        call.id,
        pre(args, 3000, "8em"),
        state,
        pre(out),
    )


def counts_html(rows: Sequence[FileOverlay], with_gold: bool, max_rows: int = 15) -> Markup:
    """The file panel's counts: one row per file (the first ``max_rows``; the totals cover all), paths
    shortened in the middle (the full path on hover), in a box that scrolls sideways instead of cutting."""
    cols = ["viewed", "grep", "cited", "cited_unseen"] + (["gold", "gold_viewed", "gold_cited"] if with_gold else [])
    heads = {
        "grep": "grep hits",
        "gold_viewed": "gold ∩ viewed",
        "gold_cited": "gold ∩ cited",
        "cited_unseen": "cited, never shown",
    }
    th = join(html("<th style='padding:0 6px'>{}</th>", heads.get(c, c)) for c in cols)
    trs = []
    for f in rows[:max_rows]:
        c = f.counts()
        tds = join(html("<td style='text-align:right;padding:0 6px'>{}</td>", c[k]) for k in cols)
        trs.append(
            html(
                "<tr><td title='{}'><code>{}</code>{}</td>{}</tr>",
                f.path,
                short_path(f.path, 44),
                " ★" if f.is_gold else "",
                tds,
            )
        )
    if len(rows) > max_rows:
        trs.append(html("<tr><td colspan='{}'><i>… {} more files</i></td></tr>", len(cols) + 1, len(rows) - max_rows))
    t = overlay_totals(rows)
    tot = join(html("<td style='text-align:right;padding:0 6px'><b>{}</b></td>", t[k]) for k in cols)
    share = html("")
    if with_gold and t["gold"]:
        share = html(
            "<div>gold lines viewed: {:.0%} · gold lines cited: {:.0%}</div>",
            t["gold_viewed_share"],
            t["gold_cited_share"],
        )
    return html(
        "<div class='fasbench-files' style='overflow-x:auto;max-width:100%'><table style='font-size:12px;"
        "white-space:nowrap'><tr><th>file (lines)</th>{}</tr>{}<tr><td><b>total</b></td>{}</tr>"
        "</table>{}</div>",
        th,
        join(trs),
        tot,
        share,
    )
