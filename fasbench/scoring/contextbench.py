"""ContextBench's metrics of one episode against its gold context (``gold.context``, imported by
``fasbench data import contextbench``: fasbench/data/contextbench_tasks.py).

Source: ContextBench (Li et al., arXiv 2602.05892), its evaluator as published in
anonymousUser2026/ContextBench at commit 2e37285e929f89b00641c54d867d7556260e5939 (the paper's code
release; EuniAI/ContextBench is the same package): ``Context-Bench/contextbench/evaluate.py``
(``evaluate_instance``), ``metrics/compute.py`` (``coverage_precision``,
``compute_granularity_metrics``, ``compute_trajectory_metrics``), ``extractors/treesitter.py``
(``extract_def_set_in_spans``) and ``scripts/calculate_evidence_drop_laststep_to_final.py``
(``compute_instance_drops``). The metric page https://euniai.github.io/ContextBench/metrics.html
gives the same definitions (and F1 = 2PR/(P+R), which evaluate.py does not write).

**An episode as ContextBench reads a trajectory** (the mapping is fasbench's own): a *step* is one
search call (every call but the answer call, in order; as ``process.context_redundancy``) that showed
a file line (ContextBench's extractors skip a context block without spans), its context the file
lines its result showed (``process.call_lines``) and the files holding them; the
*final context* (ContextBench's ``PATCH_CONTEXT`` for mini-SWE-agent: what the agent says it used)
is the report: its files, and its cited ranges as written (a file cited whole is lines 1..N, ``-1``
the file's end; evaluate.py clips nothing). Paths that are not a file of the corpus are dropped from
steps and final context before scoring (``evaluate.py::_filter_step_to_repo``, its suffix rule).

Granularities: *file* (path sets); *block* (ContextBench's "symbol": the definition nodes a span
overlaps; tree-sitter's ``function_definition`` / ``class_definition`` for Python, found here with
:mod:`ast`: a node's lines from ``def``/``class`` (a decorated definition starts there, as tree-sitter's
node does) to its last statement or the trailing comments its block holds in tree-sitter
(:func:`_block_end`; identical to tree-sitter-python 0.25.0 on 26,118 definitions of 1,499 files),
which at line resolution is its byte test); *line* (per-file line intervals). Block columns are
null when a file of the episode is in another language that ContextBench's tree-sitter parses
(fasbench does not parse those); a file of no such language has no blocks, as there. Stated
deviations at the edges: a Python file that does not parse has no definitions here (tree-sitter
recovers some); a reversed range of the report (start > end) is read as its lines end..start
(:func:`final_context`), where ContextBench hands it to ``line_to_byte`` as written; a tab counts
one indentation column in :func:`_block_end` (tree-sitter: 8).

ContextBench's redundancy at line level is the process column ``context_redundancy``
(fasbench/scoring/process.py, the same steps): it is not computed again here.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping
from functools import lru_cache

from fasbench.base.contain import PathRefused, file_key, read_bytes
from fasbench.base.entities import parse_python
from fasbench.base.lines import file_lines, line_set
from fasbench.records import Trace
from fasbench.scoring.process import call_lines
from fasbench.stats.metrics import NONNEGATIVE, UNIT, Bounds, normalize_path
from fasbench.tools import tool_kind

#: Extensions ContextBench's tree-sitter parses (extractors/treesitter.py ``LANG_MAP``).
TS_EXTENSIONS = (
    ".py",
    ".js",
    ".jsx",
    ".ts",
    ".tsx",
    ".java",
    ".go",
    ".rs",
    ".c",
    ".h",
    ".cpp",
    ".cc",
    ".hpp",
    ".cs",
    ".php",
    ".rb",
    ".swift",
    ".kt",
    ".scala",
)
LEVELS = ("file", "block", "line")

_SRC = "anonymousUser2026/ContextBench @2e37285, Context-Bench/contextbench/"
#: Every ContextBench column, its definition and source (null = not defined for the episode).
CONTEXTBENCH_COLUMNS: dict[str, str] = {
    **{
        f"cb_{lv}_{m}": d.format(lv=lv)
        for lv in LEVELS
        for m, d in (
            (
                "recall",
                "ContextBench coverage at {lv} level: |final ∩ gold| / |gold|, 1.0 when the gold is empty "
                f"({_SRC}metrics/compute.py::coverage_precision); null when the report names no corpus file "
                "(evaluate.py's no_context_extracted: the instance is left out of its averages)",
            ),
            (
                "precision",
                "ContextBench precision at {lv} level: |final ∩ gold| / |final|, 1.0 when the final context "
                "is empty at this level (coverage_precision); null as recall",
            ),
            (
                "f1",
                "2PR/(P+R) of the two above, 0 when both are 0 (ContextBench's metrics page; evaluate.py writes no F1)",
            ),
        )
    },
    **{
        f"cb_efficiency_{lv}": (
            f"ContextBench AUC-Coverage at {lv} level (the paper's efficiency): the mean over "
            "steps of the coverage of the union of the steps so far (metrics/compute.py::"
            "compute_trajectory_metrics); 0.0 without steps"
            + ("; line coverage is 0.0 when the gold has no line (as written there)" if lv == "line" else "")
        )
        for lv in LEVELS
    },
    "cb_evidence_drop": (
        "ContextBench evidence drop (retrieval ≠ use), line level: 1 − |final ∩ G_seen| / |G_seen|, "
        "G_seen = gold lines any step showed; 1.0 when G_seen is empty (scripts/"
        "calculate_evidence_drop_laststep_to_final.py, union-drop)"
    ),
    "cb_evidence_drop_last": (
        "the same with G_seen = gold lines shown by the steps of the last turn that has "
        "steps (that script's last-step-drop: the blocks of the last assistant message)"
    ),
    "cb_gold_lines": "lines of the gold context (merged per file, as annotated)",
    "cb_gold_seen_lines": "|G_seen|: gold lines some step showed",
}
_INT = ("cb_gold_lines", "cb_gold_seen_lines")
#: The range of each column (its interval is clipped to it): the line counts are never below 0, the
#: rest (recall, precision, F1, AUC-Coverage, evidence drop) are in [0, 1].
CONTEXTBENCH_BOUNDS: dict[str, Bounds] = {c: NONNEGATIVE if c in _INT else UNIT for c in CONTEXTBENCH_COLUMNS}

Lines = dict[str, set[int]]


def contextbench_schema() -> dict[str, str]:
    """Each column's kind (``int`` | ``float``)."""
    return {c: "int" if c in _INT else "float" for c in CONTEXTBENCH_COLUMNS}


