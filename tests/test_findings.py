"""The findings cell: numbers with intervals and n, seeds beside them, caveats, as Markdown."""

import math

from fasbench.stats.findings import Findings, ci, ci_of, num, paired_sentence
from fasbench.stats.metrics import paired_test


def test_number_formats_and_missing_values():
    assert ci(0.6825, 0.397, 0.877) == "0.68 [0.40, 0.88]"
    assert ci(-0.2, -0.5, 0.1, signed=True) == "-0.20 [-0.50, +0.10]"
    assert num(0.683, pct=True) == "68%" and num(0.683, 3, pct=True) == "68.3%"
    assert ci(float("nan"), 0, 1) == "–" and ci("1, 0", None, None) == "1, 0"
    # a missing interval is printed one way everywhere (findings, runs, compare, studies): ``[–]``;
    # no bounds at all (a count, a single value) is the value alone
    assert ci(0.5, math.nan, math.nan) == ci(0.5, None, 0.7) == "0.50 [–]" and ci(0.5, None, None) == "0.50"
    assert ci_of({"x": 0.5, "x_lo": math.nan, "x_hi": math.nan}, "x") == "0.50 [–]"
    assert ci_of({"x": 0.25, "x_lo": 0.1, "x_hi": 0.4}, "x", 3, pct=True) == "25.0% [10.0%, 40.0%]"


def test_markdown_has_table_seeds_caveats_and_level():
    f = Findings("baselines", n=12)
    f.add("Heuristic beats BM25.")
    f.metric("file F2", 0.5, 0.4, 0.6, n=12, seed=0.7, seed_source="Relace")
    f.seed("read+search share", 0.461, 0.562, "FastContext", n=500, pct=True, digits=3)
    f.caveat("CPU defaults.")
    md = f._repr_markdown_()
    assert md.startswith("## What we found: baselines")
    assert (
        "n = 12 tasks; intervals [lo, hi] are 95% intervals over tasks (percentile bootstrap; Student t below 10 tasks"
        in md
    )
    assert "| file F2 | 0.50 [0.40, 0.60] | 12 | 0.70 | Relace |" in md
    assert "| read+search share | 46.1% | 500 | 56.2% | FastContext |" in md
    assert "- Heuristic beats BM25." in md and "**Caveats**" in md and "- CPU defaults." in md


def test_paired_findings_claim_a_difference_only_when_the_test_supports_it():
    """The old notebook 03 wrote "differ at p < 0.05" for a policy run on one task (bootstrap p = 0)."""
    rows = [
        {"run": "heur", **paired_test([1.0] * 8 + [0.0], [0.0] * 8 + [1.0])},  # p = 20/512, interval > 0
        {"run": "hf", **paired_test([0.9], [0.1])},  # n = 1: p = 1
        {"run": "dense", **paired_test([1.0] * 4, [0.5] * 4)},
    ]  # n = 4, all up: p = 0.125
    text = paired_sentence("Against BM25 on file-level F2, policies", rows)
    assert text.startswith("Against BM25 on file-level F2, policies: 1 of 3 differ at p < 0.05 with a 95% interval")
    assert "heur +0.778 [+0.333, +1.000] (p = 0.0391, n = 9)" in text
    assert "No difference detectable for hf (p = 1.000, n = 1, smallest attainable p = 1)" in text
    assert "dense (p = 0.125, n = 4, smallest attainable p = 0.125)" in text
    f = Findings("baselines", n=9)
    f.paired("dense − BM25", rows[2])
    md = f.markdown()
    assert "- dense − BM25: +0.500 [no 95% interval at n = 4]: no difference detectable with n = 4 (p = 0.125" in md
    assert "two-sided sign-flip test" in md


def test_every_studys_findings_builder_returns_a_findings():
    """One builder: a study module's ``findings(...)`` is annotated to return a Findings, and the
    older string builders (``findings_markdown``, ``what_we_found``) are gone from fasbench/."""
    import ast

    from fasbench.base.paths import repo_root

    builders, stale = [], []
    for path in sorted((repo_root() / "fasbench").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name in ("findings", "findings_markdown", "what_we_found"):
                rel = path.relative_to(repo_root()).as_posix()
                ret = ast.unparse(node.returns) if node.returns else None
                (builders if node.name == "findings" and ret == "Findings" else stale).append((rel, node.name, ret))
    assert not stale, f"findings builders that do not return a Findings: {stale}"
    assert {b[0] for b in builders} >= {
        "fasbench/trajectories/findings.py",
        "fasbench/rl/turn_curves.py",
        "fasbench/bon/findings.py",
        "fasbench/studies/field.py",
        "fasbench/e2e/findings.py",
    }


def test_blocks_keep_their_order_and_bullets_join_into_one_list():
    f = Findings()
    f.text("Data:").add("a").add("b").table(["x", "y|z"], [[1, "2\n3"]], intro="Table:").add("c")
    md = f.caveat("small").markdown()
    assert md.startswith(
        "## What we found\n\nData:\n\n- a\n- b\n\nTable:\n\n| x | y\\|z |\n|---|---|\n| 1 | 2 3 |\n\n- c"
    )
    assert md.endswith("**Caveats**\n\n- small\n")


def test_resumed_results_say_so_and_fresh_ones_say_nothing():
    f = Findings("x", n=3)
    f.resumed("the episodes", {"bm25": 0, "heuristic:turns=3": 4})
    f.resumed("the SFT model", {"global_step": 10, "max_steps": 10, "steps_this_call": 0, "steps_resumed": 10})
    f.resumed(
        "the dev evaluation",
        {"before": None, "after": "resumed: 2 of 2 episodes from an earlier run (2026-01-02 10:00)"},
    )
    f.resumed("the RL run", {"steps_this_call": 2, "steps_resumed": 0})  # trained from scratch: nothing to say
    f.resumed("a fresh run", None)
    md = f.markdown()
    assert md.count("**Resumed, not computed in this run**") == 3
    assert "the episodes: heuristic:turns=3: 4 episodes from an earlier call" in md and "bm25" not in md
    assert "the SFT model: resumed at step 10 of 10; no step trained in this call" in md
    assert "after: resumed: 2 of 2 episodes from an earlier run" in md and "before" not in md
    assert "RL run" not in md and "fresh run" not in md
