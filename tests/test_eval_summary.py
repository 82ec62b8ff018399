"""`fasbench eval`'s end-of-run summary (issue 27): one header line naming the policy, tool set and task
set once, then one table with a row per metric (mean, 95% CI, n), not a line per metric repeating
the policy spec. A real evaluation of the heuristic policy over the toy corpus."""

from __future__ import annotations

import re
from dataclasses import replace

import polars as pl
import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.runs import RUN_METRICS
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.records import write_tasks


@pytest.mark.slow
def test_eval_prints_one_compact_summary_table(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    base = toy_tasks(make_corpus(tmp_path / "toy"))
    tasks = [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(6)]
    tf = tmp_path / "tasks.jsonl"
    write_tasks(tf, tasks)
    out = tmp_path / "run"
    policy = "heuristic:turns=3"
    r = CliRunner().invoke(
        app,
        ["eval", "--tasks", str(tf), "--policy", policy, "--out", str(out), "--workers", "1", "--backend", "serial"],
    )
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    head = next(ln for ln in lines if ln.startswith("run ") and f"policy {policy}" in ln)
    # the spec once, in the header (before it: run_eval's own line on what this call ran)
    assert sum(policy in ln for ln in lines[lines.index(head) :]) == 1, r.stdout
    assert "tool set relace" in head and str(tf) in head and f"{len(tasks)} episodes" in head
    i = lines.index(head) + 1  # the line under it names the interval method and the limits
    assert lines[i].startswith("intervals over tasks: Student t (n = ") and "limits 6 turns × 12 calls" in lines[i]
    assert re.fullmatch(r"metric +mean +95% CI +n", lines[i + 1])
    row = re.compile(r"(\S+) +(-?\d+\.\d{3}|n/a) +\[(-?\d+\.\d{3}|n/a), (-?\d+\.\d{3}|n/a)\] +(\d+)")
    rows = []
    for ln in lines[i + 2 :]:
        m = row.fullmatch(ln)
        if not m:
            break
        rows.append(m.groups())
    names = [g[0] for g in rows]
    want = [m for m in RUN_METRICS if m != "prepare_s" or m in names]  # prepare_s: only a policy that prepares
    assert names[: len(want)] == want and len(set(names)) == len(names)
    df = pl.read_parquet(out / "summary.parquet")
    by = {g[0]: g for g in rows}
    assert float(by["turns"][1]) == round(df["turns"].mean(), 3) and by["turns"][4] == str(len(tasks))
    for name, mean, lo, hi, _n in rows:
        if mean != "n/a":
            assert float(lo) <= float(mean) <= float(hi), name
    assert lines[i + 2 + len(rows)].startswith(f"{len(tasks)} episodes summarised in")
    if (out / "summary_ci.parquet").exists():  # the localization intervals are still written
        assert "policy" in pl.read_parquet(out / "summary_ci.parquet").columns
