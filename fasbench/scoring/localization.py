"""Localization metrics at every grain, each with the definition of the work that publishes it, so
that fasbench numbers can stand beside the field's (notebooks/09_field.ipynb, data/field/).

**Rank.** A report is ranked: its order is the rank. Files rank in the order the report lists them;
the regions of a report rank file by file, each file's ranges in the order given
(``ranked_regions``); a file cited without ranges is the whole file (SWE-Explore's
``path`` = ``path:1-(-1)``). Entities rank by the first region that covers them
(fasbench.base.entities maps a range to the functions/classes/modules holding its lines; a whole-file
citation names the file, no entity). Every metric with a k uses that rank.

Sources and definitions (per task; the summary averages over tasks = macro, with bootstrap CIs):

- ``{file,module,class,function}_precision/recall/f1``: FuseSearch and CodeScout's per-instance
  P/R/F1 of the predicted set against the gold set, averaged over tasks. An empty prediction
  scores 0; a task with no gold at a level (e.g. a module-level edit has no function) is left out
  of that level's average (null), as LocAgent leaves out tasks with empty gold.
- ``{file,module,function}_acc_at_{k}``: LocAgent Acc@k (``utils/eval_metric.py::acc_at_k``): 1
  when the gold items among the top k predictions number min(|gold|, k), i.e. every gold item is
  within the top k (or the top k are all gold when there are more than k gold items).
  (the episode table's ``all_gold_at_{k}`` is the untruncated variant: every gold file in the top k.)
- ``{level}_top1``: top-1 accuracy as Agentless/CoSIL report it: the first-ranked item is gold.
- ``line_precision/recall/f1`` (episodes.episode_row, FastContext): (path, line) pairs against the
  gold patch's hunk lines (``gold.edited``).
- ``explore_line_precision/recall/f1``, ``explore_hit_file_rate``, ``explore_noise_file_rate``,
  ``explore_hit_region_rate``: SWE-Explore (``eval.py::ExploreEvaluator`` of
  Last-Humans-Coding-Under-White-Nights/SWE-Explore-Bench, driven by ``eval_runner.py``) against
  the read-core regions of ``gold.explore``, on the top ``EXPLORE_TOP_K`` regions (its
  ``--top-k`` region budget; 5 in the published tables). Ported exactly: ``end == -1`` and
  ``start < 0`` resolve on the file's line count, which eval_runner only knows for gold paths
  (core and optional regions), so an end-relative prediction on another file counts no lines;
  precision 0 on no predicted lines; F1 = 2PR/(P+R); hit-file = |predicted files ∩ core files| /
  |core files| (a file counts when any region names it).
- ``fc_*`` (``fasbench eval --scoring fastcontext``): FastContext's ``benchmark/evaluation/run_score.py``
  (its ``FILE_TYPES`` source filter, the gold of ``parse_patch``: hunk old sides with context, created
  files dropped; file and line P/R/F1 per task, macro over tasks; ``n_no_citation``), ported in
  :func:`fastcontext_row` / :func:`fastcontext_summary`; ``--scoring fastcontext-all`` without the filter.
- LocAgent's evaluation set: the task set ``swebench-lite:locagent`` (fasbench.data.tasksets: 274 of Lite's
  300, its ``filtered_instances`` left out); its Acc@k are the ``*_acc_at_k`` columns above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from fasbench.base.contain import PathRefused, read_bytes
from fasbench.base.entities import entities_at, file_entities
from fasbench.base.lines import merge_ranges, total
from fasbench.base.lines import overlap as line_overlap
from fasbench.stats.metrics import NONNEGATIVE, UNIT, Bounds, normalize_path

KS = (1, 3, 5, 10)  # the k of every @k metric (LocAgent's Acc@k, the episode table's all-gold@k, recall@k)
ENTITY_LEVELS = ("module", "class", "function")
ACC_LEVELS = ("file", "module", "function")  # LocAgent's three
EXPLORE_TOP_K = 5
END_OF_FILE = -1

Region = tuple[str, int, int]


# ---------------------------------------------------------------- ranking


def ranked_regions(files: Mapping[str, Sequence[Sequence[int]]] | None, root: str | None = None) -> list[Region]:
    """The report's regions in rank order; a file without ranges is ``(path, 1, -1)``."""
    out: list[Region] = []
    for p, rs in (files or {}).items():
        q = normalize_path(p, root)
        if not q:
            continue
        if not rs:
            out.append((q, 1, END_OF_FILE))
        for r in rs or []:
            out.append((q, int(r[0]), int(r[1])))
    return out