def resolve(root: str | None, path: str) -> str:
    """``evaluate.py::_resolve_repo_relpath``: the path, or its shortest-stripped suffix, that is a
    file of the corpus ("" when none is; the path as normalised when the corpus is unknown)."""
    p = normalize_path(path, root)
    if not root:
        return p
    parts = [x for x in p.split("/") if x]
    for i in range(len(parts)):
        cand = "/".join(parts[i:])
        if file_key(root, cand) is not None:
            return cand
    return ""


@lru_cache(maxsize=4096)
def _defs_cached(root: str, path: str, key: tuple) -> tuple:
    try:
        data, more = read_bytes(root, path)
    except PathRefused:
        return ()
    if more:
        return ()
    tree = parse_python(data)
    if tree is None:
        return ()  # deviation: ContextBench's tree-sitter extract_defs recovers definitions from a file with
        # syntax errors (the ones before the error, or around it); Python's ast gives none for it
    kinds = {
        ast.FunctionDef: "function_definition",
        ast.AsyncFunctionDef: "function_definition",
        ast.ClassDef: "class_definition",
    }
    lines = _LINE_END.split(data.decode("utf-8", "replace"))
    return tuple(
        (path, kinds[type(n)], n.lineno, n.col_offset, _block_end(lines, n)) for n in ast.walk(tree) if type(n) in kinds
    )


_LINE_END = re.compile(r"\r\n|\r|\n")


