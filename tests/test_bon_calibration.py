"""The stopping classifiers' calibration on held-out data whose true probabilities are known."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB

from fasbench.bon.stop import ConstantClassifier, brier, ece, fit_calibrated, fit_stop, reliability


def synthetic(n, seed):
    """Three copies of one signal (naive Bayes counts it three times: overconfident) plus an
    independent one; the truth is a logistic function of the signals."""
    rng = np.random.default_rng(seed)
    x1, x4 = rng.normal(size=n), rng.normal(size=n)
    X = np.column_stack([x1, x1 + 0.3 * rng.normal(size=n), x1 + 0.3 * rng.normal(size=n), x4])
    p = 1 / (1 + np.exp(-(1.2 * x1 - 0.8 * x4)))
    y = (rng.random(n) < p).astype(int)
    groups = np.arange(n) // 10  # ten states per "task"
    return X, y, p, groups


@pytest.fixture(scope="module")
def data():
    return synthetic(3000, 0), synthetic(3000, 1)


def test_calibration_beats_uncalibrated_baseline(data):
    (X, y, _, g), (Xt, yt, pt, _) = data
    raw = GaussianNB().fit(X, y).predict_proba(Xt)[:, 1]
    cal = fit_calibrated(X, y, g, "isotonic", GaussianNB()).predict_proba(Xt)[:, 1]
    assert brier(yt, cal) < brier(yt, raw) - 0.005
    assert ece(yt, cal) < 0.5 * ece(yt, raw)
    assert ece(yt, raw) > 0.05  # the baseline really is miscalibrated


def test_default_classifier_matches_truth(data):
    (X, y, _, g), (Xt, yt, pt, _) = data
    for method in ("sigmoid", "isotonic"):
        p = fit_calibrated(X, y, g, method).predict_proba(Xt)[:, 1]
        assert ece(yt, p) < 0.05, method
        assert brier(yt, p) < brier(yt, pt) + 0.01, method  # within 0.01 of the Bayes-optimal Brier score
        assert np.mean(np.abs(p - pt)) < 0.06, method


def test_reliability_table_and_edge_cases():
    t = reliability([0, 1, 1, 0], [0.05, 0.95, 0.9, 0.15], bins=10)
    assert [r["bin"] for r in t] == [0, 1, 9] and t[-1]["observed"] == 1.0 and t[-1]["count"] == 2
    X = np.zeros((6, 2))
    one = fit_calibrated(X, [1] * 6, [0, 0, 1, 1, 2, 2])
    assert isinstance(one, ConstantClassifier) and one.predict_proba(X)[0, 1] == 1.0
    with pytest.raises(ValueError, match="calibration"):
        fit_calibrated(np.random.default_rng(0).normal(size=(20, 2)), [0, 1] * 10, range(20), method="platt")
    with pytest.raises(ValueError, match="no training states"):
        fit_stop([])
