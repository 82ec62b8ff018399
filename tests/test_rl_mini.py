"""The RL miniature's parts without training: the `symbols` task family (real installed packages,
gold from ast, splits by package and symbol), its sequential and parallel searchers through the real
harness (real ripgrep), the rescaled turn penalty, and the before/after statistics."""

import ast
from pathlib import Path

import polars as pl
import pytest

from fasbench.data import symbols
from fasbench.data.tasksets import load_task_set, parse_task_set
from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.records import Gold, Report
from fasbench.rl.mini import acceptance, before_after_table
from fasbench.scoring.reward import MINI_TURNS, score_report
from fasbench.tools import ToolLimits


@pytest.fixture(scope="module")
def family():
    return load_task_set("symbols")


@pytest.mark.slow
def test_gold_is_the_ast_definition_and_splits_are_disjoint(family):
    by = {s: [t for t in family if t.split == s] for s in ("train", "dev", "test")}
    assert len(by["train"]) >= 100 and len(by["test"]) >= 20
    pk = {s: {t.meta["package"] for t in ts} for s, ts in by.items()}
    assert not pk["train"] & pk["test"] and not pk["train"] & pk["dev"]
    names = {s: {n for t in ts for n in t.meta["symbols"]} for s, ts in by.items()}
    assert not names["train"] & names["test"]
    for t in by["test"][:5] + by["train"][:5]:
        assert len(t.meta["symbols"]) == symbols.K == len(t.gold.edited)  # one file per symbol
        for name in t.meta["symbols"]:
            hits = [
                (p, r)
                for p, rs in t.gold.edited.items()
                for r in rs
                if f"{name}" in (Path(t.root) / p).read_text().splitlines()[r[0] - 1]
            ]
            assert len(hits) == 1, (t.id, name)
            p, (a, b) = hits[0]
            node = next(n for n in ast.parse((Path(t.root) / p).read_text()).body if getattr(n, "name", None) == name)
            assert (node.lineno, node.end_lineno) == (a, b)


@pytest.mark.slow
def test_task_set_name_and_query(family):
    assert parse_task_set("symbols:fasbench-test").kind == "symbols"
    t = family[0]
    assert t.query.startswith("Find the files that define these 6 symbols: ")
    assert t.query.rstrip(".").split(": ", 1)[1].split(", ") == t.meta["symbols"]


@pytest.mark.slow
def test_sequential_start_takes_k_plus_one_turns_parallel_two(family):
    lim = Limits(max_turns=8, max_calls_per_turn=8, tool=ToolLimits(max_output_chars=400, max_calls_per_turn=8))
    t = next(t for t in family if t.split == "test")
    seq = run_episode(t, make_policy("sequential:inner=definitions,per_turn=1").bind(t), "relace", lim)
    par = run_episode(t, make_policy("sequential:inner=definitions,per_turn=6").bind(t), "relace", lim)
    assert [len(x.calls) for x in seq.turns] == [1] * 7 and [len(x.calls) for x in par.turns] == [6, 1]
    s_seq, s_par = (score_report("relace-mini", t.gold, tr.report, tr.n_turns, root=t.root) for tr in (seq, par))
    assert s_seq.parts["accuracy"] == s_par.parts["accuracy"] == 1.0
    assert s_seq.parts["turn_penalty"] == pytest.approx(7 / 12) and s_par.parts["turn_penalty"] == 1.0
    with pytest.raises(ValueError, match="inner"):
        make_policy("sequential:inner=nope")


def test_mini_penalty_never_pays_giving_up_sequentially():
    g = Gold(edited={f"f{i}.py": [[1, 2]] for i in range(6)})
    paid = [
        score_report("relace-mini", g, Report(files={f"f{i}.py": [[1, 2]] for i in range(m)}), m + 1).value
        for m in range(1, 7)
    ]
    assert max(paid) == paid[-1]  # finishing all 6 symbols one a turn beats stopping early
    assert MINI_TURNS == (2, 14)


def test_before_after_table_pairs_tasks_and_checks():
    ids = [f"t{i}" for i in range(12)]
    before = pl.DataFrame(
        {
            "task_id": ids,
            "turns": [7] * 12,
            "calls_per_turn": [1.0] * 12,
            "file_f2": [1.0] * 12,
            "file_recall": [1.0] * 12,
            "reward": [0.58] * 12,
        }
    )
    after = pl.DataFrame(
        {
            "task_id": ids[::-1],
            "turns": [2] * 12,
            "calls_per_turn": [3.5] * 12,
            "file_f2": [1.0] * 12,
            "file_recall": [1.0] * 12,
            "reward": [1.0] * 12,
        }
    )
    t = before_after_table(before, after)
    r = {x["measure"]: x for x in t.iter_rows(named=True)}
    assert r["turns"]["change"] == pytest.approx(-5 / 7) and r["turns"]["n"] == 12
    assert r["reward"]["diff_lo"] > 0 and r["reward"]["p"] < 0.01
    assert acceptance(t) == {
        "turns fall >= 40%": True,
        "calls per turn rise": True,
        "accuracy within 2 points": True,
        "reward rises": True,
    }
    worse = after.with_columns(pl.lit(0.5).alias("file_f2"))
    assert not acceptance(before_after_table(before, worse))["accuracy within 2 points"]
