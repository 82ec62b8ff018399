"""Headless checks of the trace replay: lanes, viewed lines, overlay counts, widget state.

Hand-built traces pin exact numbers; real episodes (the harness with the real tool sets on a
temporary repository and on the installed ``click`` sources) check the parsers against the
tools' real output.
"""

from __future__ import annotations

import math
import subprocess

import pytest

from fasbench import replay as W
from fasbench.evaluation.episodes import COLUMNS, episode_row, episode_rows
from fasbench.evaluation.runs import RunError
from fasbench.records import Gold, Report, Task, ToolCall, ToolResult, Trace, Turn, append_jsonl
from fasbench.replay.panels import call_label
from fasbench.tools import TOOLSETS

T0 = 1_000.0


def numbered(a: int, b: int) -> str:
    return "\n".join(f"{n:>6}\tline {n}" for n in range(a, b + 1))


def hand_trace(policy: str = "p", task_id: str = "task1") -> Trace:
    """Turn 1: three concurrent calls (grep, view a.py 1-20, a failed Read); turn 2: view a.py
    30-end (the file has 31 lines); turn 3: the report citing a.py 10-15."""
    turns = [
        Turn(
            0,
            "look around",
            [
                ToolCall("a", "grep_search", {"query": "foo"}),
                ToolCall("b", "view_file", {"path": "a.py", "view_range": [1, 20]}),
                ToolCall("c", "Read", {"path": "b.py", "offset": 5, "limit": 10}),
            ],
            [
                ToolResult("a", "./a.py:12:foo\n./c.py:3:foo", False, T0 + 1.0, T0 + 1.2),
                ToolResult("b", numbered(1, 20), False, T0 + 1.0, T0 + 1.5),
                ToolResult("c", "Error: no such file b.py", True, T0 + 1.1, T0 + 1.3),
            ],
            100,
            20,
            T0,
            T0 + 1.0,
            T0 + 1.0,
            T0 + 1.5,
        ),
        Turn(
            1,
            "read the rest",
            [ToolCall("d", "view_file", {"path": "/repo/a.py", "view_range": [30, -1]})],
            [ToolResult("d", numbered(30, 31) + "\n[end of file: a.py has 31 lines]", False, T0 + 2.1, T0 + 2.2)],
            200,
            30,
            T0 + 1.5,
            T0 + 2.0,
            T0 + 2.1,
            T0 + 2.2,
        ),
        Turn(
            2,
            "report",
            [ToolCall("e", "report_back", {"explanation": "e", "files": {"a.py": [[10, 15]]}})],
            [ToolResult("e", "Report received", False, T0 + 2.5, T0 + 2.5)],
            300,
            10,
            T0 + 2.2,
            T0 + 2.5,
            T0 + 2.5,
            T0 + 2.5,
        ),
    ]
    # a fixed trace id: a random one may contain the words the filter tests search for
    return Trace(
        task_id,
        policy,
        "relace",
        turns,
        Report({"a.py": [[10, 15]]}),
        "reported",
        T0,
        T0 + 2.6,
        trace_id=f"trace-{policy}-{task_id}",
    )


def hand_task() -> Task:
    return Task("task1", "where is foo", "r", Gold({"a.py": [[12, 14], [31, 40]], "d.py": [[1, 2]]}))


# ---------------------------------------------------------------- pure functions


def test_assign_lanes_counts_the_largest_overlap():
    assert W.assign_lanes([(0, 1), (2, 3), (4, 5)]) == [0, 0, 0]
    assert W.assign_lanes([(0, 4), (1, 2), (1.5, 3), (2.5, 5)]) == [0, 1, 2, 1]
    assert max(W.assign_lanes([(0, 1)] * 5)) == 4
    assert W.assign_lanes([(3, 3), (3, 3), (3, 3)]) == [0, 1, 2]  # instantaneous calls of one turn
    assert W.assign_lanes([(0, 1), (1, 2)]) == [0, 0]  # touching is not overlapping
    with pytest.raises(ValueError, match="ends before it starts"):
        W.assign_lanes([(2, 1)])


