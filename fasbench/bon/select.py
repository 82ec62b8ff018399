"""Selectors: turn a pool of rollouts into one answer.

A selector is a function ``rollouts -> Selection``. The answer is a file → ranges mapping; the
``margin`` says how clear the decision was (it feeds the stopping classifiers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from fasbench.bon.pool import Rollout
from fasbench.stats.metrics import merge_ranges


@dataclass
class Selection:
    files: dict[str, list[list[int]]]
    margin: float  # how far the decision is from flipping (selector-specific, in [0, 1])
    votes: dict[str, float] = field(default_factory=dict)  # file → share of rollouts citing it
    chosen: int | None = None  # the rollout index picked, for single-pick selectors


Selector = Callable[[Sequence[Rollout]], Selection]


def votes(rollouts: Sequence[Rollout]) -> dict[str, float]:
    """Share of the rollouts citing each file, most cited first; ties go to the file cited
    earlier on average in the reports (reports list files best first), then by name."""
    n = max(1, len(rollouts))
    count: dict[str, int] = {}
    rank: dict[str, float] = {}
    for r in rollouts:
        for i, p in enumerate(r.files or {}):
            count[p] = count.get(p, 0) + 1
            rank[p] = rank.get(p, 0.0) + i
    keys = sorted(count, key=lambda p: (-count[p], rank[p] / count[p], p))
    return {p: count[p] / n for p in keys}


def _union_ranges(rollouts: Sequence[Rollout], paths: Sequence[str]) -> dict[str, list[list[int]]]:
    out = {}
    for p in paths:
        rs = [rg for r in rollouts for rg in (r.files or {}).get(p, [])]
        out[p] = merge_ranges(rs)
    return out


def majority(rollouts: Sequence[Rollout], threshold: float = 0.5) -> Selection:
    """File-level majority vote: the files cited by at least ``threshold`` of the rollouts
    (the most cited file when none reaches it). Margin: the least share kept minus the largest
    share dropped."""
    v = votes(rollouts)
    if not v:
        return Selection({}, 0.0, v)
    keep = [p for p, s in v.items() if s >= threshold] or [next(iter(v))]
    dropped = [s for p, s in v.items() if p not in keep]
    margin = min(v[p] for p in keep) - (max(dropped) if dropped else 0.0)
    return Selection(_union_ranges(rollouts, keep), margin, v)


def union_topk(rollouts: Sequence[Rollout], k: int = 3) -> Selection:
    """The union of the rollouts' answers, cut to the ``k`` most cited files. Margin: the k-th
    file's share minus the next one's."""
    if k < 1:
        raise ValueError(f"union_topk: k must be >= 1, got {k}")
    v = votes(rollouts)
    if not v:
        return Selection({}, 0.0, v)
    shares = list(v.values())
    keep = list(v)[:k]
    margin = shares[len(keep) - 1] - (shares[len(keep)] if len(shares) > len(keep) else 0.0)
    return Selection(_union_ranges(rollouts, keep), margin, v)


def _pick(rollouts: Sequence[Rollout], scores: Sequence[float], what: str) -> Selection:
    if len(scores) != len(rollouts):
        raise ValueError(f"{what}: {len(scores)} scores for {len(rollouts)} rollouts")
    v = votes(rollouts)
    if not rollouts:
        return Selection({}, 0.0, v)
    order = sorted(range(len(rollouts)), key=lambda i: (-scores[i], rollouts[i].index))
    best = order[0]
    margin = scores[best] - scores[order[1]] if len(order) > 1 else float(scores[best])
    r = rollouts[best]
    return Selection(dict(r.files or {}), float(max(0.0, min(1.0, margin))), v, r.index)


def highest_confidence(rollouts: Sequence[Rollout]) -> Selection:
    """The answer of the rollout with the highest self-confidence (rollouts without one rank last).
    Margin: best confidence minus the runner-up's."""
    if rollouts and all(r.confidence is None for r in rollouts):
        raise ValueError(
            "selector 'confidence' needs rollouts with a self-confidence; this pool has none "
            "(the policy must report one: report_back's optional confidence, Report.confidence)"
        )
    return _pick(rollouts, [r.confidence if r.confidence is not None else -1.0 for r in rollouts], "confidence")


def judge_selector(judge: Callable[[Sequence[Rollout]], Sequence[float]]) -> Selector:
    """A selector from a judge: ``judge(rollouts)`` scores each rollout (higher is better, ideally
    in [0, 1]); the best-scored rollout's answer wins. Margin: best score minus the runner-up's."""
    return lambda rollouts: _pick(rollouts, list(judge(rollouts)) if rollouts else [], "judge")


def jaccard(a: frozenset | set, b: frozenset | set) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets agree fully."""
    u = len(a | b)
    return len(a & b) / u if u else 1.0


def medoid_judge(rollouts: Sequence[Rollout]) -> list[float]:
    """A judge without a model: each rollout's mean Jaccard agreement with the others (the
    medoid answer wins); a rollout without a report scores 0."""
    sets = [r.file_set for r in rollouts]
    out = []
    for i, r in enumerate(rollouts):
        if r.files is None or len(rollouts) == 1:
            out.append(0.0 if r.files is None else 1.0)
            continue
        out.append(sum(jaccard(sets[i], sets[j]) for j in range(len(sets)) if j != i) / (len(sets) - 1))
    return out


SELECTORS: dict[str, Selector] = {
    "majority": majority,
    "union-top1": partial(union_topk, k=1),
    "union-top3": partial(union_topk, k=3),
    "confidence": highest_confidence,
    "medoid": judge_selector(medoid_judge),
}


def get_selector(name_or_fn: str | Selector) -> Selector:
    if callable(name_or_fn):
        return name_or_fn
    if name_or_fn not in SELECTORS:
        raise ValueError(f"unknown selector {name_or_fn!r}; choose one of {', '.join(SELECTORS)} or pass a function")
    return SELECTORS[name_or_fn]
