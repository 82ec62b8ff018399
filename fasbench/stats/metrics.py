"""Localisation metrics: path normalisation, file- and line-level precision/recall/F-beta,
all-gold@k and Recall@k over a report's ranked files (LocAgent's Acc@k, a different metric, is
``fasbench.scoring.localization.locagent_acc_at_k``), intervals of means (:func:`mean_ci`: percentile bootstrap,
Student t below 10 values), and the one paired
test (:func:`paired_test`: exact sign-flip p-value and interval, valid at every n).

Line ranges are handled as intervals by ``fasbench.base.lines`` (``merge_ranges`` is re-exported from
there): ``[s, -1]`` means "to the end of the file", ranges are clipped to the file's length when a
workspace root is known and to ``lines.LINE_CAP`` otherwise."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fasbench.base.lines import file_lines, merge_ranges, overlap, total

_PREFIXES = ("/repo/", "/testbed/", "/workspace/", "repo/", "testbed/")


def normalize_path(path: str, root: str | None = None) -> str:
    """A workspace-relative path with ``/`` separators, whatever prefix the answer used:
    leading ``/``, ``./``, ``/repo/``, ``/testbed/``, or the workspace's absolute root."""
    path, root = str(path), str(root) if root else None
    if (
        _PLAIN.fullmatch(path)
        and not path.startswith(_PREFIXES)
        and not (root and path.startswith(root.rstrip("/") + "/"))
    ):
        return path  # already workspace-relative and clean (most paths): no cache entry, no rewriting
    return _normalize_path(path, root)


_PLAIN = re.compile(r"[\w\-][\w.\-]*(?:/[\w\-][\w.\-]*)*")  # segments never "", "." or ".."


@lru_cache(maxsize=1 << 17)  # a summary row normalises each cited path ~18 times (every reward, every level)
def _normalize_path(path: str, root: str | None) -> str:
    p = path.strip().strip("`'\"").replace("\\", "/")
    if root:
        r = str(root).rstrip("/") + "/"
        if p.startswith(r):
            p = p[len(r) :]
    for pre in _PREFIXES:
        if p.startswith(pre):
            p = p[len(pre) :]
            break
    p = re.sub(r"/+", "/", p)
    parts = [s for s in p.split("/") if s not in ("", ".")]
    return "/".join(parts)


def normalize_files(
    files: Mapping[str, Sequence[Sequence[int]]], root: str | None = None
) -> dict[str, list[list[int]]]:
    """Normalise the paths of a file → ranges mapping, merging duplicates. Ranges are clipped to
    the file's length when ``root`` is an existing workspace holding the file (``[s, -1]`` = to its
    last line), else to ``lines.LINE_CAP`` (see ``fasbench.base.lines``)."""
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


def line_prf(
    pred: Mapping[str, Sequence[Sequence[int]]], gold: Mapping[str, Sequence[Sequence[int]]], root: str | None = None
) -> PRF:
    """Precision/recall over (path, line) pairs; gold files without line ranges do not count.
    Computed on intervals (``fasbench.base.lines``): linear in the number of ranges, whatever their size."""
    p, g = normalize_files(pred, root), normalize_files(gold, root)
    n_pred = sum(total(rs) for rs in p.values())
    n_gold = sum(total(rs) for rs in g.values())
    hit = sum(overlap(rs, g[k]) for k, rs in p.items() if k in g)
    return PRF(hit / n_pred if n_pred else 0.0, hit / n_gold if n_gold else 0.0, n_pred, n_gold, hit)


def all_gold_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1 when every gold file is among the top-k predictions (0 without gold). Stricter than LocAgent's
    Acc@k (``fasbench.scoring.localization.locagent_acc_at_k``: min(|gold|, k) gold items in the top k), which
    scores 1 when there are more than k gold files and the top k are all gold; this scores 0 there."""
    g = {normalize_path(p) for p in gold}
    top = {normalize_path(p) for p in list(ranked)[:k]}
    return float(bool(g) and g <= top)


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of the gold files among the top-k predictions."""
    g = {normalize_path(p) for p in gold}
    top = {normalize_path(p) for p in list(ranked)[:k]}
    return len(g & top) / len(g) if g else 0.0


