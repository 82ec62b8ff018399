"""Metrics: path normalisation, PRF, Acc@k / Recall@k, bootstrap intervals."""

import numpy as np
import pytest

from fasbench.metrics import (acc_at_k, bootstrap_ci, file_prf, line_prf, merge_ranges, normalize_files,
                              normalize_path, paired_bootstrap, recall_at_k)


@pytest.mark.parametrize("raw,expected", [
    ("a/b.py", "a/b.py"), ("./a/b.py", "a/b.py"), ("/a/b.py", "a/b.py"), ("/repo/a/b.py", "a/b.py"),
    ("/testbed/a/b.py", "a/b.py"), ("a//b.py", "a/b.py"), ("`a/b.py`", "a/b.py"), (" a\\b.py ", "a/b.py"),
    ("/work/ws/a/b.py", "a/b.py"),
])
def test_normalize_path(raw, expected):
    assert normalize_path(raw, root="/work/ws") == expected


def test_merge_and_normalize_files():
    assert merge_ranges([[5, 7], [1, 2], [3, 4], [10, 9], [0, 1]]) == [[1, 7], [9, 10]]
    assert normalize_files({"./a.py": [[1, 2]], "a.py": [[3, 3]], "": [[1, 1]]}) == {"a.py": [[1, 3]]}


def test_prf():
    p = file_prf({"a.py": 1, "./b.py": 1}, {"b.py": 1, "c.py": 1})
    assert (p.precision, p.recall, p.n_hit) == (0.5, 0.5, 1) and p.f(1) == 0.5
    assert file_prf({}, {"a.py": 1}).precision == 0.0
    lp = line_prf({"a.py": [[1, 4]]}, {"a.py": [[3, 6]], "new.py": []})
    assert lp.precision == 0.5 and lp.recall == 0.5


def test_acc_recall_at_k():
    ranked = ["a.py", "b.py", "c.py"]
    assert acc_at_k(ranked, ["a.py", "c.py"], 2) == 0.0 and acc_at_k(ranked, ["a.py", "c.py"], 3) == 1.0
    assert recall_at_k(ranked, ["a.py", "c.py"], 2) == 0.5
    assert acc_at_k(ranked, [], 3) == 0.0


def test_bootstrap():
    m, lo, hi = bootstrap_ci([1.0] * 10)
    assert m == lo == hi == 1.0
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 0.1, 200)
    m, lo, hi = bootstrap_ci(x)
    assert lo < m < hi and hi - lo < 0.05
    d = paired_bootstrap(x + 0.1, x)
    assert d["diff"] == pytest.approx(0.1) and d["p_value"] == 0.0
    with pytest.raises(ValueError, match="same tasks"):
        paired_bootstrap([1, 2], [1])