def _block_end(lines: list[str], node) -> int:
    """The definition's last line as tree-sitter-python's node ends: its block runs on over the comment
    lines after the last statement that are indented at least as deep as the block (blank lines between
    them included, a shallower comment or any code ends it), where ``ast``'s ``end_lineno`` stops at the
    statement; a one-line definition takes none. Checked against tree-sitter-python 0.25.0 (ContextBench's
    ``tree_sitter_languages`` grammar is older): the same lines for all 26,118 definitions of 1,499 random
    ``.py`` files of fasbench's environment (``ast``'s ``end_lineno`` alone: 40 differed, in 27 files);
    ``tests/test_contextbench.py::test_block_edges_as_tree_sitter`` pins the cases. A tab counts one
    indentation column (tree-sitter: 8)."""
    end, first = node.end_lineno, node.body[0]
    if first.lineno == node.lineno:
        return end
    i = end
    while i < len(lines):
        text = lines[i].lstrip(" \t")
        if text.startswith("#") and len(lines[i]) - len(text) >= first.col_offset:
            end = i + 1
        elif text.strip():
            break
        i += 1
    return end


def definitions(root: str, path: str) -> tuple:
    """The Python definition nodes of ``path``: ``(path, kind, first line, column, last line)``."""
    key = file_key(root, path)
    return _defs_cached(str(root), path, key) if key is not None else ()


def _line_ranges(lines: Mapping[str, set[int]]) -> dict[str, list[tuple[int, int]]]:
    out = {}
    for p, ns in lines.items():
        rs: list[tuple[int, int]] = []
        for n in sorted(ns):
            if rs and n == rs[-1][1] + 1:
                rs[-1] = (rs[-1][0], n)
            else:
                rs.append((n, n))
        out[p] = rs
    return out


def blocks(root: str | None, ranges: Mapping[str, list[tuple[int, int]]]) -> set:
    """``extract_def_set_in_spans``: the definitions overlapping any range (a range starting past the
    file's end is skipped and one ending past it is clipped, as ``core/fileio.py::line_to_byte``)."""
    out: set = set()
    if not root:
        return out
    for p, rs in ranges.items():
        if not p.endswith(".py"):
            continue
        n = file_lines(root, p) or 0
        spans = [(s, min(e, n)) for s, e in rs if s <= n]
        for d in definitions(root, p):
            if any(not (d[4] < s or d[2] > e) for s, e in spans):
                out.add(d)
    return out


def _as_lines(ranges: Mapping[str, list[tuple[int, int]]]) -> Lines:
    """The lines of each path's ranges. ContextBench clips nothing to the file's length (a span past
    the end counts its lines), so only :data:`fasbench.base.lines.LINE_CAP` bounds them here (fasbench's
    deviation, for absurd ranges only: a record's ``start_line`` 10^9 then costs nothing)."""
    return {p: line_set(rs) for p, rs in ranges.items()}


def _size(lines: Mapping[str, set[int]]) -> int:
    return sum(len(v) for v in lines.values())


def _inter(a: Mapping[str, set[int]], b: Mapping[str, set[int]]) -> int:
    return sum(len(v & b.get(p, set())) for p, v in a.items())


def _cov_prec(pred: int, gold: int, inter: int) -> tuple[float, float]:
    """``metrics/compute.py::coverage_precision``."""
    return (inter / gold if gold > 0 else 1.0), (inter / pred if pred > 0 else 1.0)


def steps(trace: Trace, root: str | None) -> list[tuple[int, Lines]]:
    """(turn index, shown lines) of each search call that showed a corpus file line, paths resolved
    on the corpus (module doc: a call that showed nothing is no step, as a context block without
    spans is none in ContextBench's extractors)."""
    out = []
    for i, t in enumerate(trace.turns):
        res = {r.call_id: r for r in t.results}
        for c in t.calls:
            if tool_kind(trace.toolset, c.name) == "report":
                continue
            got: Lines = {}
            for p, ns in call_lines(trace.toolset, c, res.get(c.id)).items():
                q = resolve(root, p)
                if q:
                    got.setdefault(q, set()).update(ns)
            if got:
                out.append((i, got))
    return out


def final_context(trace: Trace, root: str | None) -> tuple[set[str], dict[str, list[tuple[int, int]]]]:
    """The report's files and line ranges (module doc), paths resolved on the corpus."""
    files: set[str] = set()
    ranges: dict[str, list[tuple[int, int]]] = {}
    for p, rs in (trace.report.files if trace.report is not None else {}).items():
        q = resolve(root, p)
        if not q:
            continue
        files.add(q)
        n = file_lines(root, q) if root else None
        for r in rs or ([[1, n]] if n else []):
            s, e = int(r[0]), int(r[1])
            if e == -1 and n:
                e = n
            s, e = min(s, e), max(s, e)  # deviation (module doc): ContextBench keeps a reversed span as written
            if s > 0 and e > 0:  # evaluate.py::_step_lines keeps start_line > 0 and end_line > 0
                ranges.setdefault(q, []).append((s, e))
    return files, ranges