def test_call_spans_with_and_without_timings():
    tr = hand_trace()
    turns, spans, unit = W.call_spans(tr)
    assert unit == "s" and len(spans) == tr.n_calls == 5
    assert [s.lane for s in spans if s.turn == 0] == [0, 1, 2]
    assert spans[0].start == pytest.approx(1.0) and spans[1].end == pytest.approx(1.5)
    assert [s.is_error for s in spans] == [False, False, True, False, False]
    assert turns[1].model_start == pytest.approx(1.5) and turns[1].model_end == pytest.approx(2.0)
    for t in tr.turns:
        t.model_started_at = None
    turns, spans, unit = W.call_spans(tr)
    assert unit == "turn"
    assert [(s.turn, s.lane) for s in spans] == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)]
    assert all(s.turn <= s.start < s.end <= s.turn + 1 for s in spans)


def test_viewed_ranges_from_output_and_arguments():
    ok = ToolResult("x", numbered(5, 9) + "\n[showing lines 5-9 of 50]")
    assert W.viewed_ranges(
        "relace", ToolCall("x", "view_file", {"path": "/repo/src/m.py", "view_range": [5, 9]}), ok
    ) == ("src/m.py", [[5, 9]])
    # the output is the truth: a request past the end of file shows only what exists
    assert W.viewed_ranges("relace", ToolCall("x", "view_file", {"path": "m.py", "view_range": [5, 400]}), ok)[1] == [
        [5, 9]
    ]
    # FastContext's `LINE|content` below its header line
    read = ToolResult("x", "```m.py:7-8\n7|def f():\n8|    return 1\n\n```")
    assert W.viewed_ranges("fastcontext", ToolCall("x", "Read", {"path": "m.py", "offset": 7, "limit": 2}), read) == (
        "m.py",
        [[7, 8]],
    )
    # no result recorded: nothing was shown
    assert W.viewed_ranges("relace", ToolCall("x", "view_file", {"path": "m.py"}), None) is None
    # content lines starting with digits do not break in
    tricky = ToolResult("x", "     1\t2024 was a year\n     2\t  99 bottles")
    assert W.viewed_ranges("relace", ToolCall("x", "view_file", {"path": "m.py", "view_range": [1, 2]}), tricky)[1] == [
        [1, 2]
    ]
    assert (
        W.viewed_ranges("relace", ToolCall("x", "view_file", {"path": "m.py"}), ToolResult("x", "Error: nope", True))
        is None
    )
    assert W.viewed_ranges("relace", ToolCall("x", "grep_search", {"query": "q"}), ok) is None
    assert W.viewed_ranges(
        "relace", ToolCall("x", "view_file", '{"path": "m.py", "view_range": [2, 3]}'), ToolResult("x", numbered(2, 3))
    ) == ("m.py", [[2, 3]])


def test_grep_hits_matches_and_context():
    r = ToolResult("g", "./a.py:12:foo = 1\n./a.py-13-bar\nsub/c-1.py:3:foo\n[more than 50 matches]")
    # grep_search prints no context lines: a `path-N-` line is not one of its match lines
    assert W.grep_hits("relace", ToolCall("g", "grep_search", {"query": "foo"}), r) == {"a.py": [12], "sub/c-1.py": [3]}
    assert (
        W.grep_hits("fastcontext", ToolCall("g", "Grep", {"pattern": "foo"}), ToolResult("g", "Error: bad regex", True))
        == {}
    )
    # a tool set's kinds decide: a name of the other tool set shows nothing
    assert W.grep_hits("fastcontext", ToolCall("g", "grep_search", {"query": "foo"}), r) == {}
    seen = W.observe("relace", ToolCall("g", "grep_search", {"query": "foo"}), r)
    assert (seen.kind, seen.viewed(), seen.grep_lines()) == ("search", {}, [("a.py", 12), ("sub/c-1.py", 3)])


