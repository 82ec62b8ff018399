"""Relace's two token measures (fasbench/trajectories/relace_measures.py) on hand-made trajectories
whose answers are worked out by hand, and their place in the analysis summary and seeds table."""

import json

import pytest
from test_trajectories_analysis import _assistant, toy

from fasbench.trajectories import relace_measures as rm
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.plots import seeds_table


def _write(d, name, traj):
    (d / f"{name}.traj.json").write_text(json.dumps(traj))


def only_search(instance="demo__calc-3"):
    """Two search turns and nothing else: (100, 10) grep, (150, 20) cat."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        _assistant(["grep -rn add src"], 100, 10),
        {"role": "tool", "content": "o"},
        _assistant(["cat src/calc.py"], 150, 20),
        {"role": "tool", "content": "o"},
    ]
    return {
        "instance_id": instance,
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": msgs,
    }


def mixed_turn(instance="demo__calc-4"):
    """Turn 1 (100, 20) has three calls: grep, then python (a test: non-search), then cat; turn 2 (200, 0)
    greps again. Search phase: the grep's third of turn 1 only (40 of 120 + 200 = 320 tokens)."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        _assistant(["grep -rn add src", "python -m pytest tests", "cat src/calc.py"], 100, 20),
        *[{"role": "tool", "content": "o"}] * 3,
        _assistant(["grep -rn sub src"], 200, 0),
        {"role": "tool", "content": "o"},
    ]
    return {
        "instance_id": instance,
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": msgs,
    }


@pytest.fixture
def steps(tmp_path):
    d = tmp_path / "set"
    d.mkdir()
    _write(d, "demo__calc-1", toy("demo__calc-1"))
    _write(d, "demo__calc-3", only_search())
    _write(d, "demo__calc-4", mixed_turn())
    return analyze_paths([d], progress=False).steps


def test_per_trajectory_known_answers(steps):
    t = {r["trajectory_id"]: r for r in rm.per_trajectory(steps).iter_rows(named=True)}
    # toy: call tokens 55, 55 (grep + ls, one turn), 170 (cat), then the repro script (an edit: the first
    # non-search call, as Relace's "bash script for testing"), 230, 300, 340
    a = t["demo__calc-1"]
    assert (a["search_tokens"], a["tokens"]) == (280.0, 1150.0)
    assert a["share"] == pytest.approx(280 / 1150)
    assert (a["first_non_search_turn"], a["first_non_search_category"]) == (3, "edit")
    assert a["first_non_search_action"].startswith("cat > repro.py")
    b = t["demo__calc-3"]  # no non-search call: all of it is search
    assert (b["search_tokens"], b["tokens"], b["share"], b["has_non_search"]) == (280.0, 280.0, 1.0, False)
    c = t["demo__calc-4"]  # the boundary falls inside a turn: the calls listed before it count (1/k each)
    assert (c["search_tokens"], c["tokens"], c["first_non_search_category"]) == (40.0, 320.0, "test")


def test_content_basis_counts_each_token_once(steps):
    t = {r["trajectory_id"]: r for r in rm.per_trajectory(steps, "content").iter_rows(named=True)}
    # toy: (completion + observation) × weight = 25, 25, 55 | 60, 70, 10 (observation = growth of the next prompt)
    assert (t["demo__calc-1"]["search_tokens"], t["demo__calc-1"]["tokens"]) == (105.0, 245.0)
    with pytest.raises(ValueError, match="token basis 'words' unknown"):
        rm.per_trajectory(steps, "words")


def test_measures_mean_and_pooled(steps):
    m = rm.measures(steps, n_boot=500)
    shares = [280 / 1150, 1.0, 40 / 320]
    assert m["n"] == 3 and m["without_non_search"] == 1
    sp, ini = m["search_phase_share"], m["initial_search_share"]
    assert sp["value"] == pytest.approx(sum(shares) / 3, abs=1e-6)  # Relace's 56.6%: mean over traces
    assert ini["value"] == pytest.approx((280 + 280 + 40) / (1150 + 280 + 320), abs=1e-6)  # ~12%: pooled
    assert sp["pooled"] == ini["value"] and ini["mean"] == sp["value"]
    assert sp["ci"][0] <= sp["value"] <= sp["ci"][1] and ini["ci"][0] <= ini["value"] <= ini["ci"][1]
    assert (sp["seed"], ini["seed"]) == (0.566, 0.12)
    assert "1,200" in sp["seed_population"] and "not SWE-bench" in sp["seed_population"]
    assert "SWE-bench Verified" in ini["seed_population"]
    assert m["first_non_search_category"] == {"edit": 1, "test": 1}
    assert m["ends_before_first_edit"] == 1  # the toy writes its repro script (turn 3) before editing (turn 4)
    assert m["content_basis"]["search_phase_share"] is not None


