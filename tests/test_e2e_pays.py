"""Delegation measures (fasbench.e2e.pays) on hand-built trajectories, numbers worked out by hand."""

import json

import polars as pl
import pytest

from fasbench.e2e.counterfactual import TurnTokens, counterfactual_frame
from fasbench.e2e.looked import Look
from fasbench.e2e.pays import GROUNDING, arm_columns, arm_tokens, arms_table, replaced_by, reread_share
from fasbench.trajectories.analysis import parse_paths, steps_frame
from tests.test_e2e_counterfactual import HAND, v1_trajectory


def test_reread_share_by_hand():
    files = {"a.py": [[1, 10], [5, 20]], "b.py": []}  # 20 handed-off lines (b.py: no ranges, left out)
    assert reread_share([Look("a.py", ((15, 30),), "display")], files) == pytest.approx(6 / 20)
    assert reread_share([Look("a.py", None, "display"), Look("b.py", None, "display")], files) == 1.0
    assert reread_share([Look("c.py", ((1, 5),), "display")], files) == 0.0
    assert reread_share([Look("b.py", None, "display")], {"b.py": []}) is None


def test_replaced_by_arm():
    files = {"a.py": [[1, 30]]}
    hit, show = Look("a.py", ((10, 10),), "search-hit"), Look("a.py", ((1, 40),), "display")
    assert not replaced_by("none", [hit], files)
    assert replaced_by("citations", [hit], files) and not replaced_by("citations", [show], files)
    assert replaced_by("code", [hit], files) and replaced_by("code", [show], files)
    assert not replaced_by("code", [Look("z.py", None, "display")], files)


def test_arm_tokens_by_hand():
    turns = [TurnTokens(100, 10, 0, 40), TurnTokens(150, 10, 0, 40), TurnTokens(200, 10, 0, 40)]
    # turn 0 removed, h = 20: prompts 120 (dropped), 150+20-50 = 120, 200+20-50 = 170; turn 2 caches turn 1's 120
    got = arm_tokens(turns, [1, 0, 0], 20, before=2)
    assert got == {"input": 290, "cache_share": pytest.approx(120 / 290), "turns_to_edit": 1, "tokens_to_edit": 130}
    got = arm_tokens(turns, [0, 0, 0], 0, before=2)  # no subagent: 450 in, 100 + 150 cached, 110 + 160 to the edit
    assert got == {"input": 450, "cache_share": pytest.approx(250 / 450), "turns_to_edit": 2, "tokens_to_edit": 270}


def test_arm_columns_on_a_real_trajectory(tmp_path):
    d = tmp_path / "toyset" / "trajs"
    d.mkdir(parents=True)
    (d / "demo__calc-1.traj.json").write_text(json.dumps(v1_trajectory()))
    trajs, _ = parse_paths([tmp_path / "toyset"], progress=False)
    df = counterfactual_frame(
        trajs, steps_frame(trajs), {("*", "demo__calc-1"): HAND}, progress=False, extra=arm_columns
    )
    r = df.row(0, named=True)
    # turns 1 grep hit calc.py:10 (covered search), 2 sed 1,40p calc.py (covered display), 3 cat README; edit at 4
    assert r["none_turns_to_edit"] == 3 and r["citations_turns_to_edit"] == 2 and r["code_turns_to_edit"] == 1
    assert r["none_input"] == 100 + 150 + 200 + 260 + 300 + 320
    assert r["citations_reread_share"] == 1.0  # the sed of lines 1-40 is still made: all 30 handed lines again
    assert r["code_reread_share"] == 0.0  # only README.md is read
    assert r["code_input"] < r["citations_input"] < r["none_input"] + 6 * 20


def test_ids_arm_on_a_real_trajectory(tmp_path):
    """The ID-grounded arm on the counterfactual path: the ids run's hand-off (matched by search task id)
    replaces like citations with its own ranges and tokens; grounding and file score per hand-off."""
    from dataclasses import replace

    from fasbench.e2e import study

    d = tmp_path / "toyset" / "trajs"
    d.mkdir(parents=True)
    (d / "demo__calc-1.traj.json").write_text(json.dumps(v1_trajectory()))
    free = replace(HAND, task_id="demo__calc-1@x", cited_lines=30, unseen_lines=12, file_f1=0.5)
    ids = replace(
        HAND,
        files={"src/calc.py": [[5, 12]]},
        tokens={"citations": 15, "code": 40, "code+search": 60},
        task_id="demo__calc-1@x",
        contract="ids",
        cited_lines=8,
        unseen_lines=0,
        file_f1=1.0,
    )
    df, _ = study.frame([tmp_path / "toyset"], {("*", "demo__calc-1"): free}, progress=False, ids={("x", "y"): ids})
    r = df.row(0, named=True)
    # the grep hit on calc.py:10 falls in r[5, 12]: replaced as under citations; the sed of 1-40 stays and re-reads 5-12
    assert r["ids_turns_to_edit"] == r["citations_turns_to_edit"] == 2 and r["ids_reread_share"] == 1.0
    assert r["ids_input"] == pytest.approx(r["citations_input"] - 5 * (20 - 15))  # 5 kept prompts, 5 fewer tokens each
    assert (r["citations_unseen_share"], r["ids_unseen_share"]) == (0.4, 0.0)
    assert (r["citations_file_f1"], r["ids_file_f1"]) == (0.5, 1.0)
    alone, _ = study.frame([tmp_path / "toyset"], {("*", "demo__calc-1"): free}, progress=False)
    assert "ids_input" not in alone.columns  # no ids run: no ids arm