def ranked_items(regions: Sequence[Region], level: str, root: str | None = None) -> list[str]:
    """Files, or ``path:Qual.name`` entities of ``level``, in the order the regions first cover them."""
    out: list[str] = []
    seen: set[str] = set()
    ents: dict = {}
    for path, s, e in regions:
        if level == "file":
            names = [path]
        elif e == END_OF_FILE or s < 0 or not root:
            names = []
        else:
            if path not in ents:  # once per file, not per region
                ents[path] = file_entities(root, path)
            names = [f"{path}:{q}" for q in entities_at(ents[path], min(s, e), max(s, e))[level]]
        for n in names:
            if n not in seen:  # a set beside the list: a membership test per name was quadratic
                seen.add(n)
                out.append(n)
    return out


# ---------------------------------------------------------------- set and rank metrics


def set_prf(pred: Iterable[str], gold: Iterable[str]) -> tuple[float, float, float] | None:
    """Per-instance (P, R, F1) (FuseSearch / CodeScout); None when the gold is empty."""
    p, g = set(pred), set(gold)
    if not g:
        return None
    hit = len(p & g)
    prec = hit / len(p) if p else 0.0
    rec = hit / len(g)
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def locagent_acc_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """LocAgent Acc@k: gold hits in the top k == min(|gold|, k); None when the gold is empty."""
    g = set(gold)
    if not g:
        return None
    seen, top = set(), []
    for x in ranked:  # duplicates take no extra rank
        if x not in seen:
            seen.add(x)
            top.append(x)
    hits = sum(1 for x in top[:k] if x in g)
    return float(hits == min(len(g), k))


def top1(ranked: Sequence[str], gold: Iterable[str]) -> float | None:
    g = set(gold)
    if not g:
        return None
    return float(bool(ranked) and ranked[0] in g)


# ---------------------------------------------------------------- SWE-Explore (eval.py, ported)


def _resolve(path: str, start: int, end: int, n_lines: Mapping[str, int]) -> tuple[int, int] | None:
    L = n_lines.get(path)
    need_L = end == END_OF_FILE or start < 0
    if need_L and (L is None or L < 1):
        return None
    if need_L:
        e = L if end == END_OF_FILE else end
        s = (L + start + 1) if start < 0 else start
        return max(1, min(s, L)), max(1, min(e, L))
    if end < 1:
        return None
    return max(1, start), end