def test_measures_on_nothing_and_by_group(steps):
    assert rm.measures(steps.clear())["search_phase_share"] is None
    by = rm.measures_by(steps, "trajectory_id", n_boot=100)
    assert by["demo__calc-3"]["search_phase_share"]["value"] == 1.0


def test_summary_and_seeds_table_label_relace_correctly(steps, tmp_path):
    d = tmp_path / "set"
    s = analyze_paths([d], progress=False).summary()
    assert s["relace"]["search_phase_share"]["value"] == pytest.approx((280 / 1150 + 1 + 40 / 320) / 3, abs=1e-6)
    table = seeds_table({"toy": s})
    rows = {r["metric"]: r for r in table.iter_rows(named=True)}
    sp = next(r for k, r in rows.items() if "first non-search" in k and "mean" in k)
    assert (
        sp["seed value"] == 0.566 and "1,200" in sp["seed (population)"] and sp["toy"] == pytest.approx(0.456, abs=1e-3)
    )
    ini = next(r for k, r in rows.items() if "initial search" in k)
    assert ini["seed value"] == 0.12 and "SWE-bench Verified" in ini["seed (population)"]
    # the whole-trajectory read+search share is FastContext's measure, not compared with Relace's 56.6%
    assert all(r["seed value"] != 0.566 for k, r in rows.items() if k.startswith("read+search share"))
    handoff = next(r for k, r in rows.items() if k.startswith("handoff share"))
    assert handoff["seed value"] is None


def test_relace_findings_have_numbers_seeds_and_caveats(steps):
    from fasbench.stats.findings import Findings

    md = rm.relace_findings(Findings(), {"toy": rm.measures(steps, n_boot=200)}).markdown()
    assert "### Relace's two token measures" in md and "| toy | 3 |" in md
    assert "56.6%" in md and "~12.0%" in md and "**Caveats**" in md and "- (Relace) the agents" in md
    assert "above Relace's ~12%" in md or "consistent with Relace's ~12%" in md


def test_findings_for_notebook_01(tmp_path, steps):
    from fasbench.stats.findings import Findings
    from fasbench.trajectories.findings import findings

    a = analyze_paths([tmp_path / "set"], progress=False)
    f = findings({"toy": a}, {"toy": a.summary()}, n_boot=200)
    assert isinstance(f, Findings)
    md = f.markdown()
    assert (
        md.startswith("## What we found: trajectory analysis")
        and "| FastContext (seed) | 300 | 56.2% | 46.5% | 8.47 |" in md
    )
    assert (
        "- toy: 2 of mini-swe-agent; 1 of mini-swe-agent 2.2.7" in md
        and "| toy | 3 |" in md
        and "### Relace's two token measures" in md
    )
    assert "- (all) the agents, models" in md and md.index("### Relace") < md.index("**Caveats**")


def test_cli_analyze_prints_both_measures_with_their_populations(steps, tmp_path):
    from typer.testing import CliRunner

    from fasbench.cli import app

    r = CliRunner().invoke(
        app, ["trajectories", "analyze", str(tmp_path / "set"), "--out", str(tmp_path / "o"), "--quiet"]
    )
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("tokens before the first non-search call"))
    assert "0.456 mean per trajectory" in line and "~1,200 real agent traces, not SWE-bench" in line
    assert "0.343 pooled" in line and "SWE-bench Verified" in line and "n=3" in line


def test_summary_has_the_measures_per_data_set(tmp_path):
    for name, traj in (("one", toy("demo__calc-1")), ("two", only_search())):
        (tmp_path / name).mkdir()
        _write(tmp_path / name, traj["instance_id"], traj)
    s = analyze_paths([tmp_path / "one", tmp_path / "two"], progress=False).summary()
    by = s["relace_by_dataset"]
    assert by["one"]["search_phase_share"]["value"] == pytest.approx(280 / 1150, abs=1e-6)
    assert by["two"]["initial_search_share"]["value"] == 1.0 and s["relace"]["n"] == 2


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 5])
def test_chunked_per_trajectory_equals_whole(steps, chunk_rows):
    """Slices never split a trajectory, so any slice size gives the same table."""
    for basis in rm.BASES:
        assert rm.per_trajectory(steps, basis, chunk_rows=chunk_rows).equals(rm.per_trajectory(steps, basis))
