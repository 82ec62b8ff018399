"""Pages escaped by construction (issue 36 item 6): a ``<script>`` / ``onerror=`` payload in every field
a page shows (trace and task ids, policy, tool set, tool names, call ids, arguments, observations,
assistant text, report paths and explanation, stop reason and error, query, gold paths, run names,
notebook names in the report) never reaches the HTML unescaped: the static replay, the compare table
(before: a trace's ``policy`` went into it raw), the episode browser, the runs table, the text
replay's page and the report's notebook headings."""

from __future__ import annotations

import re

import nbformat
import polars as pl
import pytest

from fasbench.records import Gold, Report, Task, ToolCall, ToolResult, Trace, Turn

P = "<script>alert(1)</script>"
Q = "x' onerror='alert(2)"  # leaves a single-quoted attribute
D = 'y" onerror="alert(3)'  # leaves a double-quoted attribute
IMG = "<img src=x onerror=alert(4)>"


def _hostile(tag: str) -> str:
    return f"{tag}{P}{Q}{D}{IMG}"


def _unescaped(page: str) -> list[str]:
    """The payload pieces that appear raw: a tag opened by data or an attribute left by data."""
    found = [p for p in ("<script>", "<img src=x", "' onerror='", '" onerror="') if p in page]
    return found


def _trace(policy: str, tid: str) -> Trace:
    call = ToolCall(
        id=_hostile("callid"), name=_hostile("tool"), arguments={"path": _hostile("arg"), _hostile("key"): 1}
    )
    res = ToolResult(call_id=call.id, output=_hostile("observation"), started_at=1.0, ended_at=2.0)
    bad = ToolCall(id="c2", name="view_file", arguments=_hostile("rawargs"))
    turn = Turn(
        index=0,
        text=_hostile("assistant"),
        calls=[call, bad],
        results=[res, ToolResult(call_id="c2", output=_hostile("out2"), is_error=True)],
        model_started_at=0.0,
        model_ended_at=1.0,
        tools_started_at=1.0,
        tools_ended_at=2.0,
    )
    return Trace(
        task_id=_hostile("task"),
        policy=policy,
        toolset=_hostile("toolset"),
        turns=[turn],
        report=Report(files={_hostile("path"): [[1, 2]]}, explanation=_hostile("explanation")),
        stop_reason=_hostile("stop"),
        error=_hostile("error"),
        trace_id=tid,
        started_at=0.0,
        ended_at=2.0,
    )


TASK = Task(id=_hostile("task"), query=_hostile("query"), repo="o/r", gold=Gold(edited={_hostile("gold"): [[1, 2]]}))


def test_static_replay_escapes_every_field():
    from fasbench.replay.static import replay_html  # local import: plotly and the replay stack, heavy

    page = str(replay_html(_trace(_hostile("policy"), _hostile("trace")), TASK))
    assert _unescaped(page) == [] and "&lt;script&gt;" in page


def test_text_replay_page_escapes_every_field():
    from fasbench.replay.text import episode_view, to_html  # local import: as above

    tr = dataclasses_replace(_trace(_hostile("policy"), "t1"), report=None)
    for t in (_trace(_hostile("policy"), "t1"), tr):
        page = to_html(episode_view(t, TASK, run=_hostile("run")))
        assert _unescaped(page) == [] and page.startswith("<!doctype html>")


def dataclasses_replace(obj, **kw):
    import dataclasses  # local import: stdlib, used by one test

    return dataclasses.replace(obj, **kw)


def test_compare_table_and_browser_escape_the_policy_and_ids():
    """Before: Comparison's table put ``r["policy"]`` in a ``<td>`` unescaped (replay/widgets.py:243)."""
    from fasbench.replay.widgets import Comparison, TraceBrowser  # local import: ipywidgets, plotly

    a, b = _trace(_hostile("policy-a"), _hostile("trace-a")), _trace(_hostile("policy-b"), _hostile("trace-b"))
    cmp = Comparison(a, b, TASK)
    assert _unescaped(str(cmp.table_html)) == [] and "&lt;script&gt;" in str(cmp.table_html)
    assert _unescaped(str(cmp.static_html())) == []
    br = TraceBrowser([a, b], [TASK])
    br.open(a.trace_id)
    assert _unescaped(str(br.static_html())) == []
    assert _unescaped(br.count.value + br.widget.children[3].value) == []


