"""The replay's overlay: cited lines only from the reporting turn, range ends of -1 as end of file,
readable shortened paths, and the comparison/figure layouts."""

from __future__ import annotations

from dataclasses import replace

from test_widgets import hand_task, hand_trace

from fasbench import replay as W
from fasbench.records import Gold, Report, Task
from fasbench.replay.linerefs import short_path, to_eof


def test_cited_lines_appear_only_from_the_reporting_turn():
    tr, task = hand_trace(), hand_task()  # the report comes in turn 3
    assert W.report_turn(tr) == 2
    for upto in (0, 1):
        a = {f.path: f for f in W.file_overlay(tr, task, upto_turn=upto)}["a.py"]
        assert a.cited == [] and not a.is_cited
    a = {f.path: f for f in W.file_overlay(tr, task, upto_turn=2)}["a.py"]
    assert a.cited == [[10, 15]] and a.is_cited


def test_a_range_end_of_minus_one_is_the_end_of_the_file(tmp_path):
    (tmp_path / "a.py").write_text("".join(f"x{i}\n" for i in range(1, 41)))  # 40 lines
    assert to_eof([[30, -1], [1, 3]], str(tmp_path), "a.py") == [[30, 40], [1, 3]]
    assert to_eof([[30, -1]], None, "a.py") == [[30, 30]]  # no corpus: the first line only
    tr = hand_trace()
    tr = replace(tr, report=Report({"a.py": [[35, -1]]}))
    task = Task("task1", "q", "r", Gold({"a.py": [[38, -1]]}), root=str(tmp_path))
    a = {f.path: f for f in W.file_overlay(tr, task)}["a.py"]
    assert a.gold == [[38, 40]] and a.cited == [[35, 40]] and a.counts()["gold_cited"] == 3


def test_short_paths_keep_both_ends():
    p = "django/db/models/fields/related_descriptors.py"
    s = short_path(p, 40)
    assert s.startswith("django/") and s.endswith("related_descriptors.py") and "…" in s and len(s) <= 40
    assert short_path("a/b.py") == "a/b.py"
    assert short_path("x" * 60, 21) == "x" * 10 + "…" + "x" * 10


def test_comparison_stacks_the_replays_at_full_width():
    a, b = hand_trace("par"), hand_trace("seq")
    c = W.compare(a, b, hand_task())
    assert c.widget.children[1] is c.a.widget and c.widget.children[2] is c.b.widget
    assert "overflow-x:auto" in c.table.value
    fig = W.compare_figure(a, b)
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.yref == "container"
