"""The HTML panels of the replay widgets: the title, the turn header, the call list and inspector, the
file panel's counts."""

from __future__ import annotations

import html
import json
from typing import Sequence

from fasbench.linerefs import short_path
from fasbench.records import Task, ToolCall, ToolResult, Trace
from fasbench.replay.overlay import FileOverlay, overlay_totals
from fasbench.replay.timeline import fmt_s, turn_summary


def pre(text: str, max_chars: int = 6000, height: str = "16em") -> str:
    t = text if len(text) <= max_chars else text[:max_chars] + f"\n… ({len(text) - max_chars} more characters)"
    return (f"<pre style='white-space:pre-wrap;max-height:{height};overflow:auto;margin:2px 0;"
            f"font-size:12px;background:#f7f7f7;padding:4px'>{html.escape(t)}</pre>")


def _tokens(s: dict) -> str:
    if s["prompt_tokens"] is None and s["completion_tokens"] is None:
        return "tokens n/a"
    p = "?" if s["prompt_tokens"] is None else f"{s['prompt_tokens']:,}"
    c = "?" if s["completion_tokens"] is None else f"{s['completion_tokens']:,}"
    return f"tokens {p} in / {c} out"


def title_html(trace: Trace, task: Task | None = None) -> str:
    """The replay's title: policy, task, tool set, turns, calls, time, stop reason, and the query."""
    out = (f"<h4 style='margin:4px 0'>{html.escape(trace.policy)} · {html.escape(trace.task_id)} · "
           f"{html.escape(trace.toolset)} · {trace.n_turns} turns, {trace.n_calls} calls, "
           f"{fmt_s(trace.wall_time)} · stop: {html.escape(trace.stop_reason)}</h4>")
    if task is not None:
        out += f"<div style='font-size:12px'><b>Query:</b> {html.escape(task.query[:400])}</div>"
    return out


def header_html(trace: Trace, i: int) -> str:
    """The turn header: turn number, parallel calls, model and tool latency, tokens, text."""
    s = turn_summary(trace, i)
    err = f" ({s['n_errors']} failed)" if s["n_errors"] else ""
    calls = {0: "no tool calls", 1: "1 call"}.get(s["n_calls"], f"{s['n_calls']} parallel calls")
    line = (f"<b>Turn {s['turn']} / {s['n_turns']}</b> · {calls}{err} · model {fmt_s(s['model_s'])} · tools "
            f"{fmt_s(s['tool_s'])} · {_tokens(s)}")
    body = pre(s["text"] or "(no assistant text)", 2000, "8em")
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
    dur = f" · {fmt_s(result.duration)}" if result is not None and result.started_at is not None else ""
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
            f"<div>arguments</div>{pre(args, 3000, '8em')}<div>{state}</div>{pre(out)}</div>")


def counts_html(rows: Sequence[FileOverlay], with_gold: bool, max_rows: int = 15) -> str:
    """The file panel's counts: one row per file (the first ``max_rows``; the totals cover all), paths
    shortened in the middle (the full path on hover), in a box that scrolls sideways instead of cutting."""
    cols = ["viewed", "grep", "cited", "cited_unseen"] + (["gold", "gold_viewed", "gold_cited"] if with_gold else [])
    heads = {"grep": "grep hits", "gold_viewed": "gold ∩ viewed", "gold_cited": "gold ∩ cited",
             "cited_unseen": "cited, never shown"}
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
