"""Counterfactual handoff savings on hand-made trajectories whose answers are worked out by hand."""

import json

import polars as pl
import pytest

from fasbench.e2e.counterfactual import (
    Handoff,
    TurnTokens,
    counterfactual_frame,
    covered,
    make_handoff,
    savings,
)
from fasbench.e2e.looked import Look, call_looks
from fasbench.e2e.study import ratio_ci, totals
from fasbench.records import Gold, Report, Task, Trace
from fasbench.studies.handoff import FORMATS
from fasbench.trajectories.analysis import parse_paths, steps_frame
from fasbench.trajectories.raw import shell_calls

DIFF = (
    "diff --git a/src/calc.py b/src/calc.py\nindex 1..2 100644\n--- a/src/calc.py\n+++ b/src/calc.py\n"
    "@@ -10,2 +10,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
)


def _obs(text):
    return {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{text}\n</output>"}


def _v1(cmd, prompt, completion=10):
    return {
        "role": "assistant",
        "content": f"THOUGHT: next.\n\n```bash\n{cmd}\n```",
        "extra": {"response": {"usage": {"prompt_tokens": prompt, "completion_tokens": completion}}},
    }


def v1_trajectory(iid="demo__calc-1"):
    """Six turns (prompt tokens 100, 150, 200, 260, 300, 320; 10 completion tokens each):
    1 grep hit calc.py:10, 2 sed -n 1,40p calc.py, 3 cat README.md, 4 sed -i (first edit), 5 test, 6 submit."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        _v1("grep -rn 'def add' src/", 100),
        _obs("src/calc.py:10:def add(a, b):"),
        _v1("sed -n '1,40p' src/calc.py", 150),
        _obs("x = 1"),
        _v1("cat README.md", 200),
        _obs("# calc"),
        _v1("sed -i 's/a - b/a + b/' src/calc.py", 260),
        _obs(""),
        _v1("python -m pytest tests", 300),
        _obs("1 passed"),
        _v1("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", 320),
        _obs(DIFF),
    ]
    return {
        "instance_id": iid,
        "trajectory_format": "mini-swe-agent-1",
        "info": {"exit_status": "Submitted", "submission": DIFF},
        "messages": msgs,
    }


def _tool_turn(cmds, prompt, completion=10):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"t{prompt}_{i}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": c})},
            }
            for i, c in enumerate(cmds)
        ],
        "extra": {"response": {"usage": {"prompt_tokens": prompt, "completion_tokens": completion}}},
    }


def tool_trajectory(iid="demo__calc-2"):
    """Turn 1 holds two calls: a grep hit on calc.py:10 and `ls` listing README.md and setup.py;
    turn 2 edits calc.py (first edit); turn 3 submits."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        _tool_turn(["grep -rn 'def add' src/", "ls"], 100),
        {"role": "tool", "tool_call_id": "t100_0", "content": "<output>\nsrc/calc.py:10:def add(a, b):\n</output>"},
        {"role": "tool", "tool_call_id": "t100_1", "content": "<output>\nREADME.md\nsetup.py\nsrc\n</output>"},
        _tool_turn(["sed -i 's/a - b/a + b/' src/calc.py"], 200),
        {"role": "tool", "tool_call_id": "t200_0", "content": "<output>\n</output>"},
        _tool_turn(["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"], 260),
        {"role": "tool", "tool_call_id": "t260_0", "content": DIFF},
    ]
    return {
        "instance_id": iid,
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "submission": DIFF},
        "messages": msgs,
    }


@pytest.fixture
def toyset(tmp_path):
    d = tmp_path / "toyset"
    (d / "trajs").mkdir(parents=True)
    (d / "trajs" / "demo__calc-1.traj.json").write_text(json.dumps(v1_trajectory()))
    (d / "trajs" / "demo__calc-2.traj.json").write_text(json.dumps(tool_trajectory()))
    (d / "resolved.json").write_text(json.dumps({"demo__calc-1": True, "demo__calc-2": False}))
    return d


