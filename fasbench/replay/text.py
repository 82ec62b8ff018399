"""The replay without Jupyter: one episode as plain text for the terminal, or as one static,
self-contained HTML page (``fasbench replay RUN TASK [--html FILE]``).

Both render the same :func:`episode_view`: the run, the task and its gold; each turn with its text,
tokens and latency, and each of its (parallel) calls with its arguments and an excerpt of its
result; the report; the reward and its parts (``fasbench.episodes.episode_row``, scored against the
task's gold when the run has it, else the reward the trace recorded) and the per-file overlay of
lines viewed, matched, cited and gold (``fasbench.replay.overlay``)."""

from __future__ import annotations

import html
import json
import math
import textwrap

from fasbench.episodes import episode_row, part_columns, reward_column
from fasbench.process import PROCESS_COLUMNS
from fasbench.records import Task, Trace
from fasbench.replay.overlay import file_overlay, overlay_totals
from fasbench.replay.timeline import fmt_s, results_by_call, turn_summary

EXCERPT_LINES = 8  # lines of each result shown
ARG_CHARS = 300  # characters of one argument value shown


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _arg(v) -> str:
    return _cut(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False), ARG_CHARS)


def _excerpt(text: str, lines: int) -> tuple[list[str], int]:
    """The first ``lines`` lines of a result and how many more there are."""
    ls = text.splitlines()
    return ls[:lines], max(0, len(ls) - lines)


