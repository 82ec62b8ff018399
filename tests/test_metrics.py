"""Metrics: path normalisation, PRF, Acc@k / Recall@k, bootstrap intervals, the paired sign-flip test."""

import itertools
import math

import numpy as np
import pytest

from fasbench.stats.metrics import (
    EXACT_MAX_N,
    N_FLIPS,
    _subset_sums,
    all_gold_at_k,
    bootstrap_ci,
    file_prf,
    interval_method,
    line_prf,
    mean_ci,
    merge_ranges,
    normalize_files,
    normalize_path,
    paired_bootstrap,
    paired_differs,
    paired_test,
    paired_words,
    recall_at_k,
    sign_flip_p,
)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("a/b.py", "a/b.py"),
        ("./a/b.py", "a/b.py"),
        ("/a/b.py", "a/b.py"),
        ("/repo/a/b.py", "a/b.py"),
        ("/testbed/a/b.py", "a/b.py"),
        ("a//b.py", "a/b.py"),
        ("`a/b.py`", "a/b.py"),
        (" a\\b.py ", "a/b.py"),
        ("/work/ws/a/b.py", "a/b.py"),
    ],
)
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
    assert all_gold_at_k(ranked, ["a.py", "c.py"], 2) == 0.0 and all_gold_at_k(ranked, ["a.py", "c.py"], 3) == 1.0
    assert recall_at_k(ranked, ["a.py", "c.py"], 2) == 0.5
    assert all_gold_at_k(ranked, [], 3) == 0.0


def test_bootstrap():
    m, lo, hi = bootstrap_ci([1.0] * 10)
    assert m == lo == hi == 1.0
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 0.1, 200)
    m, lo, hi = bootstrap_ci(x)
    assert lo < m < hi and hi - lo < 0.05
    d = paired_bootstrap(x + 0.1, x)  # 200 tasks: Monte Carlo sign flips, p = (0 + 1)/(20000 + 1), never 0
    assert d["diff"] == pytest.approx(0.1) and d["p_value"] == d["p"] == pytest.approx(1 / 20001)
    assert d["ci"].startswith("percentile bootstrap") and d["lo"] == pytest.approx(0.1) == d["hi"]
    with pytest.raises(ValueError, match="same tasks"):
        paired_bootstrap([1, 2], [1])


def test_mean_intervals_by_hand_n1_n3_n12():
    """A mean's interval: none for one value, Student t below 10 values, the percentile bootstrap from 10 on."""
    # n = 1: no spread to estimate: no interval ("n too small"), the value itself as the mean
    m, lo, hi = mean_ci([0.5])
    assert m == 0.5 and math.isnan(lo) and math.isnan(hi) and interval_method(1) == "none (n = 1)"
    # n = 3, values 0, 0.5, 1: mean 0.5, s = 0.5, t(0.975; df 2) = 4.302653: half-width 4.302653 · 0.288675 = 1.242069
    m, lo, hi = mean_ci([0.0, 0.5, 1.0])
    assert m == 0.5 and lo == pytest.approx(-0.742069, abs=1e-6) and hi == pytest.approx(1.742069, abs=1e-6)
    assert interval_method(3) == "Student t (n = 3)"
    # the percentile bootstrap (what runs_table gave before) is [0, 1]'s inner part, far narrower:
    _, blo, bhi = bootstrap_ci([0.0, 0.5, 1.0])
    assert lo < blo and bhi < hi
    # n = 12, six 0s and six 1s: resampled means are k/12, k ~ Binomial(12, 1/2); P(k <= 2) = 0.019 < 0.025
    # < P(k <= 3) = 0.073, so the 2.5% and 97.5% quantiles are 3/12 and 9/12
    assert mean_ci([0.0] * 6 + [1.0] * 6) == (0.5, 0.25, 0.75) and interval_method(12) == "percentile bootstrap"


