"""Handing a search result to the main agent, in three renderings, with their token counts.

- ``citations``: the cited files and line ranges, and the searcher's explanation.
- ``code``: the citations with the cited code (numbered lines, each range capped).
- ``code+search``: the code plus a compressed account of the search — one line per tool call
  (what was searched or viewed and what came back) — which Relace found works best for the main
  agent.

Token counts use a real tokenizer, offline by default (SmolLM2's, via ``fasbench.models``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from fasbench.metrics import normalize_files
from fasbench.records import Task, Trace

FORMATS = ("citations", "code", "code+search")
MAX_RANGE_LINES = 120  # lines of code shown per cited range


def _args(arguments) -> dict:
    if isinstance(arguments, dict):
        return arguments
    try:
        a = json.loads(arguments)
        return a if isinstance(a, dict) else {}
    except (TypeError, ValueError):
        return {}


def citations(trace: Trace, root: str | None = None) -> str:
    if trace.report is None or not trace.report.files:
        return "The search found no relevant location."
    lines = ["Relevant locations:"]
    for p, rs in normalize_files(trace.report.files, root).items():
        lines.append(f"- {p}" + (": " + ", ".join(f"{a}-{b}" for a, b in rs) if rs else ""))
    if trace.report.explanation:
        lines.append(f"Why: {trace.report.explanation.strip()}")
    return "\n".join(lines)


def cited_code(trace: Trace, root: str | Path, max_lines: int = MAX_RANGE_LINES) -> str:
    """The cited ranges with their code read from ``root`` (a whole file is cut at ``max_lines``)."""
    if trace.report is None:
        return ""
    out = []
    for p, rs in normalize_files(trace.report.files, str(root)).items():
        f = Path(root) / p
        try:
            text = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            out.append(f"## {p}\n(file not found)")
            continue
        for a, b in (rs or [[1, len(text)]]):
            b = min(b, len(text))
            cut = min(b, a + max_lines - 1)
            body = "\n".join(f"{i:>5} {text[i - 1]}" for i in range(a, cut + 1))
            more = f"\n      [... {b - cut} more lines]" if cut < b else ""
            out.append(f"## {p}:{a}-{b}\n{body}{more}")
    return "\n\n".join(out)


def _call_line(name: str, args: dict, output: str, is_error: bool) -> str:
    if is_error:
        return f"{name} failed: {output.splitlines()[0][:100] if output else ''}"
    if name in ("grep_search", "Grep"):
        pat = args.get("query") or args.get("pattern")
        hits = [ln for ln in output.splitlines() if ln.count(":") >= 2 and not ln.startswith("[")]
        files = sorted({ln.split(":", 1)[0].removeprefix("./") for ln in hits})
        where = f" in {', '.join(files[:4])}{' …' if len(files) > 4 else ''}" if files else ""
        return f"grep {pat!r}: {len(hits)} matches{where}"
    if name in ("view_file", "Read"):
        rng = args.get("view_range") or ([args.get("offset"), (args.get("offset") or 1) + (args.get("limit") or 0) - 1]
                                          if args.get("offset") else None)
        return f"viewed {args.get('path')}" + (f" lines {rng[0]}-{rng[1]}" if rng else "")
    if name in ("view_directory", "Glob"):
        n = len([ln for ln in output.splitlines() if ln.strip() and not ln.startswith("[")])
        return f"listed {args.get('path') or args.get('pattern')}: {n} entries"
    if name == "bash":
        n = len(output.splitlines())
        return f"ran `{str(args.get('command'))[:80]}`: {n} lines"
    return f"{name}"


def search_account(trace: Trace) -> str:
    """One line per tool call, turn by turn (the report call left out)."""
    lines = []
    for t in trace.turns:
        res = {r.call_id: r for r in t.results}
        parts = []
        for c in t.calls:
            if c.name == "report_back":
                continue
            r = res.get(c.id)
            parts.append(_call_line(c.name, _args(c.arguments), r.output if r else "", bool(r and r.is_error)))
        if parts:
            lines.append(f"Turn {t.index + 1}: " + "; ".join(parts))
    return "\n".join(lines)


def render(trace: Trace, root: str | Path | None, fmt: str = "code+search") -> str:
    """The handoff message in one of ``FORMATS``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown handoff format {fmt!r}; choose one of {', '.join(FORMATS)}")
    parts = [citations(trace, str(root) if root else None)]
    if fmt in ("code", "code+search"):
        if root is None:
            raise ValueError("handoff with code needs the corpus root")
        code = cited_code(trace, root)
        if code:
            parts.append(code)
    if fmt == "code+search":
        acc = search_account(trace)
        if acc:
            parts.append("How the search went:\n" + acc)
    return "\n\n".join(parts)


def offline_tokenizer():
    """SmolLM2's tokenizer, offline (``fasbench.models``)."""
    from fasbench.models import OFFLINE, load_tokenizer

    return load_tokenizer(OFFLINE)


def token_counter(tokenizer=None) -> Callable[[str], int]:
    tok = tokenizer or offline_tokenizer()
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def handoff_tokens(traces: Sequence[Trace], tasks: Sequence[Task], tokenizer=None):
    """A frame with one row per (trace, format): tokens and characters of the rendering."""
    import polars as pl

    count = token_counter(tokenizer)
    by_id = {t.id: t for t in tasks}
    rows = []
    for tr in traces:
        task = by_id.get(tr.task_id)
        if task is None:
            continue
        for fmt in FORMATS:
            text = render(tr, task.root, fmt)
            rows.append({"task_id": tr.task_id, "policy": tr.policy, "format": fmt, "tokens": count(text),
                         "chars": len(text)})
    return pl.DataFrame(rows)
