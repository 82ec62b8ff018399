"""The shipped published results and the side-by-side helpers of notebook 09 (fasbench/studies/field.py)."""

import polars as pl

from fasbench.records import Gold, Task
from fasbench.stats.findings import Findings
from fasbench.stats.tables import to_latex
from fasbench.studies import field


def test_published_table_is_complete():
    pub = field.published()
    assert pub.height >= 20
    for c in ("source_url", "status", "benchmark", "gold", "budget", "source_table"):
        assert pub[c].null_count() == 0, c
    assert set(pub["status"]) == {"valid", "secondary", "withdrawn"}
    assert pub.filter(pl.col("status") != "withdrawn")["value"].null_count() == 0
    cb = {f"cb_{lv}_{m}" for lv in ("file", "block", "line") for m in ("recall", "precision", "f1")}
    assert (
        set(pub["fasbench_column"].drop_nulls())
        <= {
            "file_f1",
            "function_f1",
            "file_acc_at_5",
            "function_top1",
            "explore_line_precision",
            "explore_line_recall",
            "explore_line_f1",
            "explore_hit_file_rate",
            "fc_line_f1",
        }
        | cb
    )
    # ContextBench's per-agent results (its repository's src/data/agent_results.json at a named commit): 8 setups,
    # file/block/line P/R/F1 beside the cb_* columns, labelled as another subset and never compared
    ctx = pub.filter(pl.col("benchmark") == "ContextBench")
    assert ctx.select("system", "model").unique().height == 8 and set(ctx["source_commit"]) == {
        "420175fb5eba29a80701d21038fd6dce6e28ebf8"
    }
    assert ctx.filter(pl.col("fasbench_column").is_in(list(cb))).height == 8 * 9
    son = ctx.filter((pl.col("model") == "Claude Sonnet 4.5") & (pl.col("fasbench_column") == "cb_line_f1"))
    assert son["value"].to_list() == [34.4] and son["turns"].to_list() == ["14.38"]
    assert ctx["note"].str.contains("another subset").all()
    row = pub.filter(
        (pl.col("model") == "CodeScout-4B")
        & (pl.col("benchmark") == "SWE-bench Verified")
        & (pl.col("fasbench_column") == "function_f1")
    )
    assert row["value"].to_list() == [36.78] and row["budget"].to_list() == ["6 (max per episode) turns"]
    # CoSIL: its own paper's numbers (arXiv 2503.22424v3 abstract), not the invalid third-party reproduction's
    cosil = pub.filter(pl.col("system") == "CoSIL").sort("benchmark")
    assert cosil["value"].to_list() == [43.3, 44.6] and set(cosil["status"]) == {"valid"}
    assert set(cosil["source_url"]) == {"https://arxiv.org/abs/2503.22424v3"}
    repro = pub.filter(pl.col("source_url").str.contains("cosil-swe-explore-verified-intersection"))
    assert repro.height == 4 and set(repro["status"]) == {"withdrawn"} and repro["source_commit"].null_count() == 0
    assert set(pub.filter(pl.col("system") == "FastContext")["status"]) == {"withdrawn"}


def test_beside_compares_on_the_same_subset_and_gold_and_shows_n_and_budget():
    """LocAgent's Lite Acc@5 beside the Lite tasks only; a read-region row on another gold kind is not
    called comparable and the sentence says why; published and fasbench n and budgets are shown."""

    def task(i, sets, kind=None):
        meta = {"sets": sets, "gold_import": {"gold_kind": kind}} if kind else {"sets": sets}
        return Task(f"t{i}", "q", "o/r", Gold({"a.py": []}), meta=meta)

    tasks = [task(0, ["lite", "verified"], "one resolved gemini-3-pro run's reads")] + [
        task(i, ["verified"], "one resolved gemini-3-pro run's reads") for i in range(1, 6)
    ]
    rows = [
        {
            "task_id": f"t{i}",
            "policy": "a",
            "file_acc_at_5": float(i == 0),
            "function_top1": 1.0,
            "explore_line_f1": 0.2,
            "turns": 3,
        }
        for i in range(6)
    ]
    side = field.beside(pl.DataFrame(rows), tasks, n_boot=200)
    loc = side.filter(pl.col("metric") == "file_acc_at_5").row(0, named=True)
    assert loc["benchmark"] == "SWE-bench Lite" and loc["fasbench_n"] == 1 and loc["fasbench"] == 100.0
    assert loc["published_budget"] == "top 5 files (Acc@5)" and loc["fasbench_budget"].startswith("top 5, 3.0 turns")
    assert not loc["comparable"] and "secondary" in loc["why"]
    cosil = {r["benchmark"]: r for r in side.filter(pl.col("metric") == "function_top1").iter_rows(named=True)}
    assert cosil["SWE-bench Lite"]["fasbench_n"] == 1 and cosil["SWE-bench Verified"]["fasbench_n"] == 6
    assert cosil["SWE-bench Verified"]["comparable"] and cosil["SWE-bench Verified"]["published"] == 44.6
    assert side.filter(pl.col("metric") == "explore_line_f1").height == 0  # the only read-region rows are withdrawn
    cb_rows = pl.DataFrame([{**r, "cb_file_recall": 0.5} for r in rows])
    assert (
        field.beside(cb_rows, tasks, n_boot=50).filter(pl.col("metric") == "cb_file_recall").height == 0
    )  # another subset
    cav = field.caveats(tasks, pl.DataFrame(rows))
    assert "1 in SWE-bench Lite, 6 in SWE-bench Verified" in cav[0]
    text = field.findings(
        field.gold_ranks(pl.DataFrame(rows).with_columns(pl.lit(0.5).alias("line_f1")), n_boot=200), side, 6
    ).markdown()
    assert "`file_acc_at_5` on SWE-bench Lite: fasbench's best a 100.0" in text and "(n = 1, top 5, 3.0 turns" in text
    assert "not comparable: " in text and "n not given" in text
    shown = field.beside_display(side)  # the paper table: display strings, one row per beside row
    assert shown.height == side.height and all(dt == pl.String for dt in shown.dtypes)
    row = shown.filter((pl.col("metric") == "function_top1") & (pl.col("benchmark") == "SWE-bench Verified")).row(
        0, named=True
    )
    assert row["published"] == "44.6" and row["n"] == "6" and row["comparable"] == "yes"
    assert row["fasbench"] == "100.0 [100.0, 100.0]"
    lite = shown.filter(pl.col("metric") == "file_acc_at_5").row(0, named=True)
    assert lite["comparable"].startswith("the published number is secondary")
    tex = to_latex(shown, caption="c", label="tab:field")
    assert "\\toprule" in tex and "100.0 [100.0, 100.0]" in tex and tex.count("\\\\") == shown.height + 1
    assert field.beside_display(side.clear()).columns == shown.columns  # nothing beside: an empty table, same columns


