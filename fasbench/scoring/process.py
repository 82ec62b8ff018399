"""Process measures of one episode: what the searcher's calls showed it, and whether its report rests
on what it was shown. Columns of the episode table (``episodes.episode_row`` adds :func:`process_row`
in one place), so of ``summary.parquet``, ``fasbench runs`` / ``compare``, the runs browser and the
replay overlay. :data:`PROCESS_COLUMNS` gives each column's definition and source beside the code
below that computes it.

**Shown.** What a call showed is its result's structured record (:func:`fasbench.tools.observation`:
``ToolResult.shown``, or the tool set's own parse of the text for older traces): the file *lines* it
showed are its content ranges (a view, a ``cat``, the context around search matches) and its search
match lines; a listing shows paths, not lines. An error result, a call without a result and the
answer call (kind ``report``) show nothing. A *search call* is any call but the answer call (the
calls that can show something: the denominators below).

**Shown to the searcher** (the grounding columns): lines shown by the results of the turns *before*
the turn that holds the report: the policy never saw the results of its last turn (``Trace.to_messages``),
so a call made beside the answer does not ground it.

Sources. FuseSearch (Xu et al., "FuseSearch: Learning Adaptive Parallel Execution for Efficient Code
Localization", Findings of ACL 2026, https://aclanthology.org/2026.findings-acl.143/, arXiv 2601.19568)
defines tool efficiency as the ratio of novel information gain to invocations and reports that 34.9% of
fixed-breadth parallel calls yield no novel information; ContextBench (Li et al., arXiv 2602.05892,
https://euniai.github.io/ContextBench/metrics.html) defines trajectory redundancy as the share of the
context of each step already seen at earlier steps; SWE-Explore's context efficiency is ported from
its evaluator (see :func:`context_efficiency`). Where fasbench makes a choice the papers leave open
(information = file lines; a step = one call; what counts as grounded), the definition says
*fasbench's own*.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from fasbench.base.contain import file_key
from fasbench.base.lines import file_lines, line_set, merge_ranges, overlap, total
from fasbench.records import Report, Trace
from fasbench.scoring.localization import explore_line_counts, explore_metrics, ranked_regions
from fasbench.stats.metrics import NONNEGATIVE, UNIT, Bounds, normalize_files, normalize_path
from fasbench.tools import observation, tool_kind

Lines = dict[str, list[list[int]]]  # path -> merged 1-based inclusive ranges

#: Every process column, its definition and source (null = not defined for the episode).
PROCESS_COLUMNS: dict[str, str] = {
    "search_calls": "calls other than the answer call (the calls that can show something)",
    "lines_shown": "distinct file lines (path, line) the episode's calls showed: content ranges and search "
    "match lines; listings show paths, not lines",
    "new_lines_per_call": "tool efficiency: lines_shown / search_calls, the new lines a call showed on average "
    "(FuseSearch's novel information per invocation, ACL Findings 2026; information "
    "counted as file lines: fasbench's own); null without search calls",
    "calls_nothing_new": "redundancy: search calls that showed no file line an earlier call had not shown "
    "(FuseSearch's calls that yield no novel information, counted in lines: fasbench's own; "
    "a listing of new paths shows no line)",
    "calls_nothing_new_share": "calls_nothing_new / search_calls (FuseSearch reports 34.9% for fixed-breadth "
    "parallel calls); null without search calls",
    "duplicate_calls": "search calls with the same tool and the same arguments (as JSON, keys sorted) as an "
    "earlier call of the episode (fasbench's own)",
    "context_redundancy": "ContextBench's redundancy (arXiv 2602.05892) at line level, one step per call: "
    "sum over calls of the lines already shown by earlier calls / sum of the lines each call "
    "showed; null when no call showed a line",
    "cited_lines": "lines the report cites, clipped to the file (a file cited without ranges counts all its "
    "lines when the workspace is known); 0 without a report",
    "cited_lines_unseen": "grounding: cited lines never shown to the searcher before its report (fasbench's own)",
    "unseen_cited_share": "cited_lines_unseen / cited_lines; null when nothing is cited",
    "cited_ids_dropped": "under the ids report contract (fasbench.tools.contract, fasbench's extension): cited IDs "
    "(or narrowings) dropped by the renderer: unknown, not shown before the answer, a path "
    "written instead of an ID, lines wholly outside the ID's range; null under free citation",
    "cited_paths_missing": "grounding: cited paths that are not a file of the workspace (invented paths, "
    "directories); null without the workspace",
    "reported_without_calls": "grounding: a report was parsed after zero search calls (fasbench's own)",
    "calls_lost": "tool-call blocks (<tool_call>) left in the recorded reply text: calls the model wrote that "
    "the policy's parser did not turn into calls (fasbench's own; a malformed call that was "
    "parsed is counted by wellformed_calls instead)",
    "explore_context_efficiency": "SWE-Explore's context efficiency on the top EXPLORE_TOP_K regions: "
    "|predicted lines ∩ (core ∪ optional lines)| / |predicted lines|, 0 without "
    "predicted lines (eval.py::ExploreEvaluator.evaluate_context_efficiency, "
    "Last-Humans-Coding-Under-White-Nights/SWE-Explore-Bench @ab8d6b8); null "
    "without SWE-Explore gold",
}

_INT = (
    "search_calls",
    "lines_shown",
    "calls_nothing_new",
    "duplicate_calls",
    "cited_lines",
    "cited_lines_unseen",
    "cited_ids_dropped",
    "cited_paths_missing",
    "calls_lost",
)
_BOOL = ("reported_without_calls",)

#: The range of each process column (its interval is clipped to it): counts and per-call rates are
#: never below 0, shares and ratios are in [0, 1].
PROCESS_BOUNDS: dict[str, Bounds] = {
    **dict.fromkeys(_INT + ("new_lines_per_call",), NONNEGATIVE),
    **dict.fromkeys(
        _BOOL + ("calls_nothing_new_share", "context_redundancy", "unseen_cited_share", "explore_context_efficiency"),
        UNIT,
    ),
}


def _add(acc: dict[str, set[int]], lines: Mapping[str, set[int]]) -> None:
    for p, ns in lines.items():
        acc.setdefault(p, set()).update(ns)


def call_lines(toolset: str, call, result) -> dict[str, set[int]]:
    """The file lines one call showed, per path: its content ranges and its match lines (nothing for
    the answer call, an error, a call without a result or a tool the tool set lacks)."""
    seen = observation(toolset, call, result, lines=False)
    if seen.kind == "report":
        return {}
    s = seen.shown
    out: dict[str, set[int]] = {}
    for p, rs in s.ranges.items():
        out.setdefault(normalize_path(p), set()).update(line_set(rs))  # [1, 2**31 - 1]: LINE_CAP lines
    for p, n in s.hits:
        out.setdefault(normalize_path(p), set()).add(int(n))
    return {p: ns for p, ns in out.items() if p and ns}


def _calls(trace: Trace):
    """(turn index, call, result) of every search call, in order."""
    for i, t in enumerate(trace.turns):
        res = {r.call_id: r for r in t.results}
        for c in t.calls:
            if tool_kind(trace.toolset, c.name) != "report":
                yield i, c, res.get(c.id)


def _ranges(lines: Mapping[str, set[int]]) -> Lines:
    return {p: merge_ranges([[n, n] for n in sorted(ns)], max(ns)) for p, ns in lines.items() if ns}


def shown_lines(trace: Trace, upto: int | None = None) -> Lines:
    """The lines the results of turns ``0 … upto − 1`` showed (every turn when None), merged per path."""
    acc: dict[str, set[int]] = {}
    for i, c, r in _calls(trace):
        if upto is None or i < upto:
            _add(acc, call_lines(trace.toolset, c, r))
    return _ranges(acc)


def shown_before_report(trace: Trace) -> Lines:
    """The lines shown to the searcher before its report: the results of every turn before the last
    one (the whole episode when it failed after its last turn's results were shown)."""
    return shown_lines(trace, len(trace.turns) - (0 if trace.stop_reason == "policy_error" else 1))


def cited(report: Report | None, root: str | None) -> Lines:
    """The report's cited lines, paths normalised, ranges merged and clipped (``metrics.normalize_files``);
    a file cited without ranges is the whole file when ``root`` gives its length (else no line)."""
    if report is None:
        return {}
    out: Lines = {}
    for p, rs in normalize_files(report.files, root).items():
        if not rs:
            n = file_lines(root, p) if root else None
            rs = [[1, n]] if n else []
        out[p] = rs
    return out


def _intersect(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> list[list[int]]:
    """The ranges two merged range lists share."""
    i = j = 0
    out: list[list[int]] = []
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def ground_report(
    report: Report | None, shown_lines: Mapping[str, Sequence[Sequence[int]]], root: str | None = None
) -> Report | None:
    """The report with only its citations the searcher was shown (fasbench's own rule, for the grounded
    rewards): each cited file keeps the cited lines that were shown (a file cited whole keeps the lines of
    it that were shown); a file none of whose cited lines was shown is dropped. Paths stay as the report
    wrote them (a reward that reads paths strictly, as FastContext's released one, still does)."""
    if report is None:
        return None
    files = {}
    for p, rs in report.files.items():
        q = normalize_path(p, root)
        whole = not rs
        mine = cited(Report({p: rs}), root).get(q, [])
        got = _intersect(mine, shown_lines.get(q, [])) if mine else (list(shown_lines.get(q, [])) if whole else [])
        if got:
            files[p] = got
    return Report(files, report.explanation, report.confidence)


def _canonical(call) -> str:
    a = call.arguments
    return call.name + "\x00" + (a if isinstance(a, str) else json.dumps(a, sort_keys=True, default=str))


def context_efficiency(trace: Trace, explore: Mapping | None, root: str | None) -> float | None:
    """SWE-Explore's context efficiency (``eval.py::ExploreEvaluator.evaluate_context_efficiency`` of
    Last-Humans-Coding-Under-White-Nights/SWE-Explore-Bench at commit
    ab8d6b857e57a914debb90e0e38827e4e2e3f010; the same formula as ``quality/bench_metrics.py``): the share
    of the predicted lines that are core or optional gold lines, 0 without predicted lines. Over the
    report's top ``EXPLORE_TOP_K`` regions, as fasbench's other ``explore_*`` columns. It is exactly
    eval.py's line precision against the union of core and optional regions, so it is computed by the
    ported precision (``localization.explore_metrics``: same region resolution, same line counts)."""
    if not explore or not explore.get("core_regions"):
        return None
    union = {
        **explore,
        "core_regions": list(explore.get("core_regions") or []) + list(explore.get("optional_regions") or []),
    }
    regions = ranked_regions(trace.report.files if trace.report is not None else {}, root)
    return explore_metrics(regions, union, explore_line_counts(explore, root))["explore_line_precision"]


def ids_dropped(trace: Trace) -> int | None:
    """Citations the ids contract's renderer dropped (``meta["citation"]["dropped"]``, written by the
    harness; a malformed record counts none); None for an episode under free citation."""
    if trace.meta.get("report_contract") != "ids":
        return None
    cit = trace.meta.get("citation")
    dropped = cit.get("dropped") if isinstance(cit, dict) else None
    return len(dropped) if isinstance(dropped, list) else 0


def process_row(trace: Trace, task=None) -> dict:
    """The :data:`PROCESS_COLUMNS` of one episode (``task`` gives the workspace and the gold; without it
    the columns that need them are null)."""
    root = task.root if task is not None else None
    seen: dict[str, set[int]] = {}
    n_calls = nothing_new = dup = repeat = sizes = 0
    sigs: set[str] = set()
    for _, c, r in _calls(trace):
        n_calls += 1
        sig = _canonical(c)
        dup += sig in sigs
        sigs.add(sig)
        got = call_lines(trace.toolset, c, r)
        size = sum(len(ns) for ns in got.values())
        old = sum(len(ns & seen.get(p, set())) for p, ns in got.items())
        nothing_new += size == old
        sizes += size
        repeat += old
        _add(seen, got)
    n_shown = sum(len(ns) for ns in seen.values())
    cit = cited(trace.report, root)
    before = shown_before_report(trace)
    n_cited = sum(total(rs) for rs in cit.values())
    n_seen = sum(overlap(rs, before[p]) for p, rs in cit.items() if p in before)
    row = {
        "search_calls": n_calls,
        "lines_shown": n_shown,
        "new_lines_per_call": n_shown / n_calls if n_calls else None,
        "calls_nothing_new": nothing_new,
        "calls_nothing_new_share": nothing_new / n_calls if n_calls else None,
        "duplicate_calls": dup,
        "context_redundancy": repeat / sizes if sizes else None,
        "cited_lines": n_cited,
        "cited_lines_unseen": n_cited - n_seen,
        "unseen_cited_share": (n_cited - n_seen) / n_cited if n_cited else None,
        "cited_ids_dropped": ids_dropped(trace),
        "cited_paths_missing": (sum(file_key(root, p) is None for p in cit) if root else None),
        "reported_without_calls": trace.report is not None and n_calls == 0,
        "calls_lost": sum(t.text.count("<tool_call>") for t in trace.turns if t.text),
        "explore_context_efficiency": (
            context_efficiency(trace, task.gold.explore, root) if task is not None else None
        ),
    }
    return row


def process_schema() -> dict[str, str]:
    """Each column's kind (``int`` | ``bool`` | ``float``), for an empty table's schema."""
    return {c: "int" if c in _INT else "bool" if c in _BOOL else "float" for c in PROCESS_COLUMNS}