def test_runs_table_escapes_run_names():
    from fasbench.replay.browser import frame_html  # local import: ipywidgets

    page = str(frame_html(pl.DataFrame({_hostile("col"): [_hostile("run")]}), _hostile("cls")))
    assert _unescaped(page) == []


def test_report_headings_escape_the_notebook_name(tmp_path):
    from fasbench.mainjob.report import combine  # local import: nbconvert, heavy

    p = tmp_path / f"01_{IMG}x' onerror='y.ipynb"  # a file name holds no '/': no </script>
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("hi")]), p)
    nb = combine([p])
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert _unescaped(md) == [] and "&lt;img src=x" in md


@pytest.mark.parametrize("field", ["policy", "task_id", "stop_reason", "toolset", "trace_id"])
def test_each_single_field_alone_is_escaped_in_the_static_pages(field):
    """One payload in an otherwise plain trace, so that an escaped neighbour cannot hide a raw one
    (before: the stop reason went raw into the last turn's header)."""
    from fasbench.replay.static import browser_html, replay_html  # local import: as above

    call = ToolCall(id="c1", name="view_file", arguments={"path": "a.py"})
    turn = Turn(index=0, text="t", calls=[call], results=[ToolResult(call_id="c1", output="x")])
    tr = Trace(
        task_id="task",
        policy="pol",
        toolset="relace",
        turns=[turn],
        report=Report(files={"a.py": [[1, 2]]}),
        stop_reason="reported",
        trace_id="t",
    )
    tr = dataclasses_replace(tr, **{field: P})
    pages = [
        str(replay_html(tr)),
        str(
            browser_html(
                [
                    {
                        "task_id": tr.task_id,
                        "policy": tr.policy,
                        "reward": 0.5,
                        "turns": 1,
                        "calls": 1,
                        "wall_s": 1.0,
                        "stop_reason": tr.stop_reason,
                    }
                ]
            )
        ),
    ]
    for page in pages:
        assert "<script>" not in page
    assert any(re.search(r"&lt;script&gt;", page) for page in pages) or field in ("toolset", "trace_id")


def test_findings_markdown_shown_in_a_notebook_holds_no_raw_html():
    """A run or policy name in a notebook's findings reached the report's page as raw HTML (the report
    renders Markdown's inline HTML as is)."""
    from fasbench.stats.findings import Findings

    f = Findings(f"T {IMG}").add(f"policy {P} beats bm25: p < 0.05 & more").caveat(IMG)
    f.metric(f"F2 of {P}", 0.5, 0.4, 0.6, n=12, seed=0.3, seed_source=IMG)
    shown = f._repr_markdown_()
    assert "<" not in shown and ">" not in shown.replace("&gt;", "")
    assert "p &lt; 0.05 &amp; more" in shown and "p < 0.05 & more" in f.markdown()  # markdown() unchanged


def test_findings_in_the_report_page_open_no_tag_and_no_javascript_link():
    """Through nbconvert itself (which renders Markdown's raw HTML and ``javascript:`` links as they are):
    a findings output whose sentences hold a hostile name gives a page with neither."""
    from nbconvert import HTMLExporter  # local import: nbconvert, heavy, for this test only

    from fasbench.stats.findings import Findings

    f = Findings("T").add(f"policy [x](javascript:alert(1)) or [y][1] {IMG}").text("[1]: javascript:alert(5)")
    f.table(["run", "F2"], [[f"- [2]: javascript:alert(6) {IMG}", "0.5 [0.4, 0.6]"]])
    cell = nbformat.v4.new_code_cell(
        "f",
        outputs=[
            nbformat.v4.new_output(
                "execute_result", data={"text/markdown": f._repr_markdown_(), "text/plain": "f"}, execution_count=1
            )
        ],
    )
    md = nbformat.v4.new_markdown_cell(f._repr_markdown_())
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nbformat.v4.new_notebook(cells=[cell, md]))
    assert "javascript:alert" in body  # the text is shown ...
    assert 'href="javascript' not in body and 'onerror="' not in body and "<img src=x" not in body  # ... inert
