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
    assert "The top policy changes across the 3 gold definitions" in text and "0.500" in text
    fig = field.rank_figure(ranks)
    assert len(fig.data) == 4