def test_caveats_name_the_read_region_gold_actually_used():
    ex = {"core_files": ["a.py"], "core_regions": [["a.py", 1, -1]], "whole_files": {"a.py": 40}}
    imported = Task(
        "t0",
        "q",
        "o/r",
        Gold({"a.py": []}, explore=ex),
        meta={
            "sets": ["verified"],
            "gold_import": {"gold_kind": "read-core regions"},
            "explore_relocation": {"core_dropped": [{"region": ["b.py", 3, 9]}]},
        },
    )
    mine = Task(
        "t1",
        "q",
        "o/r",
        Gold({"a.py": []}, explore=dict(ex, whole_files={})),
        meta={"sets": ["verified"], "gold_import": {"gold_kind": "one resolved gemini-3-pro run's reads"}},
    )
    df = pl.DataFrame([{"task_id": t, "policy": "a", "explore_line_f1": 0.3} for t in ("t0", "t1")])
    (read,) = [c for c in field.caveats([imported, mine], df) if c.startswith("read regions")]
    assert read.startswith(
        "read regions: 2 tasks scored; their gold: one resolved gemini-3-pro run's reads (1); "
        "read-core regions (1); 1 with whole-file reads kept whole on the corpus, 1 with core regions dropped"
    )
    assert "top-5 budget" in read


def _df():
    rows = []
    for i in range(6):
        rows.append(
            {
                "task_id": f"t{i}",
                "policy": "a",
                "line_f1": 0.5,
                "function_f1": 0.1,
                "explore_line_f1": 0.2,
                "file_f1": 0.9,
            }
        )
        rows.append(
            {
                "task_id": f"t{i}",
                "policy": "b",
                "line_f1": 0.3,
                "function_f1": 0.4 if i else None,
                "explore_line_f1": 0.2,
                "file_f1": 0.5,
            }
        )
    return pl.DataFrame(rows)


def test_top_policy_change_is_claimed_only_when_paired_tests_support_it():
    """Two policies that swap places under two golds: claimed when a leads on 8 of 9 tasks under one
    gold and b on 8 of 9 under the other (exact p = 2·(1 + 9)/2^9 each); not when the leads hold on 6 of 9."""

    def frame(n, lead):
        rows = []
        for i in range(n):
            up = i < lead  # the leader's margin holds on the first `lead` tasks, reverses on the rest
            rows.append(
                {"task_id": f"t{i}", "policy": "a", "line_f1": 0.6 if up else 0.4, "function_f1": 0.2 if up else 0.5}
            )
            rows.append(
                {"task_id": f"t{i}", "policy": "b", "line_f1": 0.4 if up else 0.6, "function_f1": 0.5 if up else 0.2}
            )
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
    tasks = [
        Task(
            f"t{i}",
            "q",
            "o/r",
            Gold({"a.py": []}),
            meta={"sets": ["verified"], "corpus": {"mode": "offline", "package": "Django", "release": "4.0"}},
        )
        for i in range(6)
    ]
    side = field.beside(df, tasks, n_boot=200)
    assert set(side["benchmark"]) == {"SWE-bench Verified"}  # no Lite/Pro rows for Verified-only tasks
    assert set(side["metric"]) == {"file_f1", "function_f1"}  # the read-region rows are withdrawn
    a = side.filter((pl.col("metric") == "file_f1") & (pl.col("fasbench_policy") == "a"))
    assert a["fasbench"].unique().to_list() == [90.0] and a["fasbench_n"][0] == 6
    assert "Django==4.0 (6)" in field.corpus_kind(tasks)
    f = field.findings(ranks, side, 6)
    text = f.markdown()
    assert isinstance(f, Findings) and text.startswith("## What we found: the field")
    # a leads on hunks (6 of 6 tasks, p = 2/2^6) but b's lead on functions rests on 5 tasks, where the
    # smallest exact p is 2/2^5 = 0.0625: the change of top policy is not supported
    assert "The top policy changes" not in text and "0.500" in text
    assert "paired tests do not show that the ranking changes" in text
    assert "under functions, b − a = +0.300, p = 0.0625, n = 5 (smallest attainable p = 0.0625)" in text
    assert "under gold-patch hunks, a − b = +0.200, p = 0.0312, n = 6" in text
    fig = field.rank_figure(ranks)
    assert len(fig.data) == 4