def bootstrap_ci(
    values: Sequence[float], n: int = 2000, alpha: float = 0.05, seed: int = 0
) -> tuple[float, float, float]:
    """Macro mean and its percentile bootstrap (1 − alpha) interval (at any n; for a table of means use
    :func:`mean_ci`, which is valid below :data:`SMALL_N` values too)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n, x.size))].mean(axis=1)
    return float(x.mean()), float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))


#: Below this many values a mean's interval is Student's t, not the percentile bootstrap, which
#: under-covers at small n (its interval is the spread of resampled means, about (n−1)/n too narrow
#: and blind to tails the sample has not seen; Efron & Tibshirani 1993, ch. 13).
SMALL_N = 10


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's T with integer ``df`` (Abramowitz & Stegun 26.7.3-4, exact)."""
    th = math.atan(t / math.sqrt(df))
    c2, s = math.cos(th) ** 2, math.sin(th)
    if df % 2:  # odd: 2/π (θ + sin θ cos θ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …))
        term, acc = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            acc += term
        return 2 / math.pi * (th + s * math.cos(th) * acc)
    term, acc = 1.0, 1.0  # even: sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        acc += term
    return s * acc


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| ≤ t) = ``level`` (two-sided critical value; 4.303 for 95% at df = 2)."""
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_two_sided(mid, df) < level else (lo, mid)
    return (lo + hi) / 2


def interval_method(n: int) -> str:
    """How :func:`mean_ci` makes the interval of ``n`` values (a label for tables)."""
    return "percentile bootstrap" if n >= SMALL_N else f"Student t (n = {n})" if n >= 2 else f"none (n = {n})"


#: The range a measure's values can take, ``(lo, hi)``: :func:`mean_ci` clips a small-n t interval to it.
#: Each column declares its own where it is defined (a reward in ``fasbench.scoring.reward.REWARDS``, a
#: fixed column in ``fasbench.evaluation.episodes.TABLE``, the generated families in their modules), and
#: ``fasbench.evaluation.episodes.column_bounds`` reads the declarations.
Bounds = tuple[float, float]
#: A share, rate or score in [0, 1] (P/R/F, hit rates, booleans' means).
UNIT: Bounds = (0.0, 1.0)
#: A count, a time or a size: never below 0.
NONNEGATIVE: Bounds = (0.0, math.inf)


def mean_ci(
    values: Sequence[float],
    n: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float, float]:
    """Macro mean and its (1 − alpha) interval, valid at every n: the percentile bootstrap
    (:func:`bootstrap_ci`, ``n`` resamples) from :data:`SMALL_N` values on, Student's t interval
    (mean ± t·s/√k) below, and no interval (nan bounds: "n too small") for one value. ``bounds``
    (lo, hi): the range the values can take (e.g. ``(0, 1)`` for a share or F-score); the t interval,
    which can reach past it, is clipped to it (a percentile bootstrap never leaves the observed range)."""
    x = np.asarray(values, dtype=float)
    if x.size >= SMALL_N:
        return bootstrap_ci(x, n=n, alpha=alpha, seed=seed)
    if x.size < 2:
        return (float(x.mean()) if x.size else float("nan")), float("nan"), float("nan")
    m, half = float(x.mean()), t_quantile(1 - alpha, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    lo, hi = m - half, m + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return m, lo, hi


#: Up to this many nonzero differences the sign-flip test enumerates all 2^n flips (2^20 ≈ 1.05 M,
#: ~0.1 s on one core); above it, :data:`N_FLIPS` random flips.
EXACT_MAX_N = 20
#: Random sign flips of the Monte Carlo test (p = (b + 1)/(B + 1), resolution ~5e-5).
N_FLIPS = 20_000


def _subset_sums(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum and size of every subset of ``d`` (2^len(d) of each, the empty subset first)."""
    sums, sizes = np.zeros(1), np.zeros(1, np.int32)
    for x in d:
        sums, sizes = np.concatenate([sums, sums + x]), np.concatenate([sizes, sizes + 1])
    return sums, sizes