def test_overlay_counts_match_trace_and_gold():
    tr, task = hand_trace(), hand_task()
    rows = W.file_overlay(tr, task)
    assert [f.path for f in rows] == ["a.py", "d.py", "c.py"]  # gold first, then by first touch
    a = rows[0].counts()
    # viewed: 1-20 and 30-31 (the file ends at 31); gold: 12-14 and 31-40; cited 10-15
    assert rows[0].viewed == [[1, 20], [30, 31]] and rows[0].grep == [12]
    assert a == {
        "path": "a.py",
        "viewed": 22,
        "grep": 1,
        "cited": 6,
        "gold": 13,
        "gold_viewed": 4,
        "gold_cited": 3,
        "cited_viewed": 6,
        "cited_unseen": 0,
        "is_cited": True,
        "is_gold": True,
    }
    assert rows[1].counts()["gold"] == 2 and rows[1].counts()["viewed"] == 0
    assert rows[2].grep == [3] and not rows[2].is_gold
    tot = W.overlay_totals(rows)
    assert (tot["gold"], tot["gold_viewed"], tot["gold_cited"]) == (15, 4, 3)
    assert tot["gold_viewed_share"] == pytest.approx(4 / 15)
    # up to turn 1 only the first view counts; the failed Read touched nothing
    early = {f.path: f for f in W.file_overlay(tr, task, upto_turn=0)}
    assert early["a.py"].viewed == [[1, 20]] and "b.py" not in early
    # without a task: no gold rows
    assert [f.path for f in W.file_overlay(tr)] == ["a.py", "c.py"]
    assert math.isnan(W.overlay_totals(W.file_overlay(tr))["gold_viewed_share"])


def test_filter_sort_and_rows():
    traces = [hand_trace("fast"), hand_trace("slow", "task2"), hand_trace("mid")]
    traces[1].ended_at, traces[2].ended_at = T0 + 9.0, T0 + 5.0
    kw = {"localization": False}
    rows = [
        episode_row(traces[0], hand_task(), rewards=["relace"], **kw),
        episode_row(traces[1], rewards=["relace"], **kw),
        episode_row(traces[2], hand_task(), reward="file-f1", rewards=["file-f1"], **kw),
    ]
    # the replay's rows are rows of the one episode table
    assert set(COLUMNS) <= set(rows[0]) and rows[0]["reward_relace"] == rows[0]["reward"]
    assert (rows[0]["wall_s"], rows[0]["tool_s"], rows[0]["stop_reason"]) == (
        pytest.approx(2.6),
        pytest.approx(0.6),
        "reported",
    )
    # a.py cited, gold {a.py, d.py}: P = 1, R = 1/2; F2 = 5·P·R/(4P + R) = 5/9, F1 = 2/3; 3 turns: no penalty
    assert rows[0]["reward"] == pytest.approx(5 / 9) and rows[2]["reward"] == pytest.approx(2 / 3)
    assert math.isnan(rows[1]["reward"])  # no task, no meta reward
    assert [r["policy"] for r in W.filter_sort(rows, "", "reward", True)] == ["mid", "fast", "slow"]
    assert [r["policy"] for r in W.filter_sort(rows, "", "reward", False)] == ["fast", "mid", "slow"]  # NaN last
    assert [r["policy"] for r in W.filter_sort(rows, "task2")] == ["slow"]
    assert [r["policy"] for r in W.filter_sort(rows, "TASK1 fa")] == ["fast"]
    assert [r["policy"] for r in W.filter_sort(rows, "reported relace")] == ["mid", "fast", "slow"]
    assert W.filter_sort(rows, "none") == []  # empty text columns (no repo, no error) never match
    assert [r["policy"] for r in W.filter_sort(rows, "", "wall_s", False)] == ["fast", "mid", "slow"]
    with pytest.raises(ValueError, match="cannot sort by"):
        W.filter_sort(rows, sort_by="colour")
    with pytest.raises(ValueError, match="cannot sort by 'time_s'"):  # renamed: the episode table's wall_s
        W.filter_sort(rows, sort_by="time_s")