def test_paired_p_values_by_hand_n1_n4_n9():
    """Exact two-sided sign-flip p = #{s in {-1,+1}^m : |sum s_i d_i| >= |sum d_i|} / 2^m, m nonzero d_i.
    The old bootstrap gave p = 0 for each of the one-signed cases, whatever n."""
    # n = 1: both flips (+d, -d) are as extreme as the data: p = 2/2 = 1; no 95% interval exists.
    r = paired_test([0.7], [0.2])
    assert r["p"] == 1.0 and r["n"] == 1 and math.isnan(r["lo"]) and math.isnan(r["hi"])
    # n = 4, all positive: only s = (+,+,+,+) and (-,-,-,-) reach |sum| = 2: p = 2/16 = 0.125 = p_min.
    r = paired_test([1, 1, 0.5, 1], [0.5, 0, 0, 0.5])
    assert r["p"] == 0.125 and r["p_min"] == 0.125 and r["n"] == 4 and r["diff"] == pytest.approx(0.625)
    assert math.isnan(r["lo"]) and not paired_differs(r)  # 2^4 < 2/0.05: no finite 95% interval
    assert "no difference detectable with n = 4" in paired_words(r) and "2/2^4 = 0.125" in paired_words(r)
    # n = 9, eight +1 and one -1: sum = 7; |T| >= 7 needs at most one task flipped against the data's
    # sign pattern: C(9,0) + C(9,1) for T >= 7 and the mirror for T <= -7: (1 + 9 + 9 + 1)/512 = 20/512.
    d = [1.0] * 8 + [-1.0]
    r = paired_test(d, [0.0] * 9)
    assert r["p"] == 20 / 512 == 0.0390625 and r["test"] == "exact sign-flip (all 2^9 flips)"
    # 95% interval: k = floor(0.05 * 2^8 - 1) + 1 = 12th smallest and largest of the 511 subset means.
    # Subsets holding the -1 and j ones have mean (j - 1)/(j + 1), C(8, j) of them: -1 (1), 0 (8),
    # 1/3 (28) -> the 12th smallest is 1/3; the 255 subsets without the -1 have mean 1 -> hi = 1.
    assert r["lo"] == pytest.approx(1 / 3) and r["hi"] == 1.0 and r["ci"] == "exact sign-flip"
    assert paired_differs(r) and paired_words(r) == "differ at p < 0.05 (p = 0.0391, exact sign-flip, n = 9)"
    # n = 9 with a zero: it adds 0 under either sign, so m = 8; sum = 6, |T| >= 6 with eight ±1:
    # T in {8, 6, -6, -8}: (1 + 8 + 8 + 1)/256 = 18/256.
    r = paired_test([1.0] * 7 + [-1.0, 0.0], [0.0] * 9)
    assert r["p"] == 18 / 256 and r["n"] == 9 and r["n_nonzero"] == 8 and not paired_differs(r)
    assert paired_test([0.3, 0.3], [0.3, 0.3])["p"] == 1.0  # every difference 0


def test_paired_test_matches_brute_force_and_monte_carlo_is_corrected():
    rng = np.random.default_rng(3)
    for n in (2, 5, 7, 10):
        d = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0], size=n)
        flips = np.array(list(itertools.product([-1, 1], repeat=n)))
        assert sign_flip_p(d)[0] == pytest.approx(float((np.abs(flips @ d) >= abs(d.sum()) - 1e-9).mean()))
    # above EXACT_MAX_N: B random flips, p = (b + 1)/(B + 1), never 0, and close to the exact p
    d = rng.normal(0.2, 1.0, size=EXACT_MAX_N + 2)
    p, name, p_min = sign_flip_p(d, n_flips=4000)
    assert "4,000 random flips" in name and p_min == 1 / 4001 and p > 0
    flips_sums, _ = _subset_sums(d)  # the exact p over all 2^22 flips
    exact = float((np.abs(d.sum() - 2 * flips_sums) >= abs(d.sum()) - 1e-9).mean())
    assert abs(p - exact) < 0.03
    assert sign_flip_p(np.ones(40))[0] == 1 / (N_FLIPS + 1)


def test_small_n_intervals_of_shares_stay_in_zero_one():
    """A Student t interval of F-scores near 1 reaches past 1 (0.933 [0.820, 1.047] on 5 tasks in
    notebook 03); a share's interval is clipped to [0, 1], other columns to their declared ranges
    (fasbench.evaluation.episodes.column_bounds reads the declarations: TABLE, REWARDS, the families)."""
    from fasbench.evaluation.episodes import column_bounds
    from fasbench.stats.metrics import mean_ci

    v = [1.0, 1.0, 1.0, 0.833, 0.833]
    m, lo, hi = mean_ci(v)
    assert hi > 1.0  # unclipped
    m2, lo2, hi2 = mean_ci(v, bounds=column_bounds("file_f2"))
    assert (m2, lo2) == (m, lo) and hi2 == 1.0
    assert column_bounds("turns") == column_bounds("wall_s") == (0.0, float("inf"))  # counts and times: >= 0
    assert column_bounds("file_top1") == (0.0, 1.0) and column_bounds("reward_fastcontext") == (-float("inf"), 3.0)
    assert (
        column_bounds("reward_relace_f2")
        == column_bounds("all_gold_at_5")
        == column_bounds("line_recall")
        == (0.0, 1.0)
    )
    # what the old regex on names got wrong: a grounded Relace reward unclipped, a count clipped to 1
    assert column_bounds("reward_grounded_relace") == column_bounds("reward_grounded_relace_hybrid__accuracy") == (0, 1)
    assert column_bounds("wellformed_calls") == column_bounds("cb_gold_lines") == (0.0, float("inf"))
    assert column_bounds("reward_fastcontext__over_penalty") == (0.0, float("inf"))
    # the headline `reward` is bounded as the run's headline reward; unknown: not clipped
    assert column_bounds("reward", "f0.5") == (0.0, 1.0) and column_bounds("reward") is None
    assert column_bounds("reported") == (0.0, 1.0) and column_bounds("no_such_column") is None