def sign_flip_p(d: Sequence[float], n_flips: int = N_FLIPS, seed: int = 0) -> tuple[float, str, float]:
    """Two-sided sign-flip permutation p-value of H0 "the paired differences ``d`` are symmetric about
    0", statistic |Σ dᵢ| (the mean difference), and the test's name and smallest attainable p.

    Under H0 every sign vector s ∈ {−1, +1}ⁿ is equally likely, so p = #{s : |Σ sᵢdᵢ| ≥ |Σ dᵢ|} / 2ⁿ
    (Fisher 1935; Good, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 3rd ed. 2005).
    A zero difference contributes 0 under either sign, so it leaves p unchanged (it is dropped from
    the enumeration, as the standard sign-flip test does); the smallest attainable p is therefore 2/2^m with m nonzero differences
    (n = 1: p = 1; four differences of one sign: p = 2/16 = 0.125). Up to :data:`EXACT_MAX_N` nonzero
    differences every flip is enumerated; above, B = ``n_flips`` random flips give the Monte Carlo
    p-value (b + 1)/(B + 1) with b the flips at least as extreme, a valid p-value (P(p ≤ u) ≤ u; Phipson &
    Smyth 2010, "Permutation p-values should never be zero")."""
    x = np.asarray(d, float)
    x = x[x != 0]
    m = x.size
    if m == 0:
        return 1.0, "exact sign-flip (no nonzero difference)", 1.0
    obs = abs(float(x.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(x).sum()))  # the same flip summed in another order
    if m <= EXACT_MAX_N:
        sums, _ = _subset_sums(x)
        hits = int((np.abs(x.sum() - 2 * sums) >= obs - tol).sum())
        return hits / 2.0**m, f"exact sign-flip (all 2^{m} flips)", min(1.0, 2.0 ** (1 - m))
    rng = np.random.default_rng(seed)
    b, left = 0, n_flips
    while left:
        k = min(left, 2000)
        s = rng.integers(0, 2, size=(k, m)) * 2 - 1
        b += int((np.abs(s @ x) >= obs - tol).sum())
        left -= k
    return (b + 1) / (n_flips + 1), f"sign-flip, {n_flips:,} random flips", 1 / (n_flips + 1)


def sign_flip_ci(d: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Exact (``level``) confidence interval of the mean difference by inverting the one-sided
    sign-flip tests: the k-th smallest and k-th largest of the 2ⁿ − 1 subset means (Hartigan 1969,
    "Using subsample values as typical values", JASA 64; Good 2005, on confidence intervals from
    permutation tests). A shift δ is kept when neither one-sided test of d − δ rejects at
    (1 − level)/2, with ties counted against rejection, so the coverage is at least ``level`` for
    independent differences symmetric about their mean, at every n. No finite interval reaches ``level`` when
    2ⁿ < 2/(1 − level) (n ≤ 5 at 95%): then (nan, nan). For at most :data:`EXACT_MAX_N` values."""
    x = np.asarray(d, float)
    n = x.size
    if n == 0 or n > EXACT_MAX_N:
        raise ValueError(f"sign_flip_ci: needs 1 to {EXACT_MAX_N} differences (got {n})")
    k = math.floor((1 - level) * 2.0 ** (n - 1) - 1) + 1  # smallest k with (1 + k)/2^n > (1 - level)/2
    if k <= 0:
        return math.nan, math.nan
    sums, sizes = _subset_sums(x)
    means = sums[1:] / sizes[1:]
    lo = np.partition(means, k - 1)[k - 1]
    hi = np.partition(means, means.size - k)[means.size - k]
    return float(lo), float(hi)


def paired_test(
    x: Sequence[float],
    y: Sequence[float],
    level: float = 0.95,
    n_boot: int = 2000,
    n_flips: int = N_FLIPS,
    seed: int = 0,
) -> dict:
    """THE paired comparison (every paired p-value and interval in fasbench comes from here): the mean
    of ``x − y`` over paired tasks, its ``level`` interval, and the two-sided sign-flip p-value.

    - ``p``: :func:`sign_flip_p` — exact for up to :data:`EXACT_MAX_N` nonzero differences, Monte Carlo
      with ``n_flips`` flips and the +1 correction above; ``p_min`` is the smallest p the data could
      give (2/2^m, m = ``n_nonzero``), ``test`` names the test.
    - ``lo``/``hi``: up to :data:`EXACT_MAX_N` tasks the exact sign-flip interval (:func:`sign_flip_ci`;
      nan when n is too small for any interval at ``level``: n ≤ 5 at 95%); above, the percentile
      bootstrap over tasks (``n_boot`` resamples; Efron & Tibshirani 1993, ch. 13), which undercovers in
      small samples (below ~10–20 tasks) and is not used there. ``ci`` names the method.

    Returns ``diff``, ``lo``, ``hi``, ``p``, ``n``, ``n_nonzero``, ``p_min``, ``test``, ``ci``, ``level``;
    :func:`paired_differs` and :func:`paired_words` read it."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.shape != b.shape:
        raise ValueError(f"paired test needs the same tasks in both runs ({a.size} vs {b.size})")
    d = a - b
    nan = math.nan
    if d.size == 0:
        return {
            "diff": nan,
            "lo": nan,
            "hi": nan,
            "p": nan,
            "n": 0,
            "n_nonzero": 0,
            "p_min": nan,
            "test": "none (no paired task)",
            "ci": "none",
            "level": level,
        }
    p, test, p_min = sign_flip_p(d, n_flips, seed)
    if d.size <= EXACT_MAX_N:
        (lo, hi), how = sign_flip_ci(d, level), "exact sign-flip"
        if math.isnan(lo):
            how = f"none (no {level:.0%} interval exists at n = {d.size})"
    else:
        _, lo, hi = bootstrap_ci(d, n=n_boot, alpha=1 - level, seed=seed)
        how = f"percentile bootstrap ({n_boot} resamples)"
    return {
        "diff": float(d.mean()),
        "lo": lo,
        "hi": hi,
        "p": p,
        "n": int(d.size),
        "n_nonzero": int((d != 0).sum()),
        "p_min": p_min,
        "test": test,
        "ci": how,
        "level": level,
    }


def paired_differs(res: dict, alpha: float = 0.05) -> bool:
    """A difference is claimed only when the test rejects (p < ``alpha``) AND the interval excludes 0."""
    lo, hi, p = res.get("lo"), res.get("hi"), res.get("p")
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (lo, hi, p)):
        return False
    return p < alpha and (lo > 0 or hi < 0)


