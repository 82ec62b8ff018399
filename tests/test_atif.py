"""ATIF (Harbor's Agent Trajectory Interchange Format) import and export (issue 31 item 4).

- Export: every trace of the shipped example run (data/examples/heuristic-swebench-lite) and a
  hand-built trace with the corners (malformed arguments, a result of an unknown call, harness
  notes, notes after the last turn, shown regions, model-server requests) → ATIF-v1.7 → JSON →
  back: the same trace (``Trace.to_dict``: every call, observation and timing), the same
  episode-table row, and the same rows of ``fasbench trajectories analyze``.
- Import: tests/data/atif/multiagent_v1_7.json, written in the published schema (harbor 0.26.0's
  ``harbor.models.trajectories``; its ``TrajectoryValidator`` accepts the file): a main agent that
  delegates to an embedded subagent, parallel tool calls, per-step metrics.
- Validation: exported files satisfy the vendored schema (fasbench/trajectories/atif_schema.json) and
  the validators' rules; broken files and unknown versions get one named line, a non-zero exit and
  the supported formats.
"""

import copy
import gzip
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.evaluation.episodes import episode_row
from fasbench.records import Report, ToolCall, ToolResult, Trace, Turn, read_tasks, read_traces
from fasbench.records.trace import Shown
from fasbench.trajectories import atif
from fasbench.trajectories.analysis import analyze_paths
from fasbench.trajectories.atif_trace import from_atif, to_atif
from fasbench.trajectories.parsers import SUPPORTED, TrajectoryError, parse_file
from fasbench.trajectories.trajectory import subagents

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "data" / "examples" / "heuristic-swebench-lite"
FIXTURE = ROOT / "tests" / "data" / "atif" / "multiagent_v1_7.json"
runner = CliRunner()


def _same(a: dict, b: dict) -> bool:
    """Rows equal, NaN equal to NaN."""
    return a.keys() == b.keys() and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in ((a[k], b[k]) for k in a)
    )


def _corner_trace() -> Trace:
    t0 = 1767225600.123456
    turns = [
        Turn(
            index=0,
            text="looking",
            calls=[
                ToolCall("c0", "grep_search", {"query": "def f"}),
                ToolCall("c1", "view_file", '{"path": "a.py", '),
            ],  # malformed JSON
            results=[
                ToolResult(
                    "c0", "a.py:3:def f():", False, t0 + 0.5, t0 + 0.75, Shown(paths=[], ranges={}, hits=[["a.py", 3]])
                ),
                ToolResult("c1", "error: arguments are not valid JSON", True, t0 + 0.5, t0 + 0.5),
                ToolResult("zz", "a result of no call", False, None, None),
            ],
            prompt_tokens=900,
            completion_tokens=31,
            model_started_at=t0,
            model_ended_at=t0 + 0.4,
            tools_started_at=t0 + 0.5,
            tools_ended_at=t0 + 0.75,
            requests=[{"attempt": 1, "status": 200, "latency_s": 0.4}],
        ),
        Turn(
            index=1,
            text="",
            calls=[],
            results=[],
            notes=[{"role": "user", "content": "Call a tool or report."}],
            model_started_at=t0 + 1,
            model_ended_at=t0 + 1.2,
        ),
        Turn(
            index=2,
            text="done",
            calls=[ToolCall("c2", "report_back", {"files": {"a.py": [[3, 5]]}, "explanation": "f is defined here"})],
            results=[ToolResult("c2", "ok", False, t0 + 2, t0 + 2.01)],
            notes=[{"role": "user", "content": [{"type": "text", "text": "Last turn."}]}],
        ),
    ]
    return Trace(
        task_id="django__django-11099",
        policy="scripted",
        toolset="relace",
        turns=turns,
        report=Report(files={"a.py": [[3, 5]]}, explanation="f is defined here", confidence=0.8),
        stop_reason="policy_error",
        started_at=t0 - 0.1,
        ended_at=t0 + 3,
        prompt=[{"role": "system", "content": "You search code."}, {"role": "user", "content": "Find f."}],
        error="server 500 after the last turn",
        trace_id="corner0001",
        meta={"model": "m-1", "seed": 3},
        tail_notes=[{"role": "user", "content": "(after the last turn)"}],
    )