def test_grounding_table_pairs_ids_with_free_citation():
    df = pl.DataFrame(
        {
            "dataset": ["d"] * 4,
            "has_search": [True] * 4,
            "citations_unseen_share": [0.5, 0.25, None, 0.0],
            "ids_unseen_share": [0.0, 0.0, 0.0, 0.0],
            "citations_file_f1": [0.5, 0.0, 1.0, 0.5],
            "ids_file_f1": [1.0, 0.0, 1.0, 0.0],
        }
    )
    t = arms_table(df, n_boot=200, arms=("citations", "ids"), measures=GROUNDING, base="citations")
    u = t.filter((pl.col("arm") == "ids") & (pl.col("measure") == "unseen_share")).row(0, named=True)
    assert u["mean"] == 0.0 and u["n"] == 4 and u["diff"] == pytest.approx(-0.25)  # paired over the 3 with both
    f = t.filter((pl.col("arm") == "ids") & (pl.col("measure") == "file_f1")).row(0, named=True)
    assert f["diff"] == pytest.approx(0.0) and f["n"] == 4
    c = t.filter((pl.col("arm") == "citations") & (pl.col("measure") == "file_f1")).row(0, named=True)
    assert c["mean"] == 0.5 and c["diff"] is None


def test_arms_table_pairs_each_arm_with_none():
    df = pl.DataFrame(
        {
            "dataset": ["d"] * 3,
            "has_search": [True] * 3,
            "none_input": [100.0, 200.0, 300.0],
            "code_input": [90.0, 150.0, 280.0],
            "code_reread_share": [0.0, 0.5, 1.0],
        }
    )
    t = arms_table(df, n_boot=200)
    code = t.filter((pl.col("arm") == "code") & (pl.col("measure") == "input")).row(0, named=True)
    assert code["mean"] == pytest.approx(520 / 3) and code["diff"] == pytest.approx(-80 / 3)
    rr = t.filter((pl.col("arm") == "code") & (pl.col("measure") == "reread_share")).row(0, named=True)
    assert rr["mean"] == pytest.approx(0.5) and rr["diff"] is None


def test_pays_sentence_says_when_it_pays():
    from fasbench.e2e.findings import pays_sentence

    base = [100.0 * k for k in range(1, 9)]  # 8 runs: mean 450; code 10% fewer (-45), citations 10% more (+45)
    df = pl.DataFrame(
        {
            "dataset": ["d"] * 8,
            "has_search": [True] * 8,
            "none_input": base,
            "none_cache_share": [0.5] * 8,
            "none_turns_to_edit": [2.0] * 8,
            "code_input": [0.9 * x for x in base],
            "code_cache_share": [0.4] * 8,
            "code_reread_share": [0.0] * 4 + [0.5] * 4,
            "code_turns_to_edit": [1.0] * 8,
            "citations_input": [1.1 * x for x in base],
            "citations_cache_share": [0.5] * 8,
            "citations_reread_share": [1.0] * 8,
            "citations_turns_to_edit": [2.0] * 8,
        }
    )
    s = pays_sentence(arms_table(df, n_boot=200), "toy")
    assert "n = 8" in s and "450 [" in s  # none's mean input
    code, cit = s.split("`code` hand-off")[1], s.split("`citations` hand-off")[1].split("`code`")[0]
    assert code.startswith(": input -45 [") and "(pays)" in code and "25.0% [" in code
    assert cit.startswith(": input +45 [") and "(costs more)" in cit and "re-reads 100.0%" in cit
    small = pays_sentence(arms_table(df.head(4), n_boot=200), "toy")  # 4 runs: no 95% sign-flip interval
    assert "(no interval)" in small and "(pays)" not in small


def test_live_measures_by_hand():
    from fasbench.e2e.pays import live_measures
    from tests.test_e2e_counterfactual import _obs, _v1

    w = "/tmp/run/work/search/t1/repo"
    raw = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            _v1(f"sed -n '11,30p' {w}/src/calc.py", 100),
            _obs("x"),
            _v1(f"cd {w} && cat README.md", 150),
            _obs("# calc"),
            _v1("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", 170),
            _obs(""),
        ]
    }
    got = live_measures(raw, {"src/calc.py": [[1, 40]]}, w)
    # 40 handed-off lines, 20 of them read again; 420 input tokens, 100 + 150 of them the previous prompt
    assert got == {"input_tokens": 420, "cache_share": pytest.approx(250 / 420), "reread_share": 0.5}
    assert live_measures(raw, None, w)["reread_share"] is None
    assert live_measures(raw, {"src/calc.py": [[1, 40]]})["reread_share"] == 0.0  # the workdir not mapped: no look


def test_grounding_sentence_puts_ids_beside_free_citation():
    from fasbench.e2e.findings import grounding_sentence

    df = pl.DataFrame(
        {
            "dataset": ["d"] * 8,
            "has_search": [True] * 8,
            "citations_unseen_share": [0.5] * 4 + [0.25] * 4,
            "ids_unseen_share": [0.0] * 8,
            "citations_file_f1": [0.5] * 8,
            "ids_file_f1": [0.5] * 6 + [1.0] * 2,
            "citations_line_f1": [0.1] * 8,
            "ids_line_f1": [0.2] * 8,
        }
    )
    g = arms_table(df, n_boot=200, arms=("citations", "ids"), measures=GROUNDING, base="citations")
    s = grounding_sentence(g, "toy")
    assert "n = 8" in s and "free 37.5% [" in s and "ids 0.0%" in s
    assert "file-level F1 free 0.500" in s and "ids − free +0.125 [" in s
    assert "line-level F1 free 0.100" in s and "ids 0.200" in s and "ids − free +0.100" in s
    assert "no ids search run" in grounding_sentence(g.filter(pl.col("arm") == "citations"), "toy")