def p_text(p: float) -> str:
    """A p-value as text, exact binary fractions kept: ``0.125``, ``0.0625``, ``0.0391``, ``<0.0001``, ``–``."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    return "<0.0001" if p < 1e-4 else (f"{p:.3g}" if p < 0.1 else f"{p:.3f}")


def fmt_p(p: float) -> str:
    """``p = 0.125``, ``p = 0.0391``, ``p < 0.0001``; ``p = –`` when missing."""
    t = p_text(p)
    return f"p < {t[1:]}" if t.startswith("<") else f"p = {t}"


def paired_words(res: dict, alpha: float = 0.05) -> str:
    """What the test supports, in words, always with n: "differ at p < 0.05 (p = 0.0391, exact
    sign-flip, n = 9)" only when :func:`paired_differs`; otherwise "no difference detectable with n = 4
    (p = 0.125, exact sign-flip; the smallest p 4 nonzero differences can give is 2/2^4 = 0.125)"."""
    n, how = res.get("n", 0), res.get("test", "")
    short = "exact sign-flip" if how.startswith("exact") else how
    if paired_differs(res, alpha):
        return f"differ at p < {alpha:g} ({fmt_p(res['p'])}, {short}, n = {n})"
    out = f"no difference detectable with n = {n} ({fmt_p(res.get('p'))}, {short}"
    m, p_min = res.get("n_nonzero", 0), res.get("p_min")
    if how.startswith("exact") and p_min is not None and not math.isnan(p_min) and p_min >= alpha / 10:
        out += (
            f"; the smallest p {m} nonzero difference{'s' if m != 1 else ''} can give is 2/2^{m} = {p_min:.3g}"
            if m
            else "; every difference is 0"
        )
    elif res.get("p", 1) < alpha:
        out += "; the interval includes 0"
    return out + ")"


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """:func:`paired_test` of ``a − b`` under its older name (the audit and e2e comparisons call it):
    the same keys, plus ``p_value`` = ``p`` (two-sided sign-flip; it was a one-sided bootstrap share,
    0 whenever every task moved the same way, whatever n)."""
    res = paired_test(a, b, level=1 - alpha, n_boot=n, seed=seed)
    return {**res, "p_value": res["p"]}
