"""The replay without Jupyter: one episode as plain text for the terminal, or as one static,
self-contained HTML page (``fasbench replay RUN TASK [--html FILE]``).

Both render the same :func:`episode_view`: the run, the task and its gold; each turn with its text,
tokens and latency, and each of its (parallel) calls with its arguments and an excerpt of its
result; the report; the reward and its parts (``fasbench.evaluation.episodes.episode_row``, scored against the
task's gold when the run has it, else the reward the trace recorded) and the per-file overlay of
lines viewed, matched, cited and gold (``fasbench.replay.overlay``)."""

from __future__ import annotations

import json
import math
import textwrap

from fasbench.base.errors import printable
from fasbench.base.markup import html, join
from fasbench.evaluation.episodes import episode_row, part_columns, reward_column
from fasbench.records import Task, Trace
from fasbench.replay.overlay import file_overlay, overlay_totals
from fasbench.replay.timeline import fmt_s, results_by_call, turn_summary
from fasbench.scoring.process import PROCESS_COLUMNS
from fasbench.stats.tables import text_table

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


def episode_view(
    trace: Trace, task: Task | None = None, reward: str = "relace", run: str = "", lines: int = EXCERPT_LINES
) -> dict:
    """Everything the text and HTML replays show of one episode, as plain values."""
    turns = []
    for i, t in enumerate(trace.turns):
        s = turn_summary(trace, i)
        calls = []
        for c, r in zip(t.calls, results_by_call(t)):
            args = (
                {k: _arg(v) for k, v in c.arguments.items()}
                if isinstance(c.arguments, dict)
                else {"(not a JSON object)": _cut(str(c.arguments), ARG_CHARS)}
            )
            out, more = _excerpt(r.output, lines) if r is not None else (["(no result)"], 0)
            calls.append(
                {
                    "id": c.id,
                    "tool": c.name,
                    "args": args,
                    "excerpt": out,
                    "more_lines": more,
                    "error": bool(r is not None and r.is_error),
                    "duration": fmt_s(r.duration) if r is not None and r.started_at is not None else "",
                }
            )
        turns.append({**s, "calls": calls, "model": fmt_s(s["model_s"]), "tools_time": fmt_s(s["tool_s"])})
    row = episode_row(trace, task, reward, rewards=[reward], localization=False)
    parts = {c.removeprefix(reward_column(reward) + "__"): row[c] for c in part_columns(row, reward)}
    scores = {
        k: row[k]
        for k in ("file_precision", "file_recall", "file_f1", "line_precision", "line_recall", "line_f1")
        if row.get(k) is not None
    }
    rep = trace.report
    overlay = file_overlay(trace, task)
    process = {k: row[k] for k in PROCESS_COLUMNS}
    return {
        "run": run,
        "task_id": trace.task_id,
        "trace_id": trace.trace_id,
        "policy": trace.policy,
        "toolset": trace.toolset,
        "stop_reason": trace.stop_reason,
        "error": trace.error,
        "query": task.query if task is not None else None,
        "gold": {p: rs for p, rs in task.gold.edited.items()} if task is not None else None,
        "turns": turns,
        "report": None if rep is None else {"files": rep.files, "explanation": rep.explanation},
        "reward": {
            "name": reward,
            "value": row["reward"],
            "parts": parts,
            "source": "scored against the gold" if task is not None else "recorded in the trace",
        },
        "scores": scores,
        "files": [f.counts() for f in overlay],
        "totals": overlay_totals(overlay),
        "process": process,
    }


def process_line(p: dict) -> str:
    """The episode's process measures (fasbench.scoring.process) in one sentence."""
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

    def line(s: str = "", indent: int = 0) -> None:  # printable: a trace's text never reaches the terminal raw
        out.append(_cut(" " * indent + printable(s), width))

    def wrapped(s: str, indent: int, most: int) -> None:
        ls = textwrap.wrap(" ".join(s.split()), width - indent)
        for ln in ls[:most]:
            line(ln, indent)
        if len(ls) > most:
            out[-1] = _cut(out[-1], width - 1) + "…" if not out[-1].endswith("…") else out[-1]

    wrapped(
        f"run {v['run'] or '?'} · task {v['task_id']} · policy {v['policy']} · tool set {v['toolset']} · "
        f"{len(v['turns'])} turn{'' if len(v['turns']) == 1 else 's'} · stopped={v['stop_reason']}",
        0,
        3,
    )
    if v["query"] is not None:
        wrapped("query: " + v["query"], 2, 4)
    if v["gold"] is not None:
        line("gold: " + "; ".join(f"{p} {rs}" for p, rs in v["gold"].items()), 2)
    for t in v["turns"]:
        line()
        err = sum(c["error"] for c in t["calls"])
        line(
            f"Turn {t['turn']} / {t['n_turns']} · {_calls_word(t['n_calls'])}{f' ({err} failed)' if err else ''} · "
            f"model {t['model']} · tools {t['tools_time']} · {_tokens(t)}"
        )
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
        keys = ("viewed", "grep", "cited", "cited_unseen", "gold", "gold_viewed", "gold_cited")
        names = ("viewed", "grep", "cited", "unseen", "gold", "gold∩viewed", "gold∩cited")
        rows = [[_cut(f["path"] + (" *" if f["is_gold"] else ""), 48)] + [f[k] for k in keys] for f in v["files"][:15]]
        if len(v["files"]) > 15:
            rows.append([f"… {len(v['files']) - 15} more files"] + [""] * len(keys))
        rows.append(["total"] + [v["totals"][k] for k in keys])
        for ln in text_table(("file",) + names, rows, right=set(names), rule=False).splitlines():
            line(ln)
    return "\n".join(out) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#222}
