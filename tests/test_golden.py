"""Golden traces (tests/data/golden/): recorded heuristic episodes of every registered tool set
(``fasbench.tools.TOOLSETS``), replayed through the current code. Two checks per tool set:

- the recorded tool calls, replayed with a scripted policy, give the recorded observations, report,
  stop reason and rewards (a change in a tool, the harness or a reward shows here);
- the heuristic policy, run again, makes the recorded calls and reaches the recorded report (a change
  in the policy or the prompts shows here).

Timings and ids are not compared. After a deliberate change, regenerate with
``PYTHONPATH=. python tests/data/golden/regenerate.py`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fasbench.harness import Limits, run_episode
from fasbench.policies import ScriptedPolicy

_spec = importlib.util.spec_from_file_location(
    "golden_regenerate", Path(__file__).parent / "data" / "golden" / "regenerate.py"
)
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

REGEN = "regenerate with PYTHONPATH=. python tests/data/golden/regenerate.py if the change is deliberate"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return golden.build_repo(tmp_path_factory.mktemp("golden"))


def load(toolset: str) -> list[dict]:
    return json.loads(golden.golden_path(toolset).read_text())


def assert_episode(got: dict, want: dict, keys) -> None:
    where = f"{want['toolset']} episode {want['task_id']}"
    for k in keys:
        if k == "turns":
            assert len(got["turns"]) == len(want["turns"]), f"{where}: turn count differs; {REGEN}"
            for i, (g, w) in enumerate(zip(got["turns"], want["turns"])):
                assert g["calls"] == w["calls"], f"{where}, turn {i}: tool calls differ; {REGEN}"
                for j, (gr, wr) in enumerate(zip(g["results"], w["results"])):
                    assert gr == wr, (
                        f"{where}, turn {i}, call {j} ({w['calls'][j]['name']}): observation differs; {REGEN}"
                    )
                assert g == w, f"{where}, turn {i} differs; {REGEN}"
        elif k == "rewards":
            assert set(got["rewards"]) == set(want["rewards"])
            for name, w in want["rewards"].items():
                g = got["rewards"][name]
                assert g["score"] == pytest.approx(w["score"], abs=1e-12), f"{where}: reward {name} differs; {REGEN}"
                assert g["parts"] == pytest.approx(w["parts"], abs=1e-12), f"{where}: reward {name} parts differ"
                assert g["reason"] == w["reason"], f"{where}: reward {name} reason differs; {REGEN}"
        else:
            assert got[k] == want[k], f"{where}: {k} differs; {REGEN}"


def check_recorded(root, toolset: str, episodes: list[dict]) -> None:
    """The recorded tool calls, replayed with a scripted policy, give the recorded observations, report,
    stop reason and rewards."""
    tasks = {t.id: t for t in golden.tasks(root)}
    for want in episodes:
        task = tasks[want["task_id"]]
        script = [{"text": t["text"], "calls": t["calls"]} for t in want["turns"]]
        trace = run_episode(
            task,
            ScriptedPolicy(script, name=want["policy"]),
            toolset,
            Limits(max_turns=want["max_turns"], **golden.LIMITS),
        )
        trace.meta["max_turns"] = want["max_turns"]
        assert_episode(
            golden.episode_record(task, trace),
            want,
            ("prompt", "turns", "report", "stop_reason", "error", "final_note_turn", "rewards"),
        )


def check_heuristic(root, toolset: str, episodes: list[dict]) -> None:
    """The heuristic, run again, makes the recorded calls and reaches the recorded report."""
    for got, want in zip(golden.record(root, toolset), episodes, strict=True):
        assert_episode(
            got,
            want,
            (
                "task_id",
                "max_turns",
                "query",
                "gold",
                "policy",
                "prompt",
                "turns",
                "report",
                "stop_reason",
                "error",
                "final_note_turn",
                "rewards",
            ),
        )


def check_coverage(toolset: str, eps: list[dict]) -> None:
    assert len(eps) == len(golden.RUNS) and all(e["toolset"] == toolset for e in eps)
    assert sum(len(t["calls"]) for e in eps for t in e["turns"]) >= 10
    assert any(len(e["turns"]) > 4 for e in eps)  # one episode long enough for a turn penalty below 1
    assert any(e["final_note_turn"] is not None for e in eps)  # and one that met the last-turn note


def test_golden_files_cover_every_tool_set():
    files = {p.stem for p in golden.HERE.glob("*.json")}
    assert files == set(golden.TOOLSETS), (
        f"golden files {sorted(files)} for the registered tool sets {sorted(golden.TOOLSETS)}: {REGEN} NAME"
    )
    for ts in golden.TOOLSETS:
        check_coverage(ts, load(ts))


@pytest.mark.parametrize("toolset", golden.TOOLSETS)
def test_recorded_calls_give_recorded_observations_report_and_rewards(root, toolset):
    check_recorded(root, toolset, load(toolset))


@pytest.mark.parametrize("toolset", golden.TOOLSETS)
def test_heuristic_reproduces_the_golden_episodes(root, toolset):
    check_heuristic(root, toolset, load(toolset))