# ---------------------------------------------------------------- widgets


def test_replay_slider_changes_the_shown_turn():
    tr, task = hand_trace(), hand_task()
    r = W.TraceReplay(tr, task)
    assert r.step == 0 and "Turn 1 / 3" in r.header.value and "3 parallel calls (1 failed)" in r.header.value
    assert len(r.calls.options) == 3 and "grep_search" in r.call_detail.value
    r.calls.value = 2
    assert "no such file b.py" in r.call_detail.value and "error" in r.call_detail.value
    assert sum(f.counts()["viewed"] for f in r.overlay) == 20
    r.slider.value = 2
    assert r.step == 1 and "Turn 2 / 3" in r.header.value and "read the rest" in r.header.value
    assert [label for label, _ in r.calls.options] == [call_label(tr.turns[1].calls[0], tr.turns[1].results[0], 0)]
    assert "30, -1" in r.call_detail.value
    assert sum(f.counts()["viewed"] for f in r.overlay) == 22
    shade = [s for s in r.timeline_fig.layout.shapes if s.name == "current-turn"]
    assert len(shade) == 1 and (shade[0].x0, shade[0].x1) == (1, 2)  # the second of three equal turn columns
    r.slider.value = 3
    assert "Turn 3 / 3" in r.header.value and "Report" in r.header.value and "a.py [[10, 15]]" in r.header.value
    r.show_turn(0)
    assert r.slider.value == 1 and "Turn 1 / 3" in r.header.value
    with pytest.raises(IndexError):
        r.show_turn(3)
    assert r.link.source[1] == "value" and r.link.target[0] is r.slider  # Play drives the slider in the browser


def test_replay_rejects_bad_input_and_handles_empty():
    with pytest.raises(TypeError, match="Trace"):
        W.TraceReplay({"turns": []})
    with pytest.raises(ValueError, match="does not match"):
        W.TraceReplay(hand_trace(), Task("other", "q", "r", Gold({})))
    empty = W.TraceReplay(Trace("t", "p", "relace", stop_reason="policy_error"))
    assert "No turns" in empty.header.value and empty.slider.disabled


def test_compare_side_by_side():
    task = hand_task()
    c = W.compare(hand_trace("left"), hand_trace("right"), task)
    assert [r["policy"] for r in c.rows] == ["left", "right"]
    assert c.rows[0]["lines_gold_viewed"] == 4 and c.rows[0]["lines_viewed"] == 22
    assert c.a.xrange == c.b.xrange and c.a.xrange[1] >= 2.5
    c.b.slider.value = 3
    assert "Turn 3" in c.b.header.value and "Turn 1" in c.a.header.value
    assert (
        "left" in c.table.value
        and "right" in c.table.value
        and "<th style='padding:0 8px'>wall_s</th>" in c.table.value
    )
    with pytest.raises(ValueError, match="one task"):
        W.compare(hand_trace(task_id="x"), hand_trace(task_id="y"))
    fig = W.compare_figure(hand_trace("left"), hand_trace("right"))
    # legend entries name the tool and its kind (Read is no relace tool: no kind)
    assert {t.name for t in fig.data} >= {
        "model",
        "grep_search (search)",
        "view_file (read)",
        "Read",
        "report_back (report)",
    }