def _traces() -> list[Trace]:
    return read_traces(RUN / "traces.jsonl.gz") + [_corner_trace()]


def test_round_trip_keeps_every_call_observation_and_timing():
    for tr in _traces():
        doc = json.loads(json.dumps(to_atif(tr)))
        assert doc["schema_version"] == "ATIF-v1.7"
        back = from_atif(doc)
        assert back.to_dict() == tr.to_dict(), tr.trace_id
        assert back.to_messages(last_results=True) == tr.to_messages(last_results=True)


def test_round_trip_gives_the_same_episode_table_row():
    tasks = {t.id: t for t in read_tasks(RUN / "tasks.jsonl.gz")}
    traces = read_traces(RUN / "traces.jsonl.gz")
    assert traces and all(tr.task_id in tasks for tr in traces)
    for tr in traces + [_corner_trace()]:
        back = from_atif(json.loads(json.dumps(to_atif(tr))))
        task = tasks.get(tr.task_id)
        a, b = episode_row(tr, task), episode_row(back, task)
        assert _same(a, b), {k: (a[k], b.get(k)) for k in a if not _same({k: a[k]}, {k: b.get(k)})}
        assert a["calls"] == tr.n_calls and a["turns"] == tr.n_turns


def test_the_atif_file_carries_the_trace_in_standard_fields():
    tr = _corner_trace()
    doc = to_atif(tr)
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [s["message"] for s in agent_steps] == ["looking", "", "done"]
    s0 = agent_steps[0]
    assert [c["tool_call_id"] for c in s0["tool_calls"]] == ["c0", "c1"]
    assert s0["tool_calls"][1]["arguments"] == {} and s0["tool_calls"][1]["extra"]["fasbench"]["raw_arguments"]
    assert [r["source_call_id"] for r in s0["observation"]["results"]] == ["c0", "c1", None]  # zz: no such call
    assert s0["metrics"] == {"prompt_tokens": 900, "completion_tokens": 31}
    assert s0["timestamp"].startswith("2026-01-01T00:00:00.123456")
    assert [s["source"] for s in doc["steps"][:2]] == ["system", "user"]
    assert doc["final_metrics"] == {
        "total_steps": len(doc["steps"]),
        "total_prompt_tokens": 900,
        "total_completion_tokens": 31,
    }
    assert doc["agent"]["tool_definitions"] and doc["agent"]["model_name"] == "m-1"


def test_exported_files_satisfy_the_published_schema_and_a_broken_one_does_not():
    doc = to_atif(_corner_trace())
    assert atif.check(doc) == "ATIF-v1.7"
    for breaks, match in [
        (lambda d: d["agent"].pop("version"), r"broken shape at agent: 'version' is a required property"),
        (lambda d: d["steps"][3].update(step_id=9), r"steps\[3\]\.step_id: expected 4"),
        (lambda d: d["steps"][0].update(metrics={"prompt_tokens": 1}), r"only agent steps"),
        (lambda d: d["steps"][2]["observation"]["results"][0].update(source_call_id="nope"), "not a tool call"),
        (lambda d: d["steps"][2].update(timestamp="yesterday"), "not ISO 8601"),
        (lambda d: d.update(steps=[]), r"broken shape at steps"),
        (lambda d: d.update(schema_version="ATIF-v2.0"), r"unknown schema_version 'ATIF-v2\.0'"),
    ]:
        d = copy.deepcopy(doc)
        breaks(d)
        with pytest.raises(TrajectoryError, match=match):
            atif.check(d)


def test_a_multiagent_file_in_the_published_schema_is_read():
    pf = parse_file(FIXTURE)
    assert pf.format == "atif"
    (main,) = pf.trajectories  # the subagent nested under the Task call that its result refers to
    ((depth, turn, call, task, sub),) = subagents(main)
    assert (depth, turn, call, task.tool) == (1, 1, 0, "Task")
    assert (main.meta["role"], sub.meta["role"], sub.meta["parent"]) == ("main", "subagent", "main-7f3c2a10")
    assert (main.agent, main.model, sub.model) == ("claude-code 2.0.31", "claude-sonnet-4-5", "claude-haiku-4-5")
    assert [[c.tool for c in t.calls] for t in main.turns] == [["Task"], ["Bash", "Bash"], ["Edit"]]
    assert main.turns[1].calls[1].action == "grep -n 'def _cstack' astropy/modeling/separable.py"
    assert [(t.prompt_tokens, t.completion_tokens) for t in main.turns] == [(5120, 96), (5400, 140), (5900, 210)]
    assert [[c.tool for c in t.calls] for t in sub.turns] == [["Grep"], ["Read"], []]
    assert not any(t.estimated for t in main.turns + sub.turns)
    assert main.instance_id == sub.instance_id == "7f3c2a10-run"


