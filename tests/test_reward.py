"""Reward formulas against hand-computed values, including the edge cases."""

import json
import subprocess
import sys

import pytest

from fasbench.records import Gold, Report
from fasbench.scoring.reward import REWARDS, score_batch, score_report, turn_penalty


def rep(*paths, ranges=None):
    return Report(files={p: (ranges or [[1, 10]]) for p in paths}, explanation="")


@pytest.mark.parametrize(
    "n,expected", [(0, 1.0), (1, 1.0), (4, 1.0), (5, 0.95), (14, 0.5), (23, 0.05), (24, 0.0), (40, 0.0), (None, 1.0)]
)
def test_turn_penalty(n, expected):
    assert turn_penalty(n) == pytest.approx(expected)


def test_relace_f2_hand_computed():
    g = Gold(edited={"a.py": [[1, 5]], "b.py": [[3, 4]]})
    s = score_report("relace-f2", g, rep("a.py", "c.py"), turns=4)
    # P = R = 0.5 -> F2 = 5*0.25 / (4*0.5 + 0.5) = 0.5; no penalty at 4 turns
    assert s.value == pytest.approx(0.5)
    assert s.parts["precision"] == 0.5 and s.parts["recall"] == 0.5
    assert score_report("relace-f2", g, rep("a.py", "c.py"), turns=14).value == pytest.approx(0.25)
    assert score_report("relace-f2", g, rep("a.py", "c.py"), turns=24).value == 0.0
    # P = 0.25, R = 1 -> F2 = 5*0.25 / (1 + 1) = 0.625
    g1 = Gold(edited={"a.py": []})
    assert score_report("relace-f2", g1, rep("a.py", "b.py", "c.py", "d.py"), turns=2).value == pytest.approx(0.625)


def test_zero_precision_zero_recall_and_empty_report():
    g = Gold(edited={"a.py": [[1, 2]]})
    for name in REWARDS:
        kw = {"shown": {}} if name.startswith("grounded-") else {}  # a grounded reward needs the observations
        assert score_report(name, g, rep("zzz.py"), turns=1, **kw).value == 0.0 or "fastcontext" in name
        assert score_report(name, g, Report(), turns=1, **kw).value == 0.0
        assert score_report(name, g, None, turns=1, **kw).value == 0.0
    # FastContext gives 1 point for citing at all, even a wrong file (F0.5 = 0, no over-citation)
    assert score_report("fastcontext", g, rep("zzz.py")).value == pytest.approx(1.0)


def test_duplicate_and_prefixed_paths_count_once():
    g = Gold(edited={"pkg/a.py": [[1, 3]]})
    r = Report(files={"./pkg/a.py": [[1, 2]], "/repo/pkg/a.py": [[3, 3]], "pkg//a.py": [[2, 2]]})
    s = score_report("relace-f2", g, r, turns=3)
    assert s.value == pytest.approx(1.0) and s.parts["precision"] == 1.0
    assert score_report("line-f1", g, r).value == pytest.approx(1.0)
    # the workspace root as a prefix
    r2 = Report(files={"/tmp/ws/pkg/a.py": [[1, 3]]})
    assert score_report("relace-f2", g, r2, root="/tmp/ws").value == pytest.approx(1.0)


def test_relace_hybrid_soft_precision():
    g = Gold(edited={"a.py": []}, viewed={"b.py", "c.py"}, source="agent-trace")
    s = score_report("relace-hybrid", g, rep("a.py", "b.py", "d.py"), turns=3)
    # Ps = 2/3 (a edited, b viewed), R = 1 -> A1 = 2*(2/3)/(2/3+1) = 0.8
    assert s.parts["soft_precision"] == pytest.approx(2 / 3)
    assert s.value == pytest.approx(0.8)
    # viewed-only citations give precision but no recall
    assert score_report("relace-hybrid", g, rep("b.py"), turns=3).value == 0.0
    # "relace" picks the hybrid for agent-trace gold and F2 otherwise
    assert score_report("relace", g, rep("a.py", "b.py", "d.py"), turns=3).value == pytest.approx(0.8)
    g2 = Gold(edited={"a.py": []}, viewed={"b.py"}, source="pr")
    assert score_report("relace", g2, rep("a.py", "b.py"), turns=3).value == pytest.approx(
        score_report("relace-f2", g2, rep("a.py", "b.py"), turns=3).value
    )
    # no viewed gold: falls back to precision vs edited, and says so
    g3 = Gold(edited={"a.py": []})
    s3 = score_report("relace-hybrid", g3, rep("a.py", "b.py"))
    assert s3.value == pytest.approx(2 * 0.5 / 1.5) and "no viewed" in s3.reason