HAND = Handoff(files={"src/calc.py": [[1, 30]]}, tokens={"citations": 20, "code": 50, "code+search": 80})


def _frame(d, hand=HAND):
    trajs, _ = parse_paths([d], progress=False)
    return counterfactual_frame(
        trajs, steps_frame(trajs), {("toyset", "demo__calc-1"): hand, ("*", "demo__calc-2"): hand}, progress=False
    )


# ---------------------------------------------------------------- looks


@pytest.mark.parametrize(
    "cmd,out,want",
    [
        ("sed -n '5,12p' a/b.py", "", [Look("a/b.py", ((5, 12),), "display")]),
        ("nl -ba a/b.py | sed -n '5,12p'", "", [Look("a/b.py", ((5, 12),), "display")]),
        ("head -n 30 a/b.py", "", [Look("a/b.py", ((1, 30),), "display")]),
        ("cat a/b.py", "", [Look("a/b.py", None, "display")]),
        ("cd /testbed/a && cat b.py", "", [Look("a/b.py", None, "display")]),
        ("awk 'NR>=3 && NR<=9' a/b.py", "", [Look("a/b.py", ((3, 9),), "display")]),
        (
            "grep -n foo a/b.py",
            "<output>\n4:foo\n5:foo()\n9:foo\n</output>",
            [Look("a/b.py", ((4, 5), (9, 9)), "search-hit")],
        ),
        (
            "cat a/b.py | grep -n foo -A 1",
            "<output>\n4:foo\n5-bar\n</output>",
            [Look("a/b.py", ((4, 5),), "search-hit")],
        ),
        (
            "grep -rn foo .",
            "<output>\n./a/b.py:7:foo\nc.py:2:foo\n</output>",
            [Look("a/b.py", ((7, 7),), "search-hit"), Look("c.py", ((2, 2),), "search-hit")],
        ),
        (
            "find . -name '*.py'",
            "<output>\n./a/b.py\n./c.py\n</output>",
            [Look("a/b.py", None, "search-file"), Look("c.py", None, "search-file")],
        ),
        ("python -c 'print(1)'", "1", []),
        ("cat > t.py <<'EOF'\nx\nEOF", "", []),
    ],
)
def test_call_looks(cmd, out, want):
    assert call_looks(cmd, out) == want


def test_shell_calls_number_turns_like_the_parser(toyset):
    calls = shell_calls(tool_trajectory())
    assert [(c.turn, c.call) for c in calls] == [(1, 0), (1, 1), (2, 0), (3, 0)]
    assert "README.md" in calls[1].output
    v1 = shell_calls(v1_trajectory())
    assert [c.turn for c in v1] == [1, 2, 3, 4, 5, 6] and "calc.py:10" in v1[0].output


def test_covered_needs_the_file_and_half_the_lines():
    rep = {"src/calc.py": [[1, 30]], "whole.py": []}
    assert covered(Look("src/calc.py", ((10, 10),), "search-hit"), rep)
    assert covered(Look("src/calc.py", ((1, 40),), "display"), rep)  # 30 of 40 lines
    assert not covered(Look("src/calc.py", ((25, 60),), "display"), rep)  # 6 of 36
    assert covered(Look("src/calc.py", None, "display"), rep)
    assert covered(Look("whole.py", ((500, 900),), "display"), rep)
    assert not covered(Look("README.md", None, "display"), rep)


# ---------------------------------------------------------------- the token model


def test_savings_by_hand():
    toks = [TurnTokens(100, 10, 0, 40), TurnTokens(150, 10, 0, 40), TurnTokens(200, 10, 0, 50)]
    s = savings(toks, [1.0, 0.0, 0.0], handoff=20)
    # own call 110; its 50 fed-back tokens leave the 2 later prompts: 100; handoff in 2 prompts: 40
    assert s == {
        "total_tokens": 480.0,
        "saved_calls": 110.0,
        "saved_context": 100.0,
        "handoff_cost": 40.0,
        "net": 170.0,
        "replaced_turns": 1.0,
    }
    half = savings(toks, [0.5, 0.0, 0.0], handoff=0)
    assert half["saved_calls"] == 55 and half["saved_context"] == 50 and half["replaced_turns"] == 0.5


