"""Report contracts: how a searcher names what it cites. fasbench's extension, not part of the
published systems (Relace's ``report_back`` and FastContext's ``<final_answer>`` take paths and line
ranges as the model writes them).

- ``free`` (the default, the published behaviour): the answer names paths and line ranges; nothing
  stops it from citing lines it was never shown (``process.py``'s ``cited_lines_unseen``).
- ``ids``: every line range a tool result showed carries a short ID, listed under the result as
  ``[r7] path:12-40`` (after :data:`IDS_HEADER`); the answer names IDs, optionally narrowed inside
  the range (``r7:15-20``), in the tool set's own answer form (``report_back``'s ``files`` keys, one
  line per ID in the ``<final_answer>`` block), and fasbench renders the paths and line ranges from
  the IDs (:meth:`IdLedger.render`, deterministic). Only IDs shown before the answer's turn count: an
  unknown ID, a path written instead of an ID, or a narrowing wholly outside its range is dropped and
  counted; a narrowing partly outside is cut to the range and counted. An ungrounded citation cannot
  be rendered, so ``cited_lines_unseen`` is 0 by construction.

Inspiration: Dyad's ``explore_code`` subagent fix (its model selects IDs of candidates it observed
while a deterministic renderer writes the paths and ranges, which removed fabricated references).
IDs are per episode, numbered in the order ranges were first shown (call order within a turn); the
same path and range shown again keeps its ID. A range is a maximal run of consecutive lines one result
showed of one file (a view, a search's match and context lines: ``ToolResult.shown``); listings show
no lines and get no ID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fasbench.records import Ranges, Report, Shown, ToolResult

CONTRACTS = ("free", "ids")
IDS_HEADER = "[cite by ID]"  # the line before a result's ID list
IDS_MARKER = "Report contract: cite by ID."  # first sentence of the prompt addendum (policies read it)
_TAG = re.compile(r"^\[(r[1-9]\d*)\] (.+?):(\d+)(?:-(\d+))?$")
_KEY = re.compile(r"^\s*\[?(r[1-9]\d*)\]?(?=$|[\s:(])")  # an ID at the start of a cited key or answer line
_NARROW = re.compile(r"^\s*\[?r[1-9]\d*\]?:(\d+)(?:-(\d+))?")
_BLOCK = re.compile(r"<final_answer>(.*?)</final_answer>", re.DOTALL)  # as fastcontext.parse_final_answer


def check_contract(name: str) -> str:
    """``name`` when it is a contract, else a one-line ``ValueError`` naming the choices."""
    if name not in CONTRACTS:
        raise ValueError(f"unknown report contract {name!r}; choose one of {', '.join(CONTRACTS)}")
    return name


def prompt_addendum(answer_tool: str | None) -> str:
    """The paragraph appended to the tool set's system prompt under ``ids`` (fasbench's own text)."""
    how = (
        f'In {answer_tool}, the keys of `files` are IDs instead of paths, e.g. {{"r7": [], "r9": [[15, 20]]}}: '
        "an empty list cites the whole range of the ID, a line range narrows it."
        if answer_tool
        else "In <final_answer>, write one ID per line instead of a path: `r7` cites its whole range, `r9:15-20` "
        "narrows it; a reason in parentheses may follow."
    )
    return (
        f"\n\n{IDS_MARKER} Every file range a tool result shows you is listed under the result after "
        f"`{IDS_HEADER}` as `[r7] path:12-40`. Your answer cites these IDs, never paths: {how} The paths and "
        "line ranges are written from the IDs; an ID you were not shown, or lines outside its range, are dropped."
    )


def final_note_addendum() -> str:
    return " Cite the ranges by their IDs."


def blocks(shown: Shown) -> list[tuple[str, int, int]]:
    """The maximal runs of consecutive lines ``shown`` holds per file (content ranges and match lines),
    files in order of first appearance, runs in line order."""
    lines: dict[str, set[int]] = {}
    for p, rs in shown.ranges.items():
        lines.setdefault(p, set()).update(n for a, b in rs for n in range(int(a), int(b) + 1))
    for p, n in shown.hits:
        lines.setdefault(str(p), set()).add(int(n))
    out = []
    for p, ns in lines.items():
        run: list[int] = []
        for n in sorted(ns):
            if run and n != run[1] + 1:
                out.append((p, run[0], run[1]))
                run = []
            run = [run[0] if run else n, n]
        if run:
            out.append((p, run[0], run[1]))
    return out


def _tag(i: str, p: str, a: int, b: int) -> str:
    return f"[{i}] {p}:{a}" + (f"-{b}" if b != a else "")


def strip_ids(text: str) -> str:
    """``text`` without a trailing ID list (the tool sets' parsers read the tool's own output)."""
    head, sep, tail = text.rpartition("\n" + IDS_HEADER + "\n")
    if sep and tail and all(_TAG.match(t) for t in tail.split("\n")):
        return head
    return text


def shown_ids(messages: list[dict]) -> dict[str, tuple[str, int, int]]:
    """ID → (path, first, last line) of every ID list in the chat's tool messages (what a policy was shown)."""
    out: dict[str, tuple[str, int, int]] = {}
    for m in messages:
        text = str(m.get("content") or "") if m.get("role") == "tool" else ""
        _, sep, tail = text.rpartition("\n" + IDS_HEADER + "\n")
        for row in tail.split("\n") if sep else []:
            t = _TAG.match(row)
            if t:
                out[t.group(1)] = (t.group(2), int(t.group(3)), int(t.group(4) or t.group(3)))
    return out


