"""Best-of-N: selectors, features, exact cost/latency accounting of the strategies on a
hand-made pool, pool I/O and resume, and the end-to-end evaluation on synthetic pools."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fasbench.bon import (
    BonConfig,
    Pool,
    Rollout,
    always_n,
    cascade,
    compare,
    evaluate,
    majority,
    parallel,
    read_pools,
    result_table,
    states,
    threshold_rule,
    tolerance_table,
    union_topk,
    write_pools,
)
from fasbench.bon.features import mean_pairwise_jaccard, pool_features
from fasbench.bon.select import get_selector, highest_confidence, judge_selector, medoid_judge, votes
from fasbench.records import Gold


def R(i, files, latency, cost, conf=None, searched=(), turns=3, calls=6, errors=0) -> Rollout:
    return Rollout(
        task_id="t1",
        index=i,
        seed=i,
        files=None if files is None else {f: [[1, 5]] for f in files},
        quality=0.0,
        reward=0.0,
        latency=latency,
        turns=turns,
        n_calls=calls,
        tool_errors=errors,
        tool_time=latency / 2,
        est_tokens=cost,
        searched=list(searched),
        confidence=conf,
    )


@pytest.fixture
def pool() -> Pool:
    # launch order 0..4; finish order 2 (t=1), 0 (2), 3 (3), 1 (4), 4 (5)
    rs = [
        R(0, ["a.py"], 2.0, 100),
        R(1, ["a.py"], 4.0, 200),
        R(2, ["b.py"], 1.0, 50),
        R(3, ["a.py"], 3.0, 150),
        R(4, ["c.py"], 5.0, 300),
    ]
    return Pool("t1", Gold(edited={"a.py": []}), rs, split="test", reward="relace-f2")


def stop_at(stage):
    return lambda pool, j, n: j == stage


# ---------------------------------------------------------------- accounting


def test_always_max_n(pool):
    o = always_n(pool, majority, cost="est_tokens")
    assert (o.cost, o.latency, o.quality, o.n_used) == (800, 5.0, 1.0, 5)  # a.py has 3/5 votes
    o3 = always_n(pool, majority, 3, cost="est_tokens")
    assert (o3.cost, o3.latency, o3.quality) == (350, 4.0, 1.0)


def test_cascade_accounting(pool):
    full = cascade(pool, majority, [1, 3, 5], cost="est_tokens")  # never stops: batches {0}, {1,2}, {3,4}
    assert (full.cost, full.latency, full.n_used, full.stage) == (800, 2 + 4 + 5, 5, 2)
    mid = cascade(pool, majority, [1, 3, 5], stop_at(1), cost="est_tokens")
    assert (mid.cost, mid.latency, mid.n_used, mid.quality) == (350, 6.0, 3, 1.0)
    first = cascade(pool, majority, [1, 3, 5], stop_at(0), cost="est_tokens")
    assert (first.cost, first.latency, first.quality) == (100, 2.0, 1.0)
    assert cascade(pool, majority, [1, 3, 5], stop_at(0), cost="calls").cost == 6
    with pytest.raises(ValueError, match="needs 10 rollouts"):
        cascade(pool, majority, [1, 3, 10])
    with pytest.raises(ValueError, match="increasing"):
        cascade(pool, majority, [3, 1])


def test_parallel_accounting_prorates_cancelled(pool):
    o = parallel(pool, majority, stop_at(1), cost="est_tokens")  # stop when the 2nd rollout finishes, t=2
    # finished: r2 (50) + r0 (100); cancelled at t=2: r3 150·2/3, r1 200·2/4, r4 300·2/5
    assert o.cost == pytest.approx(150 + 100 + 100 + 120)
    assert o.latency == 2.0 and o.n_used == 2
    # the finished pool is {b.py}, {a.py}: both at 1/2 vote → answer {a, b}: P=1/2, R=1, F2 = 5/6
    assert o.quality == pytest.approx(5 / 6)
    full = parallel(pool, majority, cost="est_tokens")
    assert (full.cost, full.latency, full.quality) == (800, 5.0, 1.0)
    first = parallel(pool, majority, stop_at(0), cost="est_tokens")  # only b.py finished: wrong answer
    assert first.quality == 0.0 and first.latency == 1.0
    assert first.cost == pytest.approx(50 + 100 / 2 + 200 / 4 + 150 / 3 + 300 / 5)
    checked = parallel(pool, majority, stop_at(1), cost="est_tokens", checks=[1, 3, 5])  # 2nd check = 3rd finish
    assert checked.latency == 3.0 and checked.n_used == 3


def test_threshold_rule(pool):
    probs = {("t1", 1): (0.2, 0.9), ("t1", 3): (0.95, 0.95), ("t1", 5): (0.5, 0.5)}
    assert cascade(pool, majority, [1, 3, 5], threshold_rule(probs, 0.9, 0.0)).n_used == 3  # RN fires at 3
    assert cascade(pool, majority, [1, 3, 5], threshold_rule(probs, 0.99, 0.8)).n_used == 1  # RL 0.7 < 0.8: give up
    assert cascade(pool, majority, [1, 3, 5], threshold_rule(probs, 1.01, -1)).n_used == 5  # never


# ---------------------------------------------------------------- selectors and features


def test_selectors(pool):
    v = votes(pool.rollouts)
    assert list(v) == ["a.py", "b.py", "c.py"] and v["a.py"] == pytest.approx(0.6)
    s = majority(pool.rollouts)
    assert list(s.files) == ["a.py"] and s.margin == pytest.approx(0.4) and s.files["a.py"] == [[1, 5]]
    u = union_topk(pool.rollouts, 2)
    assert list(u.files) == ["a.py", "b.py"] and u.margin == pytest.approx(0.0)
    with pytest.raises(ValueError, match="self-confidence"):
        highest_confidence(pool.rollouts)
    rs = [R(0, ["x.py"], 1, 1, conf=0.3), R(1, ["y.py"], 1, 1, conf=0.9), R(2, ["z.py"], 1, 1, conf=0.6)]
    c = highest_confidence(rs)
    assert c.chosen == 1 and list(c.files) == ["y.py"] and c.margin == pytest.approx(0.3)
    j = judge_selector(lambda rollouts: [len(r.files) for r in rollouts])(
        [R(0, ["x.py"], 1, 1), R(1, ["x.py", "y.py"], 1, 1)]
    )
    assert j.chosen == 1
    assert medoid_judge(pool.rollouts)[0] == pytest.approx(2 / 4)  # r0 agrees with r1, r3 of 4 others
    assert get_selector("medoid")(pool.rollouts).chosen == 0
    with pytest.raises(ValueError, match="unknown selector"):
        get_selector("best")
    assert majority([R(0, None, 1, 1)]).files == {}


def test_features(pool):
    assert mean_pairwise_jaccard([frozenset("ab"), frozenset("b"), frozenset("c")]) == pytest.approx((0.5 + 0 + 0) / 3)
    assert mean_pairwise_jaccard([frozenset("a")]) == 1.0
    rs = pool.rollouts[:3]
    f = pool_features(rs, majority(rs))
    assert f["n"] == 3 and f["files_jaccard"] == pytest.approx(1 / 3)
    assert f["top_share"] == pytest.approx(2 / 3) and f["margin"] == pytest.approx(1 / 3)
    assert math.isnan(f["confidence_max"])
    rows = states([pool], majority, "launch", [1, 3, 5])
    assert [r["n"] for r in rows] == [1, 3, 5] and [r["success"] for r in rows] == [1, 1, 1]
    rows = states([pool], majority, "finish", None, success_at=0.9)
    assert [r["success"] for r in rows] == [0, 0, 1, 1, 1]
    assert [r["success_next"] for r in rows] == [0, 1, 1, 1, 1]


def test_signal_features(pool):
    import dataclasses

    rs = pool.rollouts[:3]  # a.py, a.py, b.py; majority selects a.py
    f = pool_features(rs, majority(rs))
    assert all(math.isnan(f[k]) for k in ("verify_mean", "verify_pass", "verify_sel", "indep_sel"))
    ver = [
        {"files": {"a.py": [1, 1, 1, None, 1]}, "score": 1.0, "pass": 1, "indep_recall": 0.5},
        {"files": {"a.py": [1, 1, 0, None, 1]}, "score": 0.75, "pass": 1, "indep_recall": 0.5},
        {"files": {"b.py": [1, 0, 0, None, 0]}, "score": 0.25, "pass": 0, "indep_recall": 0.0},
    ]
    rs = [dataclasses.replace(r, verify=v, confidence=c) for r, v, c in zip(rs, ver, (0.9, 0.7, 0.1))]
    f = pool_features(rs, majority(rs))
    assert f["verify_mean"] == pytest.approx(2 / 3) and f["verify_pass"] == pytest.approx(2 / 3)
    assert f["verify_sel"] == pytest.approx(0.875) and f["indep_sel"] == 1.0
    assert f["indep_recall_mean"] == pytest.approx(1 / 3)
    assert f["confidence_sel"] == pytest.approx(0.8) and f["confidence_max"] == 0.9


def test_pool_io_roundtrip(tmp_path, pool):
    p = write_pools(tmp_path / "p.jsonl.gz", [pool])
    [back] = read_pools(p)
    assert back.task_id == "t1" and back.split == "test" and back.n == 5
    assert back.rollouts[4].files == {"c.py": [[1, 5]]} and back.gold.edited == {"a.py": []}
    assert read_pools(p, n=10) == [] and read_pools(p, n=3)[0].n == 3
    with pytest.raises(FileNotFoundError):
        read_pools(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------- end to end on synthetic pools


def synthetic_pools(n_tasks=60, n=10, seed=0) -> list[Pool]:
    """Tasks of heavy-tailed difficulty: rollout k finds the gold file with the task's rate p
    (easy tasks p≈0.95, hard ones p≈0.2), else cites a random decoy; hard tasks run longer."""
    rng = np.random.default_rng(seed)
    pools = []
    for t in range(n_tasks):
        p = 0.95 if rng.random() < 0.6 else rng.uniform(0.1, 0.6)
        rs = []
        for k in range(n):
            hit = rng.random() < p
            files = ["gold.py"] if hit else [f"decoy{rng.integers(0, 4)}.py"]
            lat = float(rng.lognormal(0.0 if p > 0.9 else 0.5, 0.4))
            rs.append(
                Rollout(
                    f"t{t}",
                    k,
                    k,
                    {f: [[1, 9]] for f in files},
                    float(hit),
                    float(hit),
                    lat,
                    turns=int(rng.integers(2, 6)),
                    n_calls=8,
                    tool_errors=int(rng.integers(0, 2)),
                    tool_time=lat / 2,
                    est_tokens=1000 * lat,
                    searched=files,
                )
            )
        pools.append(Pool(f"t{t}", Gold(edited={"gold.py": []}), rs, split="train" if t < 40 else "test"))
    return pools


def test_evaluate_synthetic_saves_cost():
    pools = synthetic_pools()
    res = evaluate(
        pools,
        BonConfig(
            schedule=(1, 3, 5, 10), n_boot=300, p_grid=(0.5, 0.8, 0.9, 1.01), g_grid=(-1.0, 0.0), folds=3, tune="cost"
        ),
    )
    assert res.n_train == 40 and res.n_test == 20
    cas, par = res.strategies["cascade"], res.strategies["parallel"]
    # the seed's protocol: one pair of thresholds, shared by both strategies
    assert (cas.chosen["p_target"], cas.chosen["g"]) == (par.chosen["p_target"], par.chosen["g"])
    # the oracle bound saves at least what the classifiers do, at no quality loss
    assert cas.calibration["oracle"]["cost_saved"] >= cas.test["cost_saved"] - 1e-9
    assert cas.calibration["oracle"]["dq"] >= 0
    # the never-stop configuration is in the grid: it reproduces max-N quality at the same cost
    never = next(r for r in cas.grid if r["split"] == "test" and r["p_target"] == 1.01 and r["g"] == -1.0)
    assert never["cost_rel"] == pytest.approx(1.0) and never["dq"] == pytest.approx(0.0)
    assert never["latency_rel"] > 1.0  # sequential batches take longer than one parallel batch
    assert cas.chosen["train"]["dq"] >= -1.0 - 1e-9
    t = cas.test
    assert t["cost_saved_lo"] <= t["cost_saved"] <= t["cost_saved_hi"]
    assert t["cost_saved"] > 0.3  # 60% of the tasks are easy: one rollout settles them
    assert par.test["latency_saved"] >= 0.0 and 0 <= par.calibration["rn_brier"] <= 1
    rows = result_table(res)
    assert {r["strategy"] for r in rows} == {"cascade", "parallel"}
    tol = tolerance_table(res, (0.0, 5.0, 50.0))
    assert len(tol) == 6 and all(r["train_dq"] >= -r["max_loss"] - 1e-9 for r in tol if r["strategy"] == "cascade")
    loose = next(r for r in tol if r["strategy"] == "cascade" and r["max_loss"] == 50.0)
    assert loose["test_cost_saved_%"] >= 100 * t["cost_saved"] - 1e-9  # holds on this fixed synthetic set
    assert all(r["n_test_tasks"] == 20 for r in rows)
    # the findings text is written from the numbers, with the seed's beside them
    from fasbench.bon import plots
    from fasbench.bon.findings import findings
    from fasbench.stats.findings import Findings

    f = findings(res, "synthetic", pools=pools)
    md = f.markdown()
    assert isinstance(f, Findings) and md.startswith("## What we found: budget-aware best-of-N")
    assert "| cascade: cost saved | " in md and "\n- **cascade**: cost saved" in md
    assert f"{100 * t['cost_saved']:+.1f}%" in md and "up to +44%" in md and "20 test tasks" in md
    assert f"[{100 * t['cost_saved_lo']:+.1f}%, {100 * t['cost_saved_hi']:+.1f}%]" in md  # findings.ci's layout
    assert ("**reached**" in md) or ("oracle" in md)  # a missed target is explained by the bound
    for fig in (plots.resolve_later_figure(res), plots.bounds_figure(res), plots.latency_spread_figure(pools)):
        assert fig.data


def test_compare_identical_is_zero(pool):
    outs = [always_n(pool, majority)]
    c = compare(outs, outs, n_boot=50)
    assert c["cost_saved"] == 0 and c["cost_saved_lo"] == 0 and c["dq"] == 0


# ---------------------------------------------------------------- real rollouts


def test_build_pools_real_heuristic_resumes(tmp_path):
    from fasbench.bon import build_pools
    from fasbench.policies import make_policy
    from fasbench.records import Task

    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "parser.py").write_text(
        "def parse_header(line):\n    key, value = line.split(':')\n    return key.strip(), value\n"
    )
    (root / "pkg" / "util.py").write_text("def helper():\n    return 1\n")
    (root / "README.md").write_text("A tiny package.\n")
    task = Task(
        id="tiny-1",
        query="parse_header crashes with ValueError when the value contains ':'",
        repo="tiny/tiny",
        gold=Gold(edited={"pkg/parser.py": [[1, 3]]}),
        root=str(root),
        split="train",
    )
    out = tmp_path / "pool.jsonl"
    make = lambda k: make_policy(f"heuristic:temperature=1.0,seed={k}")  # noqa: E731
    build_pools([task], make, "relace", 2, out, progress=False)
    build_pools([task], make, "relace", 3, out, progress=False)  # resumes: only seed 2 runs
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    [pool] = read_pools(out)
    assert [r.seed for r in pool.rollouts] == [0, 1, 2] and pool.split == "train"
    r = pool.rollouts[0]
    assert r.turns >= 1 and r.n_calls >= 1 and r.latency > 0 and r.est_tokens > 0
    assert "pkg/parser.py" in (r.files or {}) and r.quality > 0
    assert any("pkg/parser.py" in x.searched for x in pool.rollouts)  # the viewed file is a searched path
    assert r.cost("tokens") == r.est_tokens  # the heuristic reports no tokens: the estimate stands in


def test_cli_rejects_bad_input(tmp_path, pool):
    from typer.testing import CliRunner

    from fasbench.cli import app

    p = write_pools(tmp_path / "p.jsonl", [pool])
    r = CliRunner().invoke(app, ["bon", "evaluate", str(p), "--schedule", "1,x"])
    assert r.exit_code != 0 and "--schedule" in r.output
    r = CliRunner().invoke(app, ["bon", "pools", "--tasks", "x.jsonl", "--policy", "heuristic:seed=3"])
    assert r.exit_code != 0 and "seed" in r.output


def test_cli_evaluate_prints_one_json_line_per_strategy(tmp_path):
    import json

    from typer.testing import CliRunner

    from fasbench.cli import app

    p = write_pools(tmp_path / "syn.jsonl.gz", synthetic_pools())
    r = CliRunner().invoke(app, ["bon", "evaluate", str(p), "--n-boot", "50", "--out", str(tmp_path / "res.json")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in r.output.splitlines() if line.startswith("{")]
    assert [x["strategy"] for x in rows] == ["cascade", "parallel"]
    for x in rows:
        assert {"strategy", "cost_saved_%", "latency_saved_%", "dq_points", "dq_ci", "n_test_tasks"} <= set(x)
        assert x["n_test_tasks"] == 20 and x["p_target"] == rows[0]["p_target"]  # one shared threshold pair
    assert json.loads((tmp_path / "res.json").read_text())["latency_source"] == "wall"  # no token split here
    for bad, what in (
        (["--tune", "speed"], "tune"),
        (["--latency", "model"], "token split"),
        (["--decode-tps", "0"], "speeds"),
    ):
        r = CliRunner().invoke(app, ["bon", "evaluate", str(p), "--n-boot", "10", *bad])
        assert r.exit_code == 2 and what in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["bon", "evaluate", "no-such-pool"])
    assert r.exit_code == 2 and "no pool" in r.output
    r = CliRunner().invoke(app, ["bon", "evaluate", str(p), "--selector", "llm-judge"])
    assert r.exit_code == 2 and "--judge" in r.output


def test_cli_pools_takes_a_task_set_name(tmp_path, monkeypatch):
    """``--tasks`` is a task-set name (fasbench.data.tasksets): FILE:SPLIT keeps that split in file order;
    a bad name is a one-line error."""
    from typer.testing import CliRunner

    from fasbench.cli import app
    from fasbench.records import Task, write_tasks

    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    root.mkdir()
    (root / "mod.py").write_text("def parse(x):\n    return x.split(':')\n")
    tasks = [
        Task(
            id=f"t{i}",
            query="parse splits on every ':'",
            repo="tiny/tiny",
            gold=Gold(edited={"mod.py": [[1, 2]]}),
            root=str(root),
            split=s,
        )
        for i, s in enumerate(["dev", "train", "test", "train"])
    ]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    r = CliRunner().invoke(
        app,
        [
            "bon",
            "pools",
            "--tasks",
            f"{tmp_path / 'tasks.jsonl'}:train",
            "--n",
            "1",
            "--name",
            "ts",
            "--max-turns",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert [p.task_id for p in read_pools(tmp_path / "cache" / "bon" / "ts.jsonl")] == ["t1", "t3"]
    r = CliRunner().invoke(app, ["bon", "pools", "--tasks", "swebench-lite:val", "--name", "ts"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "unknown split 'val'" in r.output