def test_counterfactual_on_hand_made_trajectories(toyset):
    df = _frame(toyset)
    assert df.height == 2
    a = df.filter(pl.col("instance_id") == "demo__calc-1").row(0, named=True)
    assert a["first_edit_turn"] == 4 and a["explore_calls_before"] == 3 and a["resolved"] is True
    # strict: turns 1 (hit on line 10) and 2 (30 of 40 lines cited) replaced; 3 (README) not
    assert a["strict_replaced_turns"] == 2 and a["strict_replaced_calls"] == 2
    assert a["all_replaced_turns"] == 3 and a["any_replaced_turns"] == 2
    # by hand: own 110 + 160; fed back (10 + 40) from turns 1 and 2 into the 4 remaining prompts: 400;
    # handoff 20 tokens in the 4 remaining prompts: 80
    assert a["total_tokens"] == 1390
    assert a["strict_gross"] == 670 and a["strict_saved_calls"] == 270
    assert a["strict_net_citations"] == 590 and a["strict_net_code+search"] == 670 - 4 * 80
    assert a["file_coverage"] == 0.5 and a["read_file_coverage"] == 0.5  # calc.py yes, README.md no
    assert a["line_coverage"] == 30 / 40  # lines 1-40 and 10 seen; 1-30 cited

    b = df.filter(pl.col("instance_id") == "demo__calc-2").row(0, named=True)
    assert b["first_edit_turn"] == 2 and b["explore_calls_before"] == 2
    assert b["strict_replaced_turns"] == 0.5 and b["any_replaced_turns"] == 0.5 and b["all_replaced_turns"] == 1
    assert b["looked_files"] == 3 and b["file_coverage"] == pytest.approx(1 / 3)


def test_without_a_search_run_only_the_upper_bound(toyset):
    trajs, _ = parse_paths([toyset], progress=False)
    df = counterfactual_frame(trajs, steps_frame(trajs), {}, progress=False)
    a = df.filter(pl.col("instance_id") == "demo__calc-1").row(0, named=True)
    assert a["has_search"] is False and a["strict_replaced_turns"] == 0 and a["all_replaced_turns"] == 3
    assert totals(df).height == 0


