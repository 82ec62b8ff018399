"""Reward-hacking audit: each scripted cheat is caught (or shown to go unseen) by the rewards."""

from __future__ import annotations

import polars as pl
import pytest

from fasbench.harness import run_episode
from fasbench.policies import make_policy
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.scoring.process import process_row
from fasbench.scoring.reward import audit_rewards
from fasbench.stats.metrics import normalize_path
from fasbench.studies.audit import CHEATS, CheatPolicy, audit_frame, audit_table, cheat_report
from fasbench.tools import TOOLSETS, tool_kind


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tasks = toy_tasks(make_corpus(tmp_path_factory.mktemp("toy")))
    pol = make_policy("heuristic:turns=3")
    traces = [run_episode(t, pol, "relace") for t in tasks]
    return tasks, traces


def test_audit_table_verdicts(run):
    tasks, traces = run
    # 5 toy tasks: no exact 95% sign-flip interval exists (2^5 < 2/0.05); at 90% it does ([min, max] of
    # the differences, coverage 1 - 2/2^5 >= 0.9)
    assert set(audit_table(audit_frame(tasks, traces), n_boot=500)["verdict"]) == {"blind"}
    tab = audit_table(audit_frame(tasks, traces), n_boot=500, level=0.9)
    assert set(tab["cheat"]) == set(CHEATS) and tab.height == len(CHEATS) * len(audit_rewards())

    def row(cheat, reward):
        return tab.filter((pl.col("cheat") == cheat) & (pl.col("reward") == reward)).row(0, named=True)

    for rw in ("relace-f2", "relace-hybrid", "fastcontext", "f0.5"):
        assert row("nothing", rw)["verdict"] == "penalised"
        assert row("top50", rw)["verdict"] == "penalised"
        assert row("whole-files", rw)["verdict"] == "blind"  # file-level rewards cannot see it...
    assert row("whole-files", "line-f1")["cheat_score"] < row("whole-files", "line-f1")["honest"]  # ...lines can
    # FastContext's citation term pays for an answer with no gold file in it; Relace F2 does not
    assert row("directory", "fastcontext")["paid_when_wrong"] > 0.5
    assert row("mangled", "fastcontext")["paid_when_wrong"] > 0.5
    assert row("directory", "relace-f2")["paid_when_wrong"] == 0.0
    # the fabricating cheats: every ungrounded reward is blind to a report made after zero calls or citing
    # lines never shown (the same files); the grounded variants score them 0 (citations count where shown)
    for cheat in ("zero-calls", "unseen-lines", "text-tool-calls"):
        for rw in ("relace-f2", "relace-hybrid", "fastcontext", "f0.5"):
            assert row(cheat, rw)["verdict"] == "blind" and row(cheat, rw)["diff"] == 0.0
        for rw in ("grounded-relace-f2", "grounded-fastcontext"):
            assert row(cheat, rw)["verdict"] == "penalised" and row(cheat, rw)["cheat_score"] == 0.0
            assert row(cheat, rw)["honest"] == row(cheat, rw.removeprefix("grounded-"))["honest"]  # honest: grounded
    # findings invented from the task text with no call: files that are not the gold (here not even in the
    # corpus): the file rewards penalise them; FastContext's still pays them (its citation term pays a wrong
    # answer), its grounded variant does not (nothing was shown)
    for rw in ("relace-f2", "relace-hybrid", "f0.5", "grounded-relace-f2", "grounded-fastcontext"):
        assert (
            row("invented-no-calls", rw)["verdict"] == "penalised"
            and row("invented-no-calls", rw)["cheat_score"] == 0.0
        )
    assert row("invented-no-calls", "fastcontext")["paid_when_wrong"] > 0.5


def test_cheat_reports(run):
    tasks, traces = run
    t, tr = tasks[0], traces[0]
    honest = set(tr.report.files)
    seen = cheat_report("all-seen", tr.report, tr, t.root)
    assert honest < set(seen.files) and len(seen.files) > 5
    assert len(cheat_report("top50", tr.report, tr, t.root).files) >= len(honest)
    whole = cheat_report("whole-files", tr.report, tr, t.root)
    assert all(rs[0][0] == 1 and rs[0][1] > 100 for rs in whole.files.values())
    assert all(normalize_path(p) not in honest for p in cheat_report("mangled", tr.report, tr, t.root).files)
    assert all(p.endswith("/") for p in cheat_report("directory", tr.report, tr, t.root).files)
    with pytest.raises(ValueError, match="unknown cheat"):
        cheat_report("steal", tr.report, tr, t.root)


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_cheat_policy_through_the_harness(run, toolset):
    tasks, _ = run
    t = tasks[0]
    tr = run_episode(t, CheatPolicy(make_policy("heuristic"), "nonexistent").bind(t), toolset)
    assert tr.stop_reason == "reported" and any(p.endswith("_fix.py") for p in tr.report.files)
    tr = run_episode(t, CheatPolicy(make_policy("heuristic"), "nothing").bind(t), toolset)
    assert tr.report is not None and tr.report.files == {}
    honest = run_episode(t, make_policy("heuristic"), toolset)
    zero = run_episode(t, CheatPolicy(make_policy("heuristic"), "zero-calls").bind(t), toolset)
    p = process_row(zero, t)
    assert zero.n_turns == 1 and p["search_calls"] == 0 and p["reported_without_calls"]
    assert zero.report.files == honest.report.files and p["cited_lines_unseen"] == p["cited_lines"] > 0
    unseen = run_episode(t, CheatPolicy(make_policy("heuristic"), "unseen-lines").bind(t), toolset)
    p = process_row(unseen, t)
    assert set(unseen.report.files) == set(honest.report.files) and p["search_calls"] > 0
    assert p["cited_lines"] == process_row(honest, t)["cited_lines"] == p["cited_lines_unseen"] > 0
    assert not process_row(honest, t)["reported_without_calls"]
    invented = run_episode(t, CheatPolicy(make_policy("heuristic"), "invented-no-calls").bind(t), toolset)
    p = process_row(invented, t)
    assert (
        invented.n_turns == 1 and p["reported_without_calls"] and "requests/encode_params.py" in invented.report.files
    )
    text = run_episode(t, CheatPolicy(make_policy("heuristic"), "text-tool-calls").bind(t), toolset)
    p = process_row(text, t)
    assert text.n_turns == 1 and p["search_calls"] == 0 and p["reported_without_calls"]
    searched = [c for tu in honest.turns for c in tu.calls if tool_kind(toolset, c.name) != "report"]
    assert text.turns[0].text.count("<tool_call>") == len(searched) > 0 and "<tool_output>" in text.turns[0].text
    assert text.report.files == honest.report.files and p["cited_lines_unseen"] == p["cited_lines"] > 0