def _num(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def episode_view(trace: Trace, task: Task | None = None, reward: str = "relace", run: str = "",
                 lines: int = EXCERPT_LINES) -> dict:
    """Everything the text and HTML replays show of one episode, as plain values."""
    turns = []
    for i, t in enumerate(trace.turns):
        s = turn_summary(trace, i)
        calls = []
        for c, r in zip(t.calls, results_by_call(t)):
            args = ({k: _arg(v) for k, v in c.arguments.items()} if isinstance(c.arguments, dict)
                    else {"(not a JSON object)": _cut(str(c.arguments), ARG_CHARS)})
            out, more = _excerpt(r.output, lines) if r is not None else (["(no result)"], 0)
            calls.append({"id": c.id, "tool": c.name, "args": args, "excerpt": out, "more_lines": more,
                          "error": bool(r is not None and r.is_error),
                          "duration": fmt_s(r.duration) if r is not None and r.started_at is not None else ""})
        turns.append({**s, "calls": calls, "model": fmt_s(s["model_s"]), "tools_time": fmt_s(s["tool_s"])})
    row = episode_row(trace, task, reward, rewards=[reward], localization=False)
    parts = {c.removeprefix(reward_column(reward) + "__"): row[c] for c in part_columns(row, reward)}
    scores = {k: row[k] for k in ("file_precision", "file_recall", "file_f1", "line_precision", "line_recall",
                                  "line_f1") if row.get(k) is not None}
    rep = trace.report
    overlay = file_overlay(trace, task)
    process = {k: row[k] for k in PROCESS_COLUMNS}
    return {
        "run": run, "task_id": trace.task_id, "trace_id": trace.trace_id, "policy": trace.policy,
        "toolset": trace.toolset, "stop_reason": trace.stop_reason, "error": trace.error,
        "query": task.query if task is not None else None,
        "gold": {p: rs for p, rs in task.gold.edited.items()} if task is not None else None,
        "turns": turns,
        "report": None if rep is None else {"files": rep.files, "explanation": rep.explanation},
        "reward": {"name": reward, "value": row["reward"], "parts": parts,
                   "source": "scored against the gold" if task is not None else "recorded in the trace"},
        "scores": scores,
        "files": [f.counts() for f in overlay], "totals": overlay_totals(overlay), "process": process,
    }


def process_line(p: dict) -> str:
    """The episode's process measures (fasbench.process) in one sentence."""
    calls = p["search_calls"]
    out = [f"{calls} search calls ({p['calls_nothing_new']} showed nothing new, {p['duplicate_calls']} duplicates)"]
    if p["new_lines_per_call"] is not None:
        out.append(f"{_num(p['new_lines_per_call'])} new lines per call")
    if p["cited_lines"]:
        out.append(f"cited lines never shown {p['cited_lines_unseen']}/{p['cited_lines']}")
    if p["cited_paths_missing"]:
        out.append(f"{p['cited_paths_missing']} cited paths missing")
    if p["reported_without_calls"]:
        out.append("reported after zero calls")
    if p["calls_lost"]:
        out.append(f"{p['calls_lost']} calls lost in parsing")
    return "process: " + ", ".join(out)


def _calls_word(n: int) -> str:
    return {0: "no tool calls", 1: "1 call"}.get(n, f"{n} parallel calls")


def _tokens(t: dict) -> str:
    p, c = t["prompt_tokens"], t["completion_tokens"]
    return "tokens n/a" if p is None and c is None else f"tokens {_num(p)} in / {_num(c)} out"


def to_text(v: dict, width: int = 100) -> str:
    """The episode for the terminal (lines cut at ``width``)."""
    out: list[str] = []

    def line(s: str = "", indent: int = 0) -> None:
        out.append(_cut(" " * indent + s, width))

    def wrapped(s: str, indent: int, most: int) -> None:
        ls = textwrap.wrap(" ".join(s.split()), width - indent)
        for ln in ls[:most]:
            line(ln, indent)
        if len(ls) > most:
            out[-1] = _cut(out[-1], width - 1) + "…" if not out[-1].endswith("…") else out[-1]

    wrapped(f"run {v['run'] or '?'} · task {v['task_id']} · policy {v['policy']} · tool set {v['toolset']} · "
            f"{len(v['turns'])} turns · stop: {v['stop_reason']}", 0, 3)
    if v["query"] is not None:
        wrapped("query: " + v["query"], 2, 4)
    if v["gold"] is not None:
        line("gold: " + "; ".join(f"{p} {rs}" for p, rs in v["gold"].items()), 2)
    for t in v["turns"]:
        line()
        err = sum(c["error"] for c in t["calls"])
        line(f"Turn {t['turn']} / {t['n_turns']} · {_calls_word(t['n_calls'])}{f' ({err} failed)' if err else ''} · "
             f"model {t['model']} · tools {t['tools_time']} · {_tokens(t)}")
        if t["text"]:
            wrapped(t["text"], 2, 3)
        for j, c in enumerate(t["calls"], 1):
            tail = " · ".join(x for x in (c["duration"], "ERROR" if c["error"] else "") if x)
            line(f"{j}. {c['tool']}{' (' + tail + ')' if tail else ''}", 2)
            wrapped("  ".join(f"{k}={a}" for k, a in c["args"].items()), 6, 3)
            for ln in c["excerpt"]:
                line("│ " + ln.expandtabs(4), 6)
            if c["more_lines"]:
                line(f"│ … {c['more_lines']} more lines", 6)
    line()
    rep = v["report"]
    if rep is None:
        line(f"No report (stopped: {v['stop_reason']}{'; ' + v['error'] if v['error'] else ''})")
    else:
        line(f"Report ({v['stop_reason']}): {len(rep['files'])} files")
        for p, rs in rep["files"].items():
            line(f"{p} {rs}", 2)
        if rep["explanation"]:
            wrapped(rep["explanation"], 2, 4)
    r = v["reward"]
    line(f"Reward {r['name']} = {_num(r['value'])} ({r['source']})")
    if r["parts"]:
        line("parts: " + ", ".join(f"{k} {_num(x)}" for k, x in r["parts"].items()), 2)
    if v["scores"]:
        wrapped(", ".join(f"{k.replace('_', ' ')} {_num(x)}" for k, x in v["scores"].items()), 2, 3)
    wrapped(process_line(v["process"]), 2, 3)
    if v["files"]:
        line()
        line("lines per file (* gold file):")
        line(f"{'file':<48} {'viewed':>7} {'grep':>5} {'cited':>6} {'unseen':>6} {'gold':>5} {'gold∩viewed':>12} "
             f"{'gold∩cited':>11}")
        for f in v["files"][:15]:
            mark = " *" if f["is_gold"] else ""
            line(f"{_cut(f['path'] + mark, 48):<48} {f['viewed']:>7} {f['grep']:>5} {f['cited']:>6} "
                 f"{f['cited_unseen']:>6} {f['gold']:>5} {f['gold_viewed']:>12} {f['gold_cited']:>11}")
        if len(v["files"]) > 15:
            line(f"… {len(v['files']) - 15} more files")
        tot = v["totals"]
        line(f"{'total':<48} {tot['viewed']:>7} {tot['grep']:>5} {tot['cited']:>6} {tot['cited_unseen']:>6} "
             f"{tot['gold']:>5} {tot['gold_viewed']:>12} {tot['gold_cited']:>11}")
    return "\n".join(out) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#222}
pre{white-space:pre-wrap;background:#f6f6f6;padding:4px 6px;margin:2px 0;font-size:12px}
.turn{border-top:1px solid #ccc;margin-top:1em;padding-top:.5em}.err{color:#b00}
td,th{padding:0 6px;text-align:right;font-size:13px}td:first-child,th:first-child{text-align:left}
details{margin:.3em 0 .3em 1em}summary{cursor:pointer;font-family:monospace;font-size:13px}"""


def to_html(v: dict) -> str:
    """The episode as one static HTML page: no script, no external file (every call is a <details>)."""
    e = html.escape
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(v['task_id'])} · {e(v['run'])}</title>"
         f"<style>{_CSS}</style></head><body>",
         f"<h2>{e(v['task_id'])}</h2><p>run <b>{e(v['run'] or '?')}</b> · policy <code>{e(v['policy'])}</code> · "
         f"tool set {e(v['toolset'])} · {len(v['turns'])} turns · stop: {e(v['stop_reason'])}</p>"]
    if v["query"] is not None:
        h.append(f"<details><summary>query</summary><pre>{e(v['query'])}</pre></details>")
    if v["gold"] is not None:
        h.append("<p>gold: " + "; ".join(f"<code>{e(p)}</code> {e(str(rs))}" for p, rs in v["gold"].items()) + "</p>")
    for t in v["turns"]:
        err = sum(c["error"] for c in t["calls"])
        h.append(f"<div class='turn'><b>Turn {t['turn']} / {t['n_turns']}</b> · {_calls_word(t['n_calls'])}"
                 f"{f' ({err} failed)' if err else ''} · model {e(t['model'])} · tools {e(t['tools_time'])} · "
                 f"{_tokens(t)}")
        if t["text"]:
            h.append(f"<pre>{e(t['text'])}</pre>")
        for j, c in enumerate(t["calls"], 1):
            args = ", ".join(f"{k}={a}" for k, a in c["args"].items())
            cls = " class='err'" if c["error"] else ""
            more = f"\n… {c['more_lines']} more lines" if c["more_lines"] else ""
            h.append(f"<details><summary{cls}>{j}. {e(c['tool'])}({e(_cut(args, 160))}) {e(c['duration'])}"
                     f"{' ERROR' if c['error'] else ''}</summary><pre>"
                     + e("\n".join(f"{k}: {a}" for k, a in c["args"].items())) + "</pre><pre>"
                     + e("\n".join(c["excerpt"]) + more) + "</pre></details>")
        h.append("</div>")
    rep = v["report"]
    h.append("<div class='turn'>")
    if rep is None:
        h.append(f"<p><b>No report</b> (stopped: {e(v['stop_reason'])}{'; ' + e(v['error']) if v['error'] else ''})</p>")
    else:
        h.append(f"<p><b>Report</b> ({e(v['stop_reason'])}):</p><ul>"
                 + "".join(f"<li><code>{e(p)}</code> {e(str(rs))}</li>" for p, rs in rep["files"].items()) + "</ul>")
        if rep["explanation"]:
            h.append(f"<pre>{e(rep['explanation'])}</pre>")
    r = v["reward"]
    h.append(f"<p><b>Reward {e(r['name'])} = {_num(r['value'])}</b> ({e(r['source'])})"
             + (": " + ", ".join(f"{e(k)} {_num(x)}" for k, x in r["parts"].items()) if r["parts"] else "") + "</p>")
    if v["scores"]:
        h.append("<p>" + ", ".join(f"{e(k.replace('_', ' '))} {_num(x)}" for k, x in v["scores"].items()) + "</p>")
    h.append(f"<p>{e(process_line(v['process']))}</p>")
    if v["files"]:
        cols = ("viewed", "grep", "cited", "cited_unseen", "gold", "gold_viewed", "gold_cited")
        heads = ("viewed", "grep hits", "cited", "cited, never shown", "gold", "gold ∩ viewed", "gold ∩ cited")
        h.append("<table><tr><th>file (lines; ★ gold)</th>" + "".join(f"<th>{x}</th>" for x in heads) + "</tr>")
        for f in v["files"]:
            h.append(f"<tr><td><code>{e(f['path'])}</code>{' ★' if f['is_gold'] else ''}</td>"
                     + "".join(f"<td>{f[k]}</td>" for k in cols) + "</tr>")
        tot = v["totals"]
        h.append("<tr><td><b>total</b></td>" + "".join(f"<td><b>{tot[k]}</b></td>" for k in cols) + "</tr></table>")
    h.append("</div></body></html>")
    return "\n".join(h) + "\n"
