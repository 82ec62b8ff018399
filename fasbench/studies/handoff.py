"""Handing a search result to the main agent, in three renderings, with their token counts.

- ``citations``: the cited files and line ranges, and the searcher's explanation.
- ``code``: the citations with the cited code (numbered lines, each range capped).
- ``code+search``: the code plus a compressed account of the search, turn by turn: the searcher's
  reasoning (the turn's assistant text) and one line per tool call (what was searched or viewed and
  what came back). Relace (seed 000, "context handoff"): compressing the FAS trace so that it keeps
  the *reasoning steps* together with the relevant file sections helped the main agent put the
  results in context, and it used that handoff for its whole SWE-bench run. Its documentation's exact
  handoff instructions are not in the seed; what is compressed here is the tool outputs (one line a
  call), not the reasoning, which is kept whole unless ``max_reasoning_chars`` caps it per turn.
  The answer itself (FastContext's ``<final_answer>`` block, a ``report_back`` call) is left out of
  the account: the citations and code above already carry it.

- ``relace-docs``: Relace's documented hand-off, verbatim: the ``contextWithSearch`` template of
  the "Subagent Formatting" section of https://docs.relace.ai/docs/fast-agentic-search/integration
  (the user query, a ``[System Note: Automated Search Results]`` line, "Fast Agentic Search found the
  following relevant code:" and ``formatResultsForLLM(searchResults)``, in a JavaScript template
  literal: a leading and a trailing newline, two spaces before each template line). The page defines
  ``formatResultsForLLM`` in its "Merging the Output" section; fasbench does not transcribe that function
  and puts its own ``code`` rendering in its place (a stated deviation, fasbench's choice). It needs the
  user query (``render(..., query=...)``); it is not one of ``FORMATS`` (the three fasbench renderings
  the end-to-end study compares).

Token counts use a real tokenizer, offline by default (SmolLM2's, via ``fasbench.models``);
``handoff_tokens`` also counts the reasoning part of each rendering.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from fasbench.base import contain
from fasbench.models import OFFLINE, load_tokenizer
from fasbench.records import Task, ToolCall, ToolResult, Trace
from fasbench.stats.metrics import normalize_files
from fasbench.tools import shown, tool_kind

FORMATS = ("citations", "code", "code+search")
DOCUMENTED = ("relace-docs",)  # renderings a system's documentation gives, verbatim (see the module doc)
#: docs.relace.ai/docs/fast-agentic-search/integration, "Subagent Formatting", step 3 "Inject into
#: context": the template literal ``contextWithSearch``, with ${userQuery} and
#: ${formatResultsForLLM(searchResults)} as {query} and {results}.
RELACE_SUBAGENT_TEMPLATE = (
    "\n  User Query: {query}\n\n  [System Note: Automated Search Results]\n"
    "  Fast Agentic Search found the following relevant code:\n  {results}\n"
)
MAX_RANGE_LINES = 120  # lines of code shown per cited range
MAX_LINE_CHARS = 2000  # longer lines are cut (as the tools' file views cut them)


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


def _shown_lines(root: str, path: str, wanted: Sequence[Sequence[int]]) -> tuple[dict[int, str], int, str]:
    """The lines of ``path`` in the ``wanted`` ranges (``-1`` end: to the end), the file's line count
    and a note; read through :mod:`fasbench.base.contain` (inside the root, a regular file, at most
    ``contain.MAX_READ_BYTES`` read, lines cut at ``MAX_LINE_CHARS``)."""
    with contain.open_file(root, path) as f:
        if b"\0" in f.read(8192):
            raise contain.Unreadable(path, "a binary file")
        f.seek(0)
        reader = contain.LineReader(f, MAX_LINE_CHARS * 4 + 4)
        last = max((b if b != -1 else 1 << 62 for _, b in wanted), default=0)
        shown, n = {}, 0
        while n < last:
            try:
                raw = next(reader)
            except StopIteration:
                break
            n += 1
            if any(a <= n and (b == -1 or n <= b) for a, b in wanted):
                text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
                shown[n] = text[:MAX_LINE_CHARS] + " …[line cut]" if len(text) > MAX_LINE_CHARS else text
        n += reader.count_rest()
    note = (
        f"\n      [only the first {contain.MAX_READ_BYTES >> 20} MiB of the file were read]" if reader.exhausted else ""
    )
    return shown, n, note


def cited_code(trace: Trace, root: str | Path, max_lines: int = MAX_RANGE_LINES) -> str:
    """The cited ranges with their code read from ``root`` (a whole file is cut at ``max_lines``).
    Files are read through :mod:`fasbench.base.contain`: a path outside the root (``..``, absolute, a
    symlink out), a FIFO, device or directory, or a binary file shows a one-line reason instead
    of code, and a huge file costs at most ``contain.MAX_READ_BYTES`` of reading."""
    if trace.report is None:
        return ""
    out = []
    for p, rs in normalize_files(trace.report.files, str(root)).items():
        want = [[a, min(b, a + max_lines - 1)] for a, b in rs] if rs else [[1, max_lines]]
        try:
            shown, n, note = _shown_lines(str(root), p, want)
        except contain.NoSuchFile:
            out.append(f"## {p}\n(file not found)")
            continue
        except contain.PathRefused as e:
            out.append(f"## {p}\n(not shown: {e.why})")
            continue
        for a, b in rs or [[1, n]]:
            b = min(b, n)
            cut = min(b, a + max_lines - 1)
            body = "\n".join(f"{i:>5} {shown.get(i, '')}" for i in range(a, cut + 1))
            more = f"\n      [... {b - cut} more lines]" if cut < b else ""
            out.append(f"## {p}:{a}-{b}\n{body}{more}{note}")
    return "\n\n".join(out)


def _label(args: dict) -> str:
    """What a call asked for: its pattern, query, command or path (the first one it has)."""
    for k in ("pattern", "query", "command", "path", "directory"):
        if isinstance(args.get(k), str) and args[k]:
            return args[k]
    return next((v for v in args.values() if isinstance(v, str)), "")


def _call_line(toolset: str, call: ToolCall, result: ToolResult | None) -> str:
    """One line for a call: what it asked for and, from its structured observation, what it showed."""
    args = _args(call.arguments)
    if result is None or result.is_error:
        out = result.output if result else ""
        return f"{call.name} failed: {out.splitlines()[0][:100] if out else ''}"
    kind, sh, what = tool_kind(toolset, call.name), shown(toolset, call, result), _label(args)
    if kind == "read":
        rs = ", ".join(f"{p} lines " + ", ".join(f"{a}-{b}" for a, b in r) for p, r in sh.ranges.items())
        return f"viewed {rs or what}"
    if kind == "list":
        return f"listed {what}: {len(sh.paths)} entries"
    if kind == "search":
        files = list(dict.fromkeys(p for p, _ in sh.hits))
        where = f" in {', '.join(files[:4])}{' …' if len(files) > 4 else ''}" if files else ""
        if sh.hits:
            return f"searched {what!r}: {len(sh.hits)} matches{where}"
        if sh.paths:
            return f"searched {what!r}: {len(sh.paths)} files"
        if sh.ranges:
            return f"searched {what!r}: showed " + ", ".join(sh.ranges)
        return f"searched {what!r}: {len(result.output.splitlines())} lines"
    return call.name


_ANSWER = re.compile(r"<final_answer>.*?(?:</final_answer>|\Z)|<tool_call>.*?(?:</tool_call>|\Z)", re.S | re.I)
_THINK = re.compile(r"</?think>", re.I)


def reasoning(text: str, max_chars: int | None = None) -> str:
    """The searcher's reasoning in one turn's assistant text: the answer block and any tool-call
    markup removed, ``<think>`` tags unwrapped (their content is reasoning), blank lines squeezed;
    cut at ``max_chars`` with a note when given."""
    r = _THINK.sub("", _ANSWER.sub("", text or ""))
    r = re.sub(r"\n\s*\n+", "\n", r).strip()
    if max_chars is not None and len(r) > max_chars:
        r = r[:max_chars].rstrip() + f" [... {len(r) - max_chars} more characters]"
    return r


def search_account(trace: Trace, with_reasoning: bool = True, max_reasoning_chars: int | None = None) -> str:
    """The search turn by turn: the turn's reasoning (``with_reasoning``) and one line per tool call
    (the report call left out)."""
    lines = []
    for t in trace.turns:
        res = {r.call_id: r for r in t.results}
        parts = []
        for c in t.calls:
            if tool_kind(trace.toolset, c.name) == "report":
                continue
            parts.append(_call_line(trace.toolset, c, res.get(c.id)))
        why = reasoning(t.text, max_reasoning_chars) if with_reasoning else ""
        if not parts and not why:
            continue
        lines.append(f"Turn {t.index + 1}:")
        if why:
            lines.append("  Reasoning: " + why.replace("\n", "\n    "))
        if parts:
            lines.append("  Calls: " + "; ".join(parts))
    return "\n".join(lines)


def reasoning_of(trace: Trace, max_reasoning_chars: int | None = None) -> list[str]:
    """The reasoning kept from each turn (empty turns left out), as ``code+search`` renders it."""
    return [r for r in (reasoning(t.text, max_reasoning_chars) for t in trace.turns) if r]


def render(
    trace: Trace,
    root: str | Path | None,
    fmt: str = "code+search",
    max_reasoning_chars: int | None = None,
    query: str | None = None,
) -> str:
    """The handoff message in one of ``FORMATS`` or ``DOCUMENTED`` (``max_reasoning_chars``: cap per
    turn of the searcher's reasoning in ``code+search``; None keeps it whole; ``query``: the user's
    query, which ``relace-docs`` shows)."""
    if fmt not in FORMATS + DOCUMENTED:
        raise ValueError(f"unknown handoff format {fmt!r}; choose one of {', '.join(FORMATS + DOCUMENTED)}")
    if fmt == "relace-docs":
        if query is None:
            raise ValueError("the relace-docs handoff shows the user query: pass query=")
        return RELACE_SUBAGENT_TEMPLATE.format(query=query, results=render(trace, root, "code"))
    parts = [citations(trace, str(root) if root else None)]
    if fmt in ("code", "code+search"):
        if root is None:
            raise ValueError("handoff with code needs the corpus root")
        code = cited_code(trace, root)
        if code:
            parts.append(code)
    if fmt == "code+search":
        acc = search_account(trace, max_reasoning_chars=max_reasoning_chars)
        if acc:
            parts.append("How the search went:\n" + acc)
    return "\n\n".join(parts)


def offline_tokenizer():
    """SmolLM2's tokenizer, offline (``fasbench.models``)."""
    return load_tokenizer(OFFLINE)


def token_counter(tokenizer=None) -> Callable[[str], int]:
    tok = tokenizer or offline_tokenizer()
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def handoff_tokens(
    traces: Sequence[Trace], tasks: Sequence[Task], tokenizer=None, max_reasoning_chars: int | None = None
):
    """A frame with one row per (trace, format): tokens and characters of the rendering, and the
    tokens and turns of the searcher's reasoning it carries (only ``code+search`` carries any)."""
    count = token_counter(tokenizer)
    by_id = {t.id: t for t in tasks}
    rows = []
    for tr in traces:
        task = by_id.get(tr.task_id)
        if task is None:
            continue
        steps = reasoning_of(tr, max_reasoning_chars)
        r_tokens = sum(count(r) for r in steps)
        for fmt in FORMATS:
            text = render(tr, task.root, fmt, max_reasoning_chars)
            keeps = fmt == "code+search"
            rows.append(
                {
                    "task_id": tr.task_id,
                    "policy": tr.policy,
                    "format": fmt,
                    "tokens": count(text),
                    "chars": len(text),
                    "reasoning_tokens": r_tokens if keeps else 0,
                    "reasoning_turns": len(steps) if keeps else 0,
                }
            )
    return pl.DataFrame(rows)
