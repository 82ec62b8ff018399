"""The two stopping classifiers, calibrated: Resolve-Now (RN, P(the selector succeeds on the
current pool)) and the success-after-one-more-batch classifier whose difference from RN is
Resolve-Later (RL = P(success at the next checkpoint) − RN).

Both are a scikit-learn pipeline (median impute → standardise → logistic regression) wrapped in
``CalibratedClassifierCV`` whose folds group the states by task, so that a task's states never sit
on both sides of a calibration split. ``cross_fit`` gives out-of-fold probabilities for the
training tasks (what thresholds are tuned on); ``fit_stop`` fits on all of them (what the test
split is scored with).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, StratifiedGroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from fasbench.bon.features import FEATURES


class ConstantClassifier:
    """Predicts the training rate; used when a training set has a single class."""

    def __init__(self, rate: float):
        self.rate = float(rate)

    def predict_proba(self, X) -> np.ndarray:
        p = np.full(len(X), self.rate)
        return np.column_stack([1 - p, p])


def base_model(model: str = "logistic"):
    """The uncalibrated base estimator: ``logistic`` or ``hgb`` (histogram gradient boosting)."""
    if model == "logistic":
        return make_pipeline(
            SimpleImputer(strategy="median", keep_empty_features=True),
            StandardScaler(),
            LogisticRegression(C=1.0, max_iter=2000),
        )
    if model == "hgb":
        return HistGradientBoostingClassifier(max_depth=3, max_iter=100, learning_rate=0.05, min_samples_leaf=20)
    raise ValueError(f"unknown model {model!r}; choose logistic or hgb")


def fit_calibrated(
    X: np.ndarray, y: np.ndarray, groups: Sequence, method: str = "auto", model="logistic", n_splits: int = 5
):
    """A classifier calibrated on held-out task folds (``CalibratedClassifierCV`` with
    group-aware splits). ``method``: ``isotonic``, ``sigmoid`` or ``auto`` (isotonic from 1000
    rows, as scikit-learn advises; sigmoid below). ``model`` is a name for ``base_model`` or an
    unfitted estimator."""
    X, y, groups = np.asarray(X, float), np.asarray(y, int), np.asarray(groups)
    if len(X) != len(y) or len(y) != len(groups):
        raise ValueError(f"fit_calibrated: {len(X)} rows, {len(y)} labels, {len(groups)} groups")
    if len(np.unique(y)) < 2:
        return ConstantClassifier(y.mean() if len(y) else 0.5)
    if method == "auto":
        method = "isotonic" if len(y) >= 1000 else "sigmoid"
    if method not in ("isotonic", "sigmoid"):
        raise ValueError(f"unknown calibration {method!r}; choose isotonic, sigmoid or auto")
    k = min(n_splits, len(np.unique(groups)))
    splits = []
    if k >= 2:
        cv = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=0)
        splits = [
            (tr, te) for tr, te in cv.split(X, y, groups) if len(np.unique(y[tr])) == 2 and len(np.unique(y[te])) >= 1
        ]
    est = base_model(model) if isinstance(model, str) else model
    with threadpool_limits(1):  # tiny problems: BLAS threads only fight over a shared CPU
        if len(splits) < 2:  # too few tasks to hold folds out: fit the base model as it is
            return est.fit(X, y)
        return CalibratedClassifierCV(est, method=method, cv=splits).fit(X, y)


def matrix(rows: Sequence[dict], features: Sequence[str] = FEATURES) -> np.ndarray:
    missing = [f for f in features if rows and f not in rows[0]]
    if missing:
        raise ValueError(f"state rows lack feature(s) {missing}")
    return np.array([[r[f] for f in features] for r in rows], float)


@dataclass
class StopClassifiers:
    """RN and the one-more-batch classifier over the same features."""

    features: list[str]
    rn: object
    later: object

    def predict(self, rows: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
        """(p_now, p_later) per state; at the last checkpoint there is no later, so p_later = p_now.
        RL = p_later − p_now may be negative (a vote can get worse with more rollouts)."""
        if not rows:
            return np.zeros(0), np.zeros(0)
        X = matrix(rows, self.features)
        p_now = self.rn.predict_proba(X)[:, 1]
        p_later = self.later.predict_proba(X)[:, 1]
        last = np.array([r["stage"] == r["n_stages"] - 1 for r in rows])
        return p_now, np.where(last, p_now, p_later)


def fit_stop(
    rows: Sequence[dict], features: Sequence[str] = FEATURES, method: str = "auto", model="logistic", n_splits: int = 5
) -> StopClassifiers:
    """Fit RN on ``success`` and the later classifier on ``success_next``."""
    if not rows:
        raise ValueError("fit_stop: no training states")
    X, groups = matrix(rows, features), [r["task_id"] for r in rows]
    rn = fit_calibrated(X, [r["success"] for r in rows], groups, method, model, n_splits)
    later = fit_calibrated(X, [r["success_next"] for r in rows], groups, method, model, n_splits)
    return StopClassifiers(list(features), rn, later)


def cross_fit(
    rows: Sequence[dict],
    features: Sequence[str] = FEATURES,
    method: str = "auto",
    model="logistic",
    n_splits: int = 5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold (p_now, p_later) for every row, folds by task: each task's states are scored
    by classifiers that never saw that task."""
    rows = list(rows)
    tasks = np.array([r["task_id"] for r in rows])
    uniq = np.unique(tasks)
    p_now, p_later = np.zeros(len(rows)), np.zeros(len(rows))
    k = min(n_splits, len(uniq))
    if k < 2:
        raise ValueError(f"cross_fit needs states of at least 2 tasks, got {len(uniq)}")
    # shuffle the task → fold assignment reproducibly (GroupKFold alone is deterministic by size)
    perm = {t: i for i, t in enumerate(np.random.default_rng(seed).permutation(uniq))}
    for tr, te in GroupKFold(n_splits=k).split(rows, groups=[perm[t] for t in tasks]):
        m = fit_stop([rows[i] for i in tr], features, method, model, n_splits)
        a, b = m.predict([rows[i] for i in te])
        p_now[te], p_later[te] = a, b
    return p_now, p_later


# ------------------------------------------------------------------ calibration diagnostics


def brier(y: Sequence[int], p: Sequence[float]) -> float:
    y, p = np.asarray(y, float), np.asarray(p, float)
    return float(np.mean((p - y) ** 2))


def reliability(y: Sequence[int], p: Sequence[float], bins: int = 10) -> list[dict]:
    """Reliability table: per probability bin, the mean prediction, the observed rate and the count."""
    y, p = np.asarray(y, float), np.asarray(p, float)
    idx = np.minimum((p * bins).astype(int), bins - 1)
    return [
        {
            "bin": b,
            "p_mean": float(p[idx == b].mean()),
            "observed": float(y[idx == b].mean()),
            "count": int((idx == b).sum()),
        }
        for b in range(bins)
        if (idx == b).any()
    ]


def ece(y: Sequence[int], p: Sequence[float], bins: int = 10) -> float:
    """Expected calibration error: the count-weighted mean |observed − predicted| over bins."""
    t = reliability(y, p, bins)
    n = sum(r["count"] for r in t)
    return float(sum(r["count"] * abs(r["observed"] - r["p_mean"]) for r in t) / n) if n else float("nan")