def _drop(final: Lines, seen: Lines, gold: Lines) -> float:
    """``compute_instance_drops``'s drop: 1 − |final ∩ seen gold| / |seen gold|, 1.0 when nothing seen."""
    g = {p: v & gold.get(p, set()) for p, v in seen.items()}
    n = _size(g)
    if not _size(gold) or n <= 0:
        return 1.0
    return 1.0 - min(_inter(final, g) / n, 1.0)


def contextbench_row(task, trace: Trace) -> dict:
    """The :data:`CONTEXTBENCH_COLUMNS` of one episode (all null without ``gold.context``)."""
    row: dict = dict.fromkeys(CONTEXTBENCH_COLUMNS)
    ctx = task.gold.context if task is not None else None
    if not ctx or not ctx.get("regions"):
        return row
    root = task.root
    gold_ranges: dict[str, list[tuple[int, int]]] = {}
    for p, s, e in ctx["regions"]:
        gold_ranges.setdefault(str(p), []).append((int(s), int(e)))
    gold = {"file": set(gold_ranges), "line": _as_lines(gold_ranges)}
    turn_of = steps(trace, root)
    st = [s for _, s in turn_of]
    files, fin_ranges = final_context(trace, root)
    fin = {"file": files, "line": _as_lines(fin_ranges)}
    named = set(gold_ranges) | files | {p for s in st for p in s}
    block_ok = bool(root) and not any(os.path.splitext(p)[1].lower() in TS_EXTENSIONS[1:] for p in named)
    if block_ok:
        gold["block"] = blocks(root, gold_ranges)
        fin["block"] = blocks(root, fin_ranges)
    row["cb_gold_lines"] = _size(gold["line"])
    if files or fin_ranges:  # evaluate.py: no files and no spans -> no_context_extracted
        for lv in LEVELS:
            if lv not in gold:
                continue
            if lv == "line":
                pred, g, inter = _size(fin["line"]), _size(gold["line"]), _inter(fin["line"], gold["line"])
            else:
                pred, g, inter = len(fin[lv]), len(gold[lv]), len(fin[lv] & gold[lv])
            r, p = _cov_prec(pred, g, inter)
            row[f"cb_{lv}_recall"], row[f"cb_{lv}_precision"] = r, p
            row[f"cb_{lv}_f1"] = 2 * p * r / (p + r) if p + r else 0.0
    # trajectory: AUC-Coverage over the steps (compute_trajectory_metrics)
    union: dict[str, set] = {"file": set(), "block": set(), "line": {}}
    auc = {lv: 0.0 for lv in LEVELS}
    for s in st:
        union["file"] |= set(s)
        if block_ok:
            union["block"] |= blocks(root, _line_ranges(s))
        for p, ns in s.items():
            union["line"].setdefault(p, set()).update(ns)
        auc["file"] += len(union["file"] & gold["file"]) / len(gold["file"]) if gold["file"] else 1.0
        if block_ok:
            auc["block"] += len(union["block"] & gold["block"]) / len(gold["block"]) if gold["block"] else 1.0
        g = _size(gold["line"])
        auc["line"] += (_inter(union["line"], gold["line"]) / g) if g else 0.0
    for lv in LEVELS:
        if lv == "block" and not block_ok:
            continue
        row[f"cb_efficiency_{lv}"] = auc[lv] / len(st) if st else 0.0
    # evidence drop: seen gold kept in the final context
    last: Lines = {}  # the script's last EXPLORE_CONTEXT group: every block of the last message with one
    for i, s in turn_of:
        if i == turn_of[-1][0]:
            for p, ns in s.items():
                last.setdefault(p, set()).update(ns)
    row["cb_gold_seen_lines"] = _inter(union["line"], gold["line"])
    row["cb_evidence_drop"] = _drop(fin["line"], union["line"], gold["line"])
    row["cb_evidence_drop_last"] = _drop(fin["line"], last, gold["line"])
    return row