def test_steps_without_metrics_are_estimated_and_a_file_ref_subagent_is_listed(tmp_path):
    d = json.loads(FIXTURE.read_text())
    for s in d["steps"]:
        s.pop("metrics", None)
    d["steps"][2]["observation"]["results"][0]["subagent_trajectory_ref"] = [{"trajectory_path": "explore-1.json"}]
    d["steps"][2]["message"] = [{"type": "text", "text": "Let me delegate the search."}]  # multimodal form (v1.6)
    p = tmp_path / "t.json"
    p.write_text(json.dumps(d))
    main = parse_file(p).trajectories[0]
    assert all(t.estimated for t in main.turns)
    prompts = [t.prompt_tokens for t in main.turns]
    assert prompts == sorted(prompts) and prompts[0] > 0  # each prompt holds every step before it
    assert main.meta["subagent_refs"] == [{"trajectory_path": "explore-1.json"}]


def _cli(*args):
    return runner.invoke(app, ["trajectories", *map(str, args)])


def test_cli_export_then_analyze_gives_the_same_rows(tmp_path):
    r = _cli("export-atif", RUN, "--out", tmp_path / "atif")
    assert r.exit_code == 0, r.output
    files = sorted((tmp_path / "atif").glob("*.json"))
    assert len(files) == len(read_traces(RUN / "traces.jsonl.gz"))
    a = analyze_paths([RUN / "traces.jsonl.gz"], progress=False)
    b = analyze_paths([tmp_path / "atif"], progress=False)
    assert set(b.steps["format"].unique()) == {"atif"}
    keep = [c for c in a.steps.columns if c not in ("format", "dataset")]  # dataset: the folder's name
    sa, sb = (x.steps.select(keep).sort(["trajectory_id", "turn", "call"]) for x in (a, b))
    assert sa.height == sum(tr.n_calls for tr in read_traces(RUN / "traces.jsonl.gz")) and sa.equals(sb)
    r = _cli("analyze", tmp_path / "atif", "--out", tmp_path / "an", "--quiet")
    assert r.exit_code == 0 and f"parsed {len(files)} files" in r.output


def test_cli_reads_the_multiagent_file(tmp_path):
    r = _cli("analyze", FIXTURE, "--out", tmp_path / "an", "--quiet")
    assert r.exit_code == 0, r.output
    assert "parsed 1 files (1 trajectories, 6 actions)" in r.output  # the subagent nested in its main agent


@pytest.mark.parametrize(
    "change,named",
    [
        (lambda d: d.update(schema_version="ATIF-v9.1"), "unknown schema_version 'ATIF-v9.1'"),
        (lambda d: d["steps"][1].pop("source"), "broken shape at steps[1]: 'source' is a required property"),
        (
            lambda d: d["subagent_trajectories"][0].pop("trajectory_id"),
            "trajectory_id: required for an embedded subagent",
        ),
    ],
)
def test_cli_a_broken_or_unknown_atif_file_fails_with_one_named_line(tmp_path, change, named):
    d = json.loads(FIXTURE.read_text())
    change(d)
    p = tmp_path / "t.json"
    p.write_text(json.dumps(d))
    r = _cli("analyze", p, "--out", tmp_path / "an", "--quiet")
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(err) == 1 and named in err[0] and SUPPORTED in err[0], r.stderr
    assert "Traceback" not in r.output + r.stderr


def test_cli_export_of_a_folder_without_traces_fails_clearly(tmp_path):
    r = _cli("export-atif", tmp_path, "--out", tmp_path / "o")
    assert r.exit_code == 2 and r.stderr.count("error:") == 1 and "traces.jsonl" in r.stderr
    bad = tmp_path / "traces.jsonl"
    bad.write_bytes(gzip.compress(b"x"))
    r = _cli("export-atif", bad, "--out", tmp_path / "o")
    assert r.exit_code == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