def test_make_handoff_moves_lines_by_the_gold_offset(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("\n".join(f"line {i}" for i in range(1, 60)))
    (tmp_path / "other.py").write_text("x\n")
    task = Task(
        id="demo__calc-1@run",
        query="q",
        repo="demo/calc",
        gold=Gold(edited={"src/calc.py": [[15, 16]]}),
        root=str(tmp_path),
        meta={"corpus": {"mode": "offline", "offsets": {"src/calc.py": [5, 5, None]}}},
    )
    tr = Trace(
        task_id=task.id,
        policy="p",
        toolset="relace",
        report=Report(files={"src/calc.py": [[6, 35]], "other.py": [[1, 1]]}, explanation="here"),
    )
    h = make_handoff(tr, task, lambda text: len(text.split()))
    assert h.files == {"src/calc.py": [[1, 30]], "other.py": [[1, 1]]}
    assert h.line_map == {"src/calc.py": "gold-offset", "other.py": "unshifted"}
    assert h.tokens["citations"] < h.tokens["code"] and set(h.tokens) == set(FORMATS)
    # grounding (the trace showed nothing: all 30 + 1 cited lines unseen) and the file-level score vs src/calc.py
    assert (h.contract, h.cited_lines, h.unseen_lines) == ("free", 31, 31)
    assert (h.file_precision, h.file_recall, h.file_f1) == (0.5, 1.0, pytest.approx(2 / 3))
    # lines: 31 cited (6-35 and 1 of other.py) against the edited 15-16: both hit, precision 2/31
    assert (h.line_precision, h.line_recall) == (pytest.approx(2 / 31), 1.0)


def test_totals_have_intervals(toyset):
    t = totals(_frame(toyset), by=("dataset",), n_boot=200)
    row = t.filter((pl.col("rule") == "strict") & (pl.col("format") == "citations")).row(0, named=True)
    assert row["n"] == 2 and row["net_share_lo"] <= row["net_share"] <= row["net_share_hi"]
    assert ratio_ci([1, 2], [10, 10], n=100)[0] == pytest.approx(0.15)


def test_upper_bound_splits_own_calls_from_carried_context(toyset):
    from fasbench.e2e.study import upper_bound

    ub = upper_bound(_frame(toyset), by=("dataset",), n_boot=100).row(0, named=True)
    # trajectory 1: own calls 110 + 160 + 210 = 480, gross 480 + 50*3 + 50*3 + 60*3 = 960, of 1390 tokens;
    # trajectory 2: both calls of turn 1 (grep, ls) are pre-edit exploration: 110 of 110 + 210 + 270 tokens
    assert ub["n"] == 2 and ub["calls_share"] == pytest.approx((480 + 110) / (1390 + 590))
    assert ub["gross_share"] > ub["calls_share"]


def test_shipped_handoffs_load_and_round_trip(tmp_path):
    """Notebook 10 pairs every trajectory on a fresh machine from the shipped handoffs (no corpus)."""
    from fasbench.base.paths import data_dir
    from fasbench.e2e import study

    hand = study.load_handoffs(data_dir() / "e2e" / "handoffs_heuristic-turns-3_relace_t6.jsonl.gz")
    assert len(hand) >= 400 and {k[0] for k in hand} == {
        "mini-swe-agent_gemini-3-pro_swebench-verified",
        "mini-swe-agent-v2_deepseek-chat_swebench-lite-first100",
    }
    h = next(iter(hand.values()))
    assert set(h.tokens) == {"citations", "code", "code+search"} and h.tokens["citations"] < h.tokens["code"]
    again = study.load_handoffs(study.save_handoffs(hand, tmp_path / "h.jsonl.gz"))
    assert again == hand
    # the same search under the ids report contract (the ID-grounded arm): the same tasks, no unseen line
    ids = study.load_handoffs(data_dir() / "e2e" / "handoffs_heuristic-turns-3_relace_t6_ids.jsonl.gz")
    assert set(ids) == set(hand) and {h.contract for h in ids.values()} == {"ids"}
    assert all(h.unseen_lines == 0 and h.cited_lines for h in ids.values())
    assert {h.contract for h in hand.values()} == {"free"} and sum(h.unseen_lines for h in hand.values()) > 0
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match="no handoff"):
        study.load_handoffs(tmp_path / "empty.jsonl")


def test_findings_for_notebook_10_from_the_studys_frames(toyset):
    """Notebook 10's "What we found" is a Findings written from study.totals / upper_bound; a data set
    with no paired search run gets the upper bound only."""
    from fasbench.e2e.findings import findings
    from fasbench.e2e.study import upper_bound
    from fasbench.stats.findings import Findings

    df = _frame(toyset)
    ds = df["dataset"][0]
    tot, ub = totals(df, ("dataset",), 100), upper_bound(df, ("dataset",), 100)
    by_res = totals(df, ("dataset", "resolved"), 100)
    f = findings([ds, "other"], {ds: "toy", "other": "other"}, tot, ub, by_res, "heuristic:turns=3")
    md = f.markdown()
    s = tot.filter((pl.col("rule") == "strict") & (pl.col("format") == "code+search")).row(0, named=True)
    assert isinstance(f, Findings) and md.startswith("## What we found: does search help")
    assert f"- **toy** (n = {s['n']} trajectories" in md and f"{100 * s['net_share']:.1f}% [" in md
    assert "FastContext" in md and "**Caveats**" in md and "**other**" not in md  # no rows for it: nothing said
    only_ub = findings([ds], {ds: "toy"}, tot.clear(), ub, by_res.clear(), "x").markdown()
    assert "no search run paired" in only_ub