pre{white-space:pre-wrap;background:#f6f6f6;padding:4px 6px;margin:2px 0;font-size:12px}
.turn{border-top:1px solid #ccc;margin-top:1em;padding-top:.5em}.err{color:#b00}
td,th{padding:0 6px;text-align:right;font-size:13px}td:first-child,th:first-child{text-align:left}
details{margin:.3em 0 .3em 1em}summary{cursor:pointer;font-family:monospace;font-size:13px}"""


def to_html(v: dict) -> str:
    """The episode as one static HTML page: no script, no external file (every call is a <details>);
    every value from the episode escaped by :func:`fasbench.base.markup.html`."""
    h = [
        html(
            "<!doctype html><html><head><meta charset='utf-8'><title>{} · {}</title><style>{}</style></head><body>",
            v["task_id"],
            v["run"],
            _CSS,
        ),
        html(
            "<h2>{}</h2><p>run <b>{}</b> · policy <code>{}</code> · tool set {} · {} turns · stop: {}</p>",
            v["task_id"],
            v["run"] or "?",
            v["policy"],
            v["toolset"],
            len(v["turns"]),
            v["stop_reason"],
        ),
    ]
    if v["query"] is not None:
        h.append(html("<details><summary>query</summary><pre>{}</pre></details>", v["query"]))
    if v["gold"] is not None:
        h.append(
            html("<p>gold: {}</p>", join((html("<code>{}</code> {}", p, str(rs)) for p, rs in v["gold"].items()), "; "))
        )
    for t in v["turns"]:
        err = sum(c["error"] for c in t["calls"])
        h.append(
            html(
                "<div class='turn'><b>Turn {} / {}</b> · {}{} · model {} · tools {} · {}",
                t["turn"],
                t["n_turns"],
                _calls_word(t["n_calls"]),
                f" ({err} failed)" if err else "",
                t["model"],
                t["tools_time"],
                _tokens(t),
            )
        )
        if t["text"]:
            h.append(html("<pre>{}</pre>", t["text"]))
        for j, c in enumerate(t["calls"], 1):
            args = ", ".join(f"{k}={a}" for k, a in c["args"].items())
            more = f"\n… {c['more_lines']} more lines" if c["more_lines"] else ""
            h.append(
                html(
                    "<details><summary{}>{}. {}({}) {}{}</summary><pre>{}</pre><pre>{}</pre></details>",
                    html(" class='err'") if c["error"] else "",
                    j,
                    c["tool"],
                    _cut(args, 160),
                    c["duration"],
                    " ERROR" if c["error"] else "",
                    "\n".join(f"{k}: {a}" for k, a in c["args"].items()),
                    "\n".join(c["excerpt"]) + more,
                )
            )
        h.append(html("</div>"))
    rep = v["report"]
    h.append(html("<div class='turn'>"))
    if rep is None:
        h.append(
            html(
                "<p><b>No report</b> (stopped: {}{})</p>",
                v["stop_reason"],
                "; " + str(v["error"]) if v["error"] else "",
            )
        )
    else:
        h.append(
            html(
                "<p><b>Report</b> ({}):</p><ul>{}</ul>",
                v["stop_reason"],
                join(html("<li><code>{}</code> {}</li>", p, str(rs)) for p, rs in rep["files"].items()),
            )
        )
        if rep["explanation"]:
            h.append(html("<pre>{}</pre>", rep["explanation"]))
    r = v["reward"]
    parts = join((html("{} {}", k, _num(x)) for k, x in r["parts"].items()), ", ")
    h.append(
        html(
            "<p><b>Reward {} = {}</b> ({}){}{}</p>",
            r["name"],
            _num(r["value"]),
            r["source"],
            ": " if r["parts"] else "",
            parts,
        )
    )
    if v["scores"]:
        h.append(
            html("<p>{}</p>", join((html("{} {}", k.replace("_", " "), _num(x)) for k, x in v["scores"].items()), ", "))
        )
    h.append(html("<p>{}</p>", process_line(v["process"])))
    if v["files"]:
        cols = ("viewed", "grep", "cited", "cited_unseen", "gold", "gold_viewed", "gold_cited")
        heads = ("viewed", "grep hits", "cited", "cited, never shown", "gold", "gold ∩ viewed", "gold ∩ cited")
        h.append(html("<table><tr><th>file (lines; ★ gold)</th>{}</tr>", join(html("<th>{}</th>", x) for x in heads)))
        for f in v["files"]:
            h.append(
                html(
                    "<tr><td><code>{}</code>{}</td>{}</tr>",
                    f["path"],
                    " ★" if f["is_gold"] else "",
                    join(html("<td>{}</td>", f[k]) for k in cols),
                )
            )
        tot = v["totals"]
        h.append(
            html("<tr><td><b>total</b></td>{}</tr></table>", join(html("<td><b>{}</b></td>", tot[k]) for k in cols))
        )
    h.append(html("</div></body></html>"))
    return str(join(h, "\n")) + "\n"
