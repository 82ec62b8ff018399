"""A reward is one function and one registry line (docs/design.md section 3, issue 37 item 3): its
declared range, summary flag, view and audit flag reach the episode table, ``fasbench eval``'s printed
summary, the interval bounds (clipped to the declared range), notebook 04's views and the audit,
with nothing else edited."""

from __future__ import annotations

import re
from dataclasses import replace

import polars as pl
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.episodes import column_bounds, view_columns
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import write_tasks
from fasbench.scoring import reward as R
from fasbench.scoring.reward import REWARDS, Reward, Score, audit_rewards
from fasbench.stats.metrics import mean_ci

TOY_BOUNDS = (0.0, 0.5)


def toy(gold, report, *, trace=None, **_) -> Score:
    """0.1 on the first task, 0.5 elsewhere: a t interval over 6 tasks reaches past 0.5 unclipped."""
    v = 0.1 if trace is not None and trace.task_id.endswith("-0") else 0.5
    return Score(v, {"half": v / 2}, "toy")


def add_toy(monkeypatch) -> None:
    """The one registry line."""
    monkeypatch.setitem(
        REWARDS,
        "toy-half",
        Reward(
            toy, bounds=TOY_BOUNDS, parts={"half": (0.0, 0.25)}, summary=True, label="toy (half)", view=True, audit=True
        ),
    )


ROW = re.compile(r"(\S+) +(-?\d+\.\d{3}|n/a) +\[(-?\d+\.\d{3}|n/a), (-?\d+\.\d{3}|n/a)\] +(\d+)")


def _eval(tmp_path, monkeypatch, *extra: str) -> tuple[dict, pl.DataFrame, str]:
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    base = toy_tasks(make_corpus(tmp_path / "toy"))
    tasks = [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(6)]
    tf = tmp_path / "tasks.jsonl"
    write_tasks(tf, tasks)
    out = tmp_path / "run"
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--tasks",
            str(tf),
            "--policy",
            "heuristic:turns=3",
            "--out",
            str(out),
            "--workers",
            "1",
            "--backend",
            "serial",
            *extra,
        ],
    )
    assert r.exit_code == 0, r.output
    rows = {m.group(1): m.groups() for m in map(ROW.fullmatch, r.stdout.splitlines()) if m}
    return rows, pl.read_parquet(out / "summary.parquet"), r.stdout


def test_a_toy_reward_reaches_the_summary_and_its_bounds(tmp_path, monkeypatch):
    add_toy(monkeypatch)
    rows, df, text = _eval(tmp_path, monkeypatch)
    assert "reward_toy_half" in df.columns and "reward_toy_half__half" in df.columns  # the episode table
    vals = df["reward_toy_half"].to_list()
    assert sorted(vals) == [0.1] + [0.5] * 5
    assert mean_ci(vals)[2] > TOY_BOUNDS[1]  # unclipped, the t interval reaches past the declared range
    assert column_bounds("reward_toy_half") == TOY_BOUNDS and column_bounds("reward_toy_half__half") == (0.0, 0.25)
    name, mean, lo, hi, n = rows["reward_toy_half"]  # a row of the printed summary (summary=True) ...
    assert float(mean) == round(sum(vals) / 6, 3) and float(hi) == TOY_BOUNDS[1] and n == "6"  # ... clipped
    assert "reward" in rows and "reward = relace" in text  # the headline reward's row, named in the header
    assert view_columns()["toy (half)"] == "reward_toy_half" and "toy-half" in audit_rewards()


def test_the_headline_reward_has_a_row_clipped_to_its_range(tmp_path, monkeypatch):
    add_toy(monkeypatch)
    rows, df, text = _eval(tmp_path, monkeypatch, "--reward", "toy-half")
    assert df["reward"].to_list() == df["reward_toy_half"].to_list()
    name, mean, lo, hi, n = rows["reward"]
    assert float(hi) == TOY_BOUNDS[1] and "reward = toy-half" in text
    assert "reward_toy_half" not in rows  # the headline's own column is the `reward` row, not printed twice


def test_f05_headline_is_printed(tmp_path, monkeypatch):
    """`fasbench eval --reward f0.5` printed no row for it nor for `reward` before issue 37."""
    rows, df, text = _eval(tmp_path, monkeypatch, "--reward", "f0.5")
    assert float(rows["reward"][1]) == round(df["reward_f0_5"].mean(), 3) and "reward = f0.5" in text


def test_every_reward_declares_its_range():
    """A registry entry without bounds would leave its intervals unclipped (as the name regex left
    reward_grounded_relace*): every shipped reward declares them, its grounded variant inherits them."""
    assert all(r.bounds is not None for r in REWARDS.values()), [n for n, r in REWARDS.items() if r.bounds is None]
    for n in list(REWARDS):
        if not n.startswith(R.GROUNDED):
            g = REWARDS[R.GROUNDED + n]
            assert (g.bounds, dict(g.parts)) == (REWARDS[n].bounds, dict(REWARDS[n].parts))