def test_browser_filter_sort_and_selection():
    traces = [hand_trace(p) for p in ("alpha", "beta", "gamma")]
    traces[1].turns = traces[1].turns[:1]
    traces[1].report, traces[1].stop_reason = None, "max_turns"
    b = W.TraceBrowser(traces, [hand_task()])
    assert len(b.table.options) == 3 and b.replay is None
    head = b.widget.children[3].value
    assert "wall_s" in head and "stop_reason" in head and list(b.sort_by.options) == list(W.SORT_KEYS)
    assert b.table.options[0][0].endswith(" 2.60 reported")
    assert b.shown[-1]["policy"] == "beta" and b.shown[-1]["reward"] == 0.0  # no report: lowest reward
    b.sort_by.value, b.descending.value = "turns", False
    assert [r["policy"] for r in b.shown][0] == "beta"
    b.filter.value = "max_turns"
    assert [r["policy"] for r in b.shown] == ["beta"] and "1 of 3" in b.count.value
    b.table.value = b.table.options[0][1]
    assert b.replay is not None and b.replay.trace is traces[1] and b.detail.children == (b.replay.widget,)
    b.filter.value = ""
    assert len(b.table.options) == 3 and b.table.value == traces[1].trace_id  # the selection survives
    b.open(traces[2].trace_id)
    assert b.replay.trace is traces[2] and b.table.value == traces[2].trace_id
    b.replay.slider.value = 2
    assert "Turn 2 / 3" in b.replay.header.value
    with pytest.raises(KeyError, match="nope"):
        b.open("nope")
    with pytest.raises(ValueError, match="repeat"):
        W.TraceBrowser([traces[0], traces[0]])


def test_run_episodes_take_rewards_from_summary(tmp_path):
    import polars as pl

    traces = [hand_trace("a"), hand_trace("b")]
    append_jsonl(tmp_path / "traces.jsonl", traces)
    pl.DataFrame({"trace_id": [traces[0].trace_id], "reward_relace": [0.25]}).write_parquet(
        tmp_path / "summary.parquet"
    )
    got = W.load_run_episodes(tmp_path).traces
    assert [t.meta.get("reward") for t in got] == [0.25, None]
    rows = episode_rows(got, rewards=["relace"], localization=False)
    assert rows[0]["reward"] == 0.25 and math.isnan(rows[1]["reward"])
    with pytest.raises(RunError):
        W.load_run_episodes(tmp_path / "missing")


# ---------------------------------------------------------------- real episodes