def test_fastcontext_hand_computed():
    g = Gold(edited={"a.py": [[1, 2]], "b.py": [[5, 6]]})
    s = score_report("fastcontext", g, rep("a.py", "b.py", "c.py"))
    p, r = 2 / 3, 1.0
    f05 = 1.25 * p * r / (0.25 * p + r)
    assert s.value == pytest.approx(1 + f05 - 0.1 * (3 - 2) / 2)
    assert "no judge given" in s.reason and s.parts["judged"] == 0.0
    # exact answer: 1 + 1 - 0 = 2
    assert score_report("fastcontext", g, rep("a.py", "b.py")).value == pytest.approx(2.0)


def test_fastcontext_finish_reason_as_released():
    """generate_with_fastcontext.py: score_file counts only after finish reason 'stop'; a
    truncated/aborted episode keeps the citation point; any other finish is FAILED → 0 outright."""
    g = Gold(edited={"a.py": [[1, 2]]})
    assert score_report("fastcontext", g, rep("a.py"), finish_reason="stop").value == pytest.approx(2.0)
    for fr in ("length", "abort"):
        s = score_report("fastcontext", g, rep("a.py"), finish_reason=fr)
        assert s.value == pytest.approx(1.0) and s.parts["score_file"] == 0.0 and s.parts["f0.5"] == 1.0
    for fr in ("tool_calls", "error", None):
        assert score_report("fastcontext", g, rep("a.py"), finish_reason=fr).value == 0.0


def test_fastcontext_needs_a_line_citation():
    """utils.parse_final_answer counts only `path:N` / `path:S-E` lines: a bare file is no citation."""
    g = Gold(edited={"a.py": [[1, 2]]})
    s = score_report("fastcontext", g, Report(files={"a.py": []}))
    assert s.value == 0.0 and "no citation" in s.reason
    # a bare file beside a cited one is not a predicted file either (the release never parses it)
    s = score_report("fastcontext", g, Report(files={"a.py": [[1, 2]], "b.py": []}))
    assert s.value == pytest.approx(2.0)


def test_f05_and_batch():
    g = Gold(edited={"a.py": []})
    s = score_report("f0.5", g, rep("a.py", "b.py"))
    assert s.value == pytest.approx(1.25 * 0.5 / (0.25 * 0.5 + 1))
    out = score_batch("relace-f2", [g, g], [rep("a.py"), None], [1, 30])
    assert [o.value for o in out] == [1.0, 0.0]
    with pytest.raises(ValueError):
        score_batch("relace-f2", [g], [], [])
    with pytest.raises(ValueError, match="unknown reward"):
        score_report("nope", g, None)


def test_line_f1():
    g = Gold(edited={"a.py": [[10, 19]]})
    s = score_report("line-f1", g, Report(files={"a.py": [[15, 24]]}))
    assert s.parts["precision"] == pytest.approx(0.5) and s.parts["recall"] == pytest.approx(0.5)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fasbench.cli", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_score():
    gold = json.dumps({"edited": {"a.py": [[1, 5]], "b.py": [[3, 4]]}, "viewed": None})
    report = json.dumps({"files": {"a.py": [[1, 5]], "c.py": [[1, 1]]}, "explanation": "x"})
    p = _cli("score", "--gold", gold, "--report", report, "--turns", "14", "--reward", "relace-f2")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["score"] == pytest.approx(0.25) and out["parts"]["turn_penalty"] == 0.5
    bad = _cli("score", "--gold", '{"viewed": []}', "--report", report, "--reward", "relace-f2")
    assert bad.returncode == 2 and "edited" in bad.stderr
    bad2 = _cli("score", "--gold", gold, "--report", "{not json", "--reward", "relace-f2")
    assert bad2.returncode == 2 and "--report" in bad2.stderr
    bad3 = _cli("score", "--gold", gold, "--report", report, "--reward", "f9")
    assert bad3.returncode == 2 and "unknown reward" in bad3.stderr


def test_every_reward_takes_the_one_episode_signature():
    """(gold, report, *, turns, root, trace, query, judge, **_): every reward of the registry accepts
    every fact of the episode, and facts it does not use (an extra keyword) change nothing."""
    from fasbench.records import Trace

    g = Gold(edited={"a.py": [[1, 5]]})
    tr = Trace(task_id="t", policy="p", toolset="relace", stop_reason="reported", report=rep("a.py"))
    for name, r in REWARDS.items():
        full = r(g, rep("a.py"), turns=2, root=None, trace=tr, query="q", judge=None, unused=1)
        assert full.value == score_report(name, g, rep("a.py"), 2, trace=tr, query="q").value, name


def test_judged_is_a_property_of_the_registry_entry():
    from fasbench.scoring.reward import judged_rewards, reward_named

    assert judged_rewards() == [
        "fastcontext",
        "fastcontext-lenient",
        "grounded-fastcontext",
        "grounded-fastcontext-lenient",
    ]
    assert not reward_named("relace").judged
    with pytest.raises(ValueError, match="unknown reward 'nope'; choose one of relace, "):
        reward_named("nope")
