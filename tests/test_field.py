"""The shipped published results and the side-by-side helpers of notebook 09 (fasbench/field.py)."""

import polars as pl

from fasbench import field
from fasbench.records import Gold, Task


def test_published_table_is_complete():
    pub = field.published()
    assert pub.height >= 20 and pub["value"].null_count() == 0 and pub["source"].null_count() == 0
    assert set(pub["fasbench_column"]) <= {"file_f1", "function_f1", "file_acc_at_5", "explore_line_precision",
                                           "explore_line_recall", "explore_line_f1", "explore_hit_file_rate"}
    row = pub.filter((pl.col("model") == "CodeScout-4B") & (pl.col("benchmark") == "SWE-bench Verified")
                     & (pl.col("fasbench_column") == "function_f1"))
    assert row["value"].to_list() == [36.78]


def _df():
    rows = []
    for i in range(6):
        rows.append({"task_id": f"t{i}", "policy": "a", "line_f1": 0.5, "function_f1": 0.1, "explore_line_f1": 0.2,
                     "file_f1": 0.9})
        rows.append({"task_id": f"t{i}", "policy": "b", "line_f1": 0.3, "function_f1": 0.4 if i else None,
                     "explore_line_f1": 0.2, "file_f1": 0.5})
    return pl.DataFrame(rows)


def test_top_policy_change_is_claimed_only_when_paired_tests_support_it():
    """Two policies that swap places under two golds: claimed when a leads on 8 of 9 tasks under one
    gold and b on 8 of 9 under the other (exact p = 2·(1 + 9)/2^9 each); not when the leads hold on 6 of 9."""
    def frame(n, lead):
        rows = []
        for i in range(n):
            up = i < lead  # the leader's margin holds on the first `lead` tasks, reverses on the rest
            rows.append({"task_id": f"t{i}", "policy": "a", "line_f1": 0.6 if up else 0.4,
                         "function_f1": 0.2 if up else 0.5})
            rows.append({"task_id": f"t{i}", "policy": "b", "line_f1": 0.4 if up else 0.6,
                         "function_f1": 0.5 if up else 0.2})
        return pl.DataFrame(rows)

    golds = {k: field.GOLDS[k] for k in ("gold-patch hunks", "functions")}
    # 9 tasks, a ahead on 8 (±0.2 under hunks, ±0.3 under functions): |T| >= 7 of 9 unit steps,
    # p = (1 + 9 + 9 + 1)/2^9 = 0.0391 < 0.05 and the exact interval is above 0 in both golds
    ranks = field.gold_ranks(frame(9, 8), golds, n_boot=200)
    hunks_b = ranks.filter((pl.col("gold") == "gold-patch hunks") & (pl.col("policy") == "b")).row(0, named=True)
    assert hunks_b["top"] == "a" and hunks_b["vs_top_p"] == 20 / 512 and hunks_b["vs_top_lo"] > 0
    text = field.top_sentence(ranks)
    assert text.startswith("The top policy changes across the gold definitions (gold-patch hunks: a, functions: b)")
    assert "p = 0.0391, n = 9" in text
    # 9 tasks, a ahead on 6: p = 2·(1 + 9 + 36 + 84)/512 = 0.508: the tops still differ by point estimate
    ranks = field.gold_ranks(frame(9, 6), golds, n_boot=200)
    text = field.top_sentence(ranks)
    assert text.startswith("The point-estimate top policy differs") and "p = 0.508, n = 9" in text


def test_ranks_beside_and_findings():
    df = _df()
    ranks = field.gold_ranks(df, n_boot=200)
    r = {(x["gold"], x["policy"]): (x["rank"], x["n"]) for x in ranks.iter_rows(named=True)}
    assert r[("gold-patch hunks", "a")] == (1, 6) and r[("functions", "b")] == (1, 5)  # null gold: left out
    assert r[("read regions", "a")][0] == r[("read regions", "b")][0] == 1  # ties share the better rank
    tasks = [Task("t0", "q", "o/r", Gold({"a.py": []}), meta={"sets": ["verified"],
                                                               "corpus": {"mode": "offline", "package": "Django",
                                                                          "release": "4.0"}})]
    side = field.beside(df, tasks, n_boot=200)
    assert set(side["benchmark"]) == {"SWE-bench Verified"}  # no Lite/Pro rows for Verified-only tasks
    assert set(side["metric"]) == {"file_f1", "function_f1", "explore_line_f1"}
    a = side.filter((pl.col("metric") == "file_f1") & (pl.col("fasbench_policy") == "a"))
    assert a["fasbench"].unique().to_list() == [90.0] and a["fasbench_n"][0] == 6
    assert "Django==4.0 (1)" in field.corpus_kind(tasks)
    text = field.findings(ranks, side, 6)
    # a leads on hunks (6 of 6 tasks, p = 2/2^6) but b's lead on functions rests on 5 tasks, where the
    # smallest exact p is 2/2^5 = 0.0625: the change of top policy is not supported
    assert "The top policy changes" not in text and "0.500" in text
    assert "paired tests do not show that the ranking changes" in text
    assert "under functions, b − a = +0.300, p = 0.0625, n = 5 (smallest attainable p = 0.0625)" in text
    assert "under gold-patch hunks, a − b = +0.200, p = 0.0312, n = 6" in text
    fig = field.rank_figure(ranks)
    assert len(fig.data) == 4
