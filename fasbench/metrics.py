"""Localisation metrics: path normalisation, file- and line-level precision/recall/F-beta,
Acc@k and Recall@k (as LocAgent defines them), bootstrap confidence intervals.

Line ranges are handled as intervals by ``fasbench.lines`` (``merge_ranges`` is re-exported from
there): ``[s, -1]`` means "to the end of the file", ranges are clipped to the file's length when a
workspace root is known and to ``lines.LINE_CAP`` otherwise."""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from fasbench.lines import file_lines, merge_ranges, overlap, total

_PREFIXES = ("/repo/", "/testbed/", "/workspace/", "repo/", "testbed/")


def normalize_path(path: str, root: str | None = None) -> str:
    """A workspace-relative path with ``/`` separators, whatever prefix the answer used:
    leading ``/``, ``./``, ``/repo/``, ``/testbed/``, or the workspace's absolute root."""
    path, root = str(path), str(root) if root else None
    if _PLAIN.fullmatch(path) and not path.startswith(_PREFIXES) and not (root and path.startswith(root.rstrip("/") + "/")):
        return path  # already workspace-relative and clean (most paths): no cache entry, no rewriting
    return _normalize_path(path, root)


_PLAIN = re.compile(r"[\w\-][\w.\-]*(?:/[\w\-][\w.\-]*)*")  # segments never "", "." or ".."


@lru_cache(maxsize=1 << 17)  # a summary row normalises each cited path ~18 times (every reward, every level)
def _normalize_path(path: str, root: str | None) -> str:
    p = path.strip().strip("`'\"").replace("\\", "/")
    if root:
        r = str(root).rstrip("/") + "/"
        if p.startswith(r):
            p = p[len(r):]
    for pre in _PREFIXES:
        if p.startswith(pre):
            p = p[len(pre):]
            break
    p = re.sub(r"/+", "/", p)
    parts = [s for s in p.split("/") if s not in ("", ".")]
    return "/".join(parts)


def normalize_files(files: Mapping[str, Sequence[Sequence[int]]], root: str | None = None) -> dict[str, list[list[int]]]:
    """Normalise the paths of a file → ranges mapping, merging duplicates. Ranges are clipped to
    the file's length when ``root`` is an existing workspace holding the file (``[s, -1]`` = to its
    last line), else to ``lines.LINE_CAP`` (see ``fasbench.lines``)."""
    memo = _MEMO.get()
    if memo is not None:
        hit = memo.get((id(files), root))
        if hit is not None and hit[0] is files:
            return hit[1]
    out: dict[str, list] = {}
    for p, rs in files.items():
        key = normalize_path(p, root)
        if not key:
            continue
        out.setdefault(key, []).extend(rs or ())
    got = {k: merge_ranges(v, file_lines(root, k) if v else None) for k, v in out.items()}
    if memo is not None:  # the objects are kept alive with their entries, so an id is never reused
        memo[(id(files), root)] = (files, got)
        memo[(id(got), root)] = (got, got)
    return got


_MEMO: ContextVar[dict | None] = ContextVar("fasbench_normalize_memo", default=None)


@contextmanager
def scoring_memo():
    """Within the block, :func:`normalize_files` of the same mapping object (and of its own result)
    is computed once: one summary row normalises a report ~11 times (every reward, every level),
    which for a report of 200k files cost ~1.8M file stats. The mappings must not change within the
    block, and a result is shared, not copied (read it, do not mutate it)."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def fbeta(p: float, r: float, beta: float) -> float:
    """F-beta from precision and recall; 0 when both are 0."""
    b2 = beta * beta
    d = b2 * p + r
    return (1 + b2) * p * r / d if d > 0 else 0.0


@dataclass
class PRF:
    precision: float
    recall: float
    n_pred: int
    n_gold: int
    n_hit: int

    def f(self, beta: float = 1.0) -> float:
        return fbeta(self.precision, self.recall, beta)


def set_prf(pred: set, gold: set) -> PRF:
    """Precision and recall of a predicted set; an empty prediction has precision 0."""
    hit = len(pred & gold)
    return PRF(hit / len(pred) if pred else 0.0, hit / len(gold) if gold else 0.0, len(pred), len(gold), hit)


def file_prf(pred: Mapping[str, object], gold: Mapping[str, object], root: str | None = None) -> PRF:
    return set_prf({normalize_path(p, root) for p in pred} - {""}, {normalize_path(p, root) for p in gold} - {""})


def line_prf(pred: Mapping[str, Sequence[Sequence[int]]], gold: Mapping[str, Sequence[Sequence[int]]],
             root: str | None = None) -> PRF:
    """Precision/recall over (path, line) pairs; gold files without line ranges do not count.
    Computed on intervals (``fasbench.lines``): linear in the number of ranges, whatever their size."""
    p, g = normalize_files(pred, root), normalize_files(gold, root)
    n_pred = sum(total(rs) for rs in p.values())
    n_gold = sum(total(rs) for rs in g.values())
    hit = sum(overlap(rs, g[k]) for k, rs in p.items() if k in g)
    return PRF(hit / n_pred if n_pred else 0.0, hit / n_gold if n_gold else 0.0, n_pred, n_gold, hit)


def acc_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """LocAgent Acc@k: 1 when every gold file is among the top-k predictions."""
    g = {normalize_path(p) for p in gold}
    top = {normalize_path(p) for p in list(ranked)[:k]}
    return float(bool(g) and g <= top)


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of the gold files among the top-k predictions."""
    g = {normalize_path(p) for p in gold}
    top = {normalize_path(p) for p in list(ranked)[:k]}
    return len(g & top) / len(g) if g else 0.0


def bootstrap_ci(values: Sequence[float], n: int = 2000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float, float]:
    """Macro mean and its percentile bootstrap (1 − alpha) interval."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)
    return float(x.mean()), float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n: int = 2000, alpha: float = 0.05,
                     seed: int = 0) -> dict:
    """Mean difference a − b over the same tasks, its interval, and the share of resamples where
    a does not beat b (a one-sided p-value)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.shape != y.shape:
        raise ValueError(f"paired bootstrap needs the same tasks in both runs ({x.size} vs {y.size})")
    d = x - y
    if d.size == 0:
        return {"diff": float("nan"), "lo": float("nan"), "hi": float("nan"), "p_value": float("nan"), "n": 0}
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n, d.size))].mean(axis=1)
    return {"diff": float(d.mean()), "lo": float(np.quantile(means, alpha / 2)),
            "hi": float(np.quantile(means, 1 - alpha / 2)), "p_value": float((means <= 0).mean()), "n": int(d.size)}