@pytest.fixture
def git_repo(tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    body = ["import os", "", ""] + [f"def helper_{i}(x):\n    return x + {i}\n" for i in range(40)]
    body += ["class Target:", "    '''The thing we look for.'''", "", "    def run(self):", "        return 42", ""]
    (root / "pkg" / "core.py").write_text("\n".join(body))
    (root / "pkg" / "use.py").write_text("from pkg.core import Target\n\nprint(Target().run())\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    lines = (root / "pkg" / "core.py").read_text().splitlines()
    start = lines.index("class Target:") + 1
    return root, start


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_real_episode_viewed_lines_match_the_tools(git_repo, toolset):
    from fasbench.harness import Limits, run_episode
    from fasbench.policies.scripted import ScriptedPolicy
    from fasbench.records import Reply
    from fasbench.tools import answer_tool, calls_for

    root, start = git_repo
    task = Task(
        "t-target", "Where is Target defined?", "local", Gold({"pkg/core.py": [[start, start + 4]]}), root=str(root)
    )
    c = calls_for(toolset)  # the tool set's own call shapes
    turns = [
        Reply(
            "search",
            [
                c.search("a", "class Target", None),
                c.search("b", "Target\\(", None, context={"-B": 1}),
                c.read("c", "pkg/core.py", start - 2, None),
                c.read("d", "pkg/nothere.py", 1, None),
            ],
        ),
        c.report("r", {"pkg/core.py": [[start, start + 4]]}, "Target"),
    ]
    tr = run_episode(task, ScriptedPolicy(turns), toolset, Limits(max_turns=3))
    assert tr.stop_reason == "reported" and tr.turns[0].results[3].is_error
    rows = {f.path: f for f in W.file_overlay(tr, task)}
    n_lines = len((root / "pkg" / "core.py").read_text().splitlines())
    assert rows["pkg/core.py"].viewed == [[start - 2, n_lines]]  # to the end of file, read from the output
    assert start in rows["pkg/core.py"].grep and 3 in rows["pkg/use.py"].grep
    assert "pkg/nothere.py" not in rows
    c = rows["pkg/core.py"].counts()
    assert c["gold"] == c["gold_viewed"] == c["gold_cited"] == 5
    _, spans, unit = W.call_spans(tr)
    assert unit == "s" and len({s.lane for s in spans if s.turn == 0}) >= 2  # the calls of turn 1 overlapped
    r = W.TraceReplay(tr, task)
    r.slider.value = 2
    assert ("1 call" if answer_tool(toolset) else "no tool calls") in r.header.value and "Report" in r.header.value


def test_demo_episodes_on_installed_click():
    task = W.symbol_task("click", "BadParameter")
    par, seq = W.demo_episode(task, parallel=True), W.demo_episode(task, parallel=False)
    assert (par.n_turns, seq.n_turns) == (3, 7) and par.n_calls == seq.n_calls == 7
    assert par.report.files == seq.report.files == task.gold.edited
    rows = W.compare_rows([par, seq], task)
    assert rows[0]["reward"] == 1.0 and rows[1]["reward"] == pytest.approx((24 - 7) / 20)  # Relace turn penalty
    assert rows[0]["lines_gold_viewed"] == rows[0]["lines_gold"] > 0
    assert rows[0]["max_parallel"] == 4 and rows[1]["max_parallel"] == 1
    with pytest.raises(ValueError, match="no attribute"):
        W.symbol_task("click", "NoSuchThing")


def test_timeline_figure_exports(tmp_path):
    """The timeline goes through figures.save: PDF, SVG and PNG files that are real images."""
    from fasbench.stats import figures

    fig = W.timeline_figure(hand_trace(), highlight=1)
    paths = figures.save(fig, "timeline_test", directory=tmp_path)
    assert [p.suffix for p in paths] == [".pdf", ".svg", ".png"]
    assert paths[0].read_bytes()[:4] == b"%PDF"
    assert b"<svg" in paths[1].read_bytes()[:400]
    png = paths[2].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    assert width == 3 * figures.WIDTH
    assert (tmp_path / "timeline_test.json").exists()


# ---------------------------------------------------------------- issue 27: turn columns, clicks, colours, static


def _late_short_turns() -> Trace:
    """A first turn of 10 s and four later turns of 10 ms each: on a wall-clock axis the later turns
    are slivers (0.1% of the axis each)."""
    turns, t = [], T0
    for i, dur in enumerate([10.0, 0.01, 0.01, 0.01, 0.01]):
        calls = [ToolCall(f"c{i}{j}", "grep_search", {"query": f"q{i}{j}"}) for j in range(2)]
        res = [ToolResult(c.id, "./a.py:1:x", False, t + dur / 2, t + dur) for c in calls]
        turns.append(Turn(i, f"turn {i}", calls, res, 10, 1, t, t + dur / 2, t + dur / 2, t + dur))
        t += dur
    return Trace("task1", "p", "relace", turns, Report({"a.py": [[1, 1]]}), "reported", T0, t, trace_id="late")


def test_timeline_gives_every_turn_an_equal_column_with_its_label():
    tr = _late_short_turns()
    cols, n_rows = W.turn_columns(tr)
    assert len(cols) == 5 and n_rows == 3  # model + two concurrent slots
    for col in cols:  # time runs within each turn: its model bar starts it, its calls end it
        model = [b for b in col if b.call is None][0]
        assert model.left == 0 and model.width == pytest.approx(0.5)
        assert max(b.left + b.width for b in col) == pytest.approx(1.0)
        assert {b.row for b in col if b.call is not None} == {1, 2}
    fig = W.timeline_figure(tr)
    labels = sorted(a.text for a in fig.layout.annotations if a.text.startswith("T"))
    assert labels == ["T1", "T2", "T3", "T4", "T5"]  # all five, also the 10 ms turns'
    widths = {}
    for d in fig.data:
        for (turn, _), w in zip(d.customdata or [], d.x):
            widths.setdefault(turn, []).append(w)
    assert widths[4][0] == pytest.approx(widths[0][0])  # a 10 ms call as wide as a 5 s one in its column
    wall = W.timeline_figure(tr, scale="s")  # the wall-clock view is still there, for durations
    assert len([a for a in wall.layout.annotations if a.text.startswith("T")]) < 5
    with pytest.raises(ValueError, match="unknown timeline scale"):
        W.timeline_figure(tr, scale="minutes")


def test_clicking_a_timeline_bar_selects_its_turn_and_call():
    tr, task = hand_trace(), hand_task()
    r = W.TraceReplay(tr, task)
    assert set(r.bars) == {(0, 0), (0, 1), (0, 2), (1, 0), (2, 0)} and len(r.turn_cols) == 3
    r.bars[(0, 2)].click()  # the failed Read of turn 1
    assert r.step == 0 and r.calls.value == 2 and "no such file b.py" in r.call_detail.value
    assert "fasbench-bar-error" in r.bars[(0, 2)]._dom_classes
    r.bars[(1, 0)].click()
    assert r.step == 1 and r.slider.value == 2 and "Turn 2 / 3" in r.header.value and "30, -1" in r.call_detail.value
    assert "fasbench-current-turn" in r.turn_cols[1]._dom_classes
    assert "fasbench-current-turn" not in r.turn_cols[0]._dom_classes
    label = r.turn_cols[2].children[0]
    assert label.description == "T3"
    label.click()
    assert r.step == 2 and "Report" in r.header.value


def test_one_colour_per_kind_in_the_replay_and_the_trajectory_figures():
    from fasbench.stats.figures import KIND_COLORS
    from fasbench.trajectories.plots import fig2

    fig = W.timeline_figure(hand_trace())
    colour = {d.name: d.marker.color for d in fig.data}
    assert colour["grep_search (search)"] == KIND_COLORS["search"]
    assert colour["view_file (read)"] == KIND_COLORS["read"] and colour["report_back (report)"] == KIND_COLORS["report"]
    assert KIND_COLORS["edit"] not in colour.values()  # edit's vermillion never marks a search tool
    r = W.TraceReplay(hand_trace())
    assert r.bars[(0, 0)].style.button_color == KIND_COLORS["search"]
    summary = {
        "overall": {
            "turn_share": {"read": 0.4, "search": 0.3, "edit": 0.2, "test": 0.1, "other": 0.0},
            "token_share": {"read": 0.4, "search": 0.3, "edit": 0.2, "test": 0.1, "other": 0.0},
        }
    }
    import polars as pl

    traj = pl.DataFrame(
        {"first_edit_turn": [1], "explore_turns_before": [1], "explore_calls_before": [1], "resolved": [True]}
    )
    bars = fig2(summary, traj, "t").data[0]
    assert dict(zip(bars.x, bars.marker.color)) == {
        k: KIND_COLORS[k] for k in ("read", "search", "edit", "test", "other")
    }


def test_static_html_holds_every_turn_and_the_display_bundle_both_views():
    import re

    tr, task = hand_trace(), hand_task()
    r = W.TraceReplay(tr, task)
    page = r.static_html()
    assert "Static snapshot" in page and "fasbench-static" in page
    for k in (1, 2, 3):
        assert f"Turn {k} / 3" in page
    assert "no such file b.py" in page and "[end of file: a.py has 31 lines]" in page and "a.py [[10, 15]]" in page
    ids = set(re.findall(r"<input type='radio' name='\w+' id='([\w-]+)'", page))
    fors = set(re.findall(r"for='([\w-]+)'", page))
    assert len(ids) == 5 and fors == ids  # one radio per call; every label (turn, bar, call) selects one
    assert page.count("class='fbs-bar fbs-bar-") == 5
    bundle = r._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "Turn 3 / 3" in bundle["text/html"]
    c = W.compare(hand_trace("left"), hand_trace("right"), task)
    assert c._repr_mimebundle_()["text/html"].count("Turn 2 / 3") == 2
    b = W.TraceBrowser([hand_trace(p) for p in ("alpha", "beta")], [task])
    assert "2 episodes" in b.static_html() and "Turn 1 / 3" not in b.static_html()
    b.open("trace-beta-task1")
    assert "Turn 1 / 3" in b._repr_mimebundle_()["text/html"]