def _lines(regions: Iterable[Sequence], n_lines: Mapping[str, int]) -> dict[str, list[list[int]]]:
    """The lines the regions cover, per path, as merged intervals (eval.py's ``(path, line)`` set,
    without one entry per line: a region ``[1, 3·10⁷]`` costs as much as ``[1, 2]``)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for path, s, e in regions:
        r = _resolve(path, s, e, n_lines)
        if r and r[0] <= r[1]:
            spans.setdefault(path, []).append(r)
    return {p: merge_ranges(rs, max(b for _, b in rs)) for p, rs in spans.items()}


def _count(lines: Mapping[str, Sequence[Sequence[int]]]) -> int:
    return sum(total(rs) for rs in lines.values())


def _shared(a: Mapping[str, Sequence[Sequence[int]]], b: Mapping[str, Sequence[Sequence[int]]]) -> int:
    return sum(line_overlap(rs, b[p]) for p, rs in a.items() if p in b)


def explore_line_counts(explore: Mapping, root: str | None) -> dict[str, int]:
    """Line counts of the gold paths on the corpus, as eval_runner's ``_build_file_line_counts``
    (``len(text.splitlines())`` of every path a core or optional region of the record names: here
    the regions' paths and ``count_paths``, which keeps the paths of regions relocation dropped),
    read through :mod:`fasbench.base.contain` (inside the root, regular files, at most
    ``contain.MAX_READ_BYTES``; a path it refuses or a longer file has no count)."""
    out: dict[str, int] = {}
    if not root:
        return out
    regions = list(explore.get("core_regions") or []) + list(explore.get("optional_regions") or [])
    for path in {r[0] for r in regions} | set(explore.get("count_paths") or []):
        try:
            data, more = read_bytes(root, path)
        except PathRefused:
            continue
        if not more:
            out[path] = len(data.decode("utf-8", errors="ignore").splitlines())
    return out


def explore_metrics(
    preds: Sequence[Region], explore: Mapping, n_lines: Mapping[str, int], top_k: int | None = EXPLORE_TOP_K
) -> dict[str, float]:
    """SWE-Explore's per-instance metrics of the top ``top_k`` regions (all when None)."""
    preds = list(preds)[:top_k] if top_k else list(preds)
    core_r = [tuple(r) for r in explore.get("core_regions") or []]
    pl, cl = _lines(preds, n_lines), _lines(core_r, n_lines)
    n_pl, n_cl, hit = _count(pl), _count(cl), _shared(pl, cl)
    p = hit / n_pl if n_pl else 0.0
    r = hit / n_cl if n_cl else 0.0
    core_f = set(explore.get("core_files") or [])
    visited = {x[0] for x in preds}
    opt_f = set(explore.get("optional_files") or [])

    def overlap(a, b) -> bool:
        if a[0] != b[0]:
            return False
        ra, rb = _resolve(a[0], a[1], a[2], n_lines), _resolve(b[0], b[1], b[2], n_lines)
        return bool(ra and rb and ra[0] <= rb[1] and rb[0] <= ra[1])

    return {
        "explore_line_precision": p,
        "explore_line_recall": r,
        "explore_line_f1": 2 * p * r / (p + r) if p + r else 0.0,
        "explore_hit_file_rate": len(visited & core_f) / len(core_f) if core_f else 0.0,
        "explore_noise_file_rate": len(visited - core_f - opt_f) / len(visited) if visited else 0.0,
        "explore_hit_region_rate": (
            sum(any(overlap(c, x) for x in preds) for c in core_r) / len(core_r) if core_r else 0.0
        ),
    }


EXPLORE_COLUMNS = (
    "explore_line_precision",
    "explore_line_recall",
    "explore_line_f1",
    "explore_hit_file_rate",
    "explore_noise_file_rate",
    "explore_hit_region_rate",
)


# ---------------------------------------------------------------- one summary row


def localization_row(task, trace) -> dict:
    """The columns this module adds to a summary.parquet row (None = not defined for the task)."""
    root = task.root
    rep = trace.report
    regions = ranked_regions(rep.files if rep is not None else {}, root)
    gold_ents = task.gold.entities or {}
    gold = {"file": [normalize_path(p) for p in task.gold.edited]}
    for lv in ENTITY_LEVELS:
        gold[lv] = list(gold_ents.get(lv, [])) if gold_ents else []
    row: dict = {"entity_gold": bool(gold_ents), "n_regions_reported": len(regions)}
    for lv in ("file",) + ENTITY_LEVELS:
        ranked = ranked_items(regions, lv, root)
        has = lv == "file" or bool(gold_ents)
        if (
            lv != "file"
        ):  # file P/R/F are the episode table's file_precision/recall/f1 (fasbench.scoring.reward.report_files_prf)
            prf = set_prf(ranked, gold[lv]) if has else None
            for name, i in (("precision", 0), ("recall", 1), ("f1", 2)):
                row[f"{lv}_{name}"] = prf[i] if prf else None
        row[f"{lv}_top1"] = top1(ranked, gold[lv]) if has else None
        if lv in ACC_LEVELS:
            for k in KS:
                row[f"{lv}_acc_at_{k}"] = locagent_acc_at_k(ranked, gold[lv], k) if has else None
    ex = task.gold.explore
    if ex is not None and ex.get("core_regions"):
        row.update(explore_metrics(regions, ex, explore_line_counts(ex, root)))
    else:
        row.update({c: None for c in EXPLORE_COLUMNS})
    return row


def localization_columns(df) -> list[str]:
    """The metric columns of this module present in a summary frame (for aggregate()), with
    ContextBench's ``cb_*`` (fasbench.scoring.contextbench)."""
    names = [
        c
        for c in df.columns
        if c.startswith(("explore_", "cb_")) or c.split("_")[0] in ("file", "module", "class", "function")
    ]
    return [c for c in names if df[c].dtype.is_numeric() or str(df[c].dtype) == "Null"]


# ---------------------------------------------------------------- FastContext's run_score.py (ported)
# benchmark/evaluation/run_score.py and utils.py of Microsoft's FastContext release (the history of
# github.com/T0mSIlver/fastcontext, commit 0dc077f; unchanged at 913afd3 but for a file encoding).

#: run_score.py line 12: the source files its gold keeps ("C, C++, Go, Java, JavaScript/TypeScript,
#: PHP, Ruby, and Rust"). No ``.py``: on a Python benchmark every gold is empty; the release then
#: raises ZeroDivisionError (utils.py line 119, ``calculate_explore_score`` divides by the gold size;
#: checked on all 800 SWE-bench Lite + Verified patches), fasbench scores such a task 0 (its P/R/F1 as
#: the lines before the division define them).
FC_FILE_TYPES = (".c", ".cpp", ".h", ".hpp", ".go", ".java", ".js", ".ts", ".tsx", ".php", ".rb", ".rs")
#: ``--scoring`` names: the release's filter, or none (every file of the patch).
FC_SCORINGS = {"fastcontext": FC_FILE_TYPES, "fastcontext-all": None}
_FC_FILE = re.compile(r"^diff --git a/(.+) b/(.+)$", re.MULTILINE)
_FC_HUNK = re.compile(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@")


def fc_parse_patch(text: str, file_types: Sequence[str] | None = FC_FILE_TYPES) -> list[Region]:
    """The gold of ``utils.parse_patch`` (lines 180-227): per ``diff --git`` section of a file whose
    name ends with one of ``file_types`` (None: every file), the old-side range of each hunk, context
    included (``start .. start + count - 1``). As released: a hunk header without both counts
    (``@@ -5 +5 @@``) is skipped, and so is a created file's ``@@ -0,0 …`` hunk."""
    out: list[Region] = []
    for section in (s for s in re.split(r"(?=^diff --git a/)", text or "", flags=re.MULTILINE) if len(s)):
        files = _FC_FILE.findall(section)
        if len(files) != 1:
            continue
        path = files[0][0]
        if file_types is not None and not any(path.endswith(ft) for ft in file_types):
            continue
        body = "\n".join(section.splitlines()[3:]).strip()
        for h in re.split(r"(?=^@@ -\d+,\d+ \+\d+,\d+ @@)", body, flags=re.MULTILINE):
            m = _FC_HUNK.match(h)
            if not m:
                continue
            start, n = int(m.group(1)), int(m.group(2))
            if start == 0 and n == 0:
                continue
            out.append((path, start, start + n - 1))
    return out


def _fc_lines(regions: Iterable[Region]) -> dict[str, list[list[int]]]:
    """Per path, the merged lines ``range(start, end + 1)`` covers (a reversed range: none)."""
    spans: dict[str, list[list[int]]] = {}
    for p, a, b in regions:
        if a <= b:
            spans.setdefault(p, []).append([a, b])
    out = {}
    for p, rs in spans.items():
        rs.sort()
        merged = [rs[0]]
        for a, b in rs[1:]:
            if a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out[p] = merged
    return out


def _fc_prf(hit: int, n_pred: int, n_true: int) -> tuple[float, float, float]:
    p = hit / n_pred if n_pred > 0 else 0.0
    r = hit / n_true if n_true > 0 else 0.0
    return p, r, (2 * (p * r) / (p + r) if p + r > 0 else 0.0)


def fc_scores(gold: Sequence[Region], citations: Sequence[Region]) -> dict[str, float]:
    """``calculate_score_file`` and ``calculate_score_line`` (utils.py lines 124-177): file P/R/F1 of
    the cited paths against the gold paths, line P/R/F1 of the ``(path, line)`` pairs."""
    true_f, pred_f = {g[0] for g in gold}, {c[0] for c in citations}
    fp, fr, ff = _fc_prf(len(true_f & pred_f), len(pred_f), len(true_f))
    tl, pl = _fc_lines(gold), _fc_lines(citations)
    n_t, n_p = sum(total(v) for v in tl.values()), sum(total(v) for v in pl.values())
    lp, lr, lf = _fc_prf(sum(line_overlap(v, tl[k]) for k, v in pl.items() if k in tl), n_p, n_t)
    return {
        "fc_file_precision": fp,
        "fc_file_recall": fr,
        "fc_file_f1": ff,
        "fc_n_citation_files": len(pred_f),
        "fc_n_patch_files": len(true_f),
        "fc_line_precision": lp,
        "fc_line_recall": lr,
        "fc_line_f1": lf,
        "fc_n_citation_lines": n_p,
        "fc_n_patch_lines": n_t,
    }


def fc_citations(files: Mapping[str, Sequence[Sequence[int]]] | None, root: str | None = None) -> list[Region]:
    """A report's citations as ``parse_final_answer`` yields them: one per range, the path relative
    to the workspace (fasbench.stats.metrics.normalize_path; the release compares the paths as its input
    file holds them, and the script that wrote that file is not released). A file cited without a
    range is no citation (the release's parser needs ``path:N``)."""
    out: list[Region] = []
    for p, rs in (files or {}).items():
        q = normalize_path(p, root)
        for r in rs or []:
            out.append((q, int(r[0]), int(r[1])))
    return out


def fastcontext_row(task, trace, file_types: Sequence[str] | None = FC_FILE_TYPES) -> dict:
    """The ``fc_*`` columns of a summary row: run_score.py's per-task scores (its loop, lines 45-54),
    ``fc_no_citation`` (counted into ``n_no_citation``) and where the gold came from: ``patch`` (the
    task's ``meta["patch"]``, parsed as the release does: created files and count-less hunks drop out)
    or ``gold`` (no patch: ``gold.edited`` under the same file filter, created files (no ranges) left out)."""
    patch = (task.meta or {}).get("patch")
    if patch:
        gold, source = fc_parse_patch(patch, file_types), "patch"
    else:
        gold = [
            (normalize_path(p), int(a), int(b))
            for p, rs in task.gold.edited.items()
            if file_types is None or any(p.endswith(ft) for ft in file_types)
            for a, b in rs or []
        ]
        source = "gold"
    cites = fc_citations(trace.report.files if trace.report is not None else {}, task.root)
    return {
        **fc_scores(gold, cites),
        "fc_no_citation": not cites,
        "fc_gold": source,
        "fc_filter": "release" if file_types == FC_FILE_TYPES else ("none" if file_types is None else "custom"),
    }


def fastcontext_warning(df, scoring: str) -> str | None:
    """A warning when ``--scoring fastcontext`` found no gold file in some tasks: the release's
    ``FILE_TYPES`` filter (:data:`FC_FILE_TYPES`) has no ``.py``, so every Python task scores 0 under it."""
    if scoring != "fastcontext" or not df.height or "fc_n_patch_files" not in df.columns:
        return None
    empty = int((df["fc_n_patch_files"].fill_null(0) == 0).sum())
    if not empty:
        return None
    return (
        f"warning: --scoring fastcontext kept no gold file in {empty} of {df.height} episodes: the release's "
        f"FILE_TYPES filter ({' '.join(FC_FILE_TYPES)}) has no .py, so these score 0; "
        f"--scoring fastcontext-all scores every file"
    )


def fastcontext_summary(df) -> dict:
    """run_score.py's printed result (lines 57-78) from the ``fc_*`` columns of a summary frame: macro
    means over its rows and ``n_no_citation``."""

    def mean(c):
        return float(df[c].mean()) if df.height else 0.0

    return {
        "score_file": {
            k: mean(f"fc_{c}")
            for k, c in (
                ("precision", "file_precision"),
                ("recall", "file_recall"),
                ("f1", "file_f1"),
                ("n_citation_files", "n_citation_files"),
                ("n_patch_files", "n_patch_files"),
            )
        },
        "score_line": {
            k: mean(f"fc_{c}")
            for k, c in (
                ("precision", "line_precision"),
                ("recall", "line_recall"),
                ("f1", "line_f1"),
                ("n_citation_lines", "n_citation_lines"),
                ("n_patch_lines", "n_patch_lines"),
            )
        },
        "n_no_citation": int(df["fc_no_citation"].sum()) if df.height else 0,
    }


#: The range of each numeric column of :func:`localization_row` and :func:`fastcontext_row` (their
#: intervals are clipped to it): shares, scores and hit rates in [0, 1], counts never below 0.
LOCALIZATION_BOUNDS: dict[str, Bounds] = {
    "entity_gold": UNIT,
    "n_regions_reported": NONNEGATIVE,
    **{f"{lv}_{m}": UNIT for lv in ENTITY_LEVELS for m in ("precision", "recall", "f1")},
    **{f"{lv}_top1": UNIT for lv in ("file",) + ENTITY_LEVELS},
    **{f"{lv}_acc_at_{k}": UNIT for lv in ACC_LEVELS for k in KS},
    **dict.fromkeys(EXPLORE_COLUMNS, UNIT),
    **{f"fc_{lv}_{m}": UNIT for lv in ("file", "line") for m in ("precision", "recall", "f1")},
    **dict.fromkeys(
        ("fc_n_citation_files", "fc_n_patch_files", "fc_n_citation_lines", "fc_n_patch_lines"), NONNEGATIVE
    ),
    "fc_no_citation": UNIT,
}