def contract_of(messages: list[dict]) -> str:
    """The contract a chat was run under: ``ids`` when a system message holds :data:`IDS_MARKER`."""
    return (
        "ids"
        if any(m.get("role") == "system" and IDS_MARKER in str(m.get("content") or "") for m in messages)
        else "free"
    )


def cite_ids(files: dict[str, Ranges], ids: dict[str, tuple[str, int, int]]) -> dict[str, Ranges]:
    """The ID citations (``{"r7": [], "r9": [[15, 20]]}``) of a path report: per cited range, each
    shown ID of that file it overlaps, narrowed to the overlap (whole when it covers the ID's range; a
    file cited without ranges: all its IDs whole). Lines no ID holds cannot be cited and are left out."""
    out: dict[str, Ranges] = {}
    for p, rs in files.items():
        for i, (q, lo, hi) in ids.items():
            if q != p:
                continue
            if not rs:
                out[i] = []
                continue
            for a, b in rs:
                x, y = max(int(a), lo), min(int(b), hi)
                if x > y or out.get(i) == []:
                    continue
                if (x, y) == (lo, hi):
                    out[i] = []
                elif [x, y] not in out.setdefault(i, []):
                    out[i].append([x, y])
    return out


@dataclass
class IdLedger:
    """The IDs of one episode: assigned as results come in (:meth:`annotate`), resolved by :meth:`render`."""

    ids: dict[str, list] = field(default_factory=dict)  # ID -> [path, first, last, turn first shown]
    _key: dict[tuple, str] = field(default_factory=dict)

    def annotate(self, turn: int, results: list[ToolResult]) -> None:
        """Give every range each result showed an ID and append the list to its output (errors and
        results that showed no line are left as they are)."""
        for r in results:
            if r.is_error or r.shown is None:
                continue
            tags = []
            for p, a, b in blocks(r.shown):
                i = self._key.get((p, a, b))
                if i is None:
                    i = self._key[(p, a, b)] = f"r{len(self.ids) + 1}"
                    self.ids[i] = [p, a, b, turn]
                tags.append(_tag(i, p, a, b))
            if tags:
                r.output = r.output + "\n" + IDS_HEADER + "\n" + "\n".join(tags)

    def render(self, cites: list[tuple[str, Ranges]], before_turn: int, report: Report) -> tuple[Report, dict]:
        """The report with paths and ranges written from ``cites`` (key as written, ranges) and the
        record of what was kept: ``cited`` (IDs kept), ``dropped`` (keys as written), ``clipped``."""
        files: dict[str, list[list[int]]] = {}
        kept, dropped, clipped = [], [], 0
        for key, rs in cites:
            m = _KEY.match(str(key))
            got = self.ids.get(m.group(1)) if m else None
            if got is None or got[3] >= before_turn:
                dropped.append(str(key))
                continue
            p, lo, hi, _ = got
            narrowed = []
            for a, b in rs or [[lo, hi]]:
                x, y = max(int(a), lo), min(int(b), hi)
                if x > y:
                    dropped.append(f"{m.group(1)}:{a}-{b}")
                    continue
                clipped += (x, y) != (min(int(a), int(b)), max(int(a), int(b)))
                narrowed.append([x, y])
            if narrowed:
                kept.append(m.group(1))
                files.setdefault(p, []).extend(narrowed)
        merged = {p: _merge(rs) for p, rs in files.items()}
        return (
            Report(merged, report.explanation, report.confidence),
            {"cited": kept, "dropped": dropped, "clipped": clipped},
        )


def _merge(rs: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(rs):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def answer_cites(report: Report, text: str, answer_tool: str | None) -> list[tuple[str, Ranges]]:
    """The cited keys of a parsed answer, with their ranges: ``report_back``'s ``files`` as written; in a
    ``<final_answer>`` block also the lines that name an ID without a range (``r7``, ``r7 (why)``), which
    the released line parser skips, in answer order, then the paths written instead of IDs."""
    if answer_tool:
        return list(report.files.items())
    m = _BLOCK.search(text or "")
    out = []
    for row in m.group(1).strip().splitlines() if m else []:
        k = _KEY.match(row)
        if not k:
            continue
        n = _NARROW.match(row)
        out.append((k.group(1), [[int(n.group(1)), int(n.group(2) or n.group(1))]] if n else []))
    # a path written instead of an ID: kept so that render drops and counts it
    return out + [(k, rs) for k, rs in report.files.items() if not _KEY.match(str(k))]
