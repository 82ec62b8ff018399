"""The replay's boundary with the tools: the overlay reads what a result showed from its structured
record (``ToolResult.shown``), the tool set's own parse for older traces, and kinds from the tools."""

from __future__ import annotations

from fasbench.records import Shown, ToolCall, ToolResult
from fasbench.replay.seen import grep_hits, observe, viewed_ranges
from fasbench.tools import make_toolset


def test_the_record_not_the_text_decides():
    call = ToolCall("x", "view_file", {"path": "a.py"})
    res = ToolResult("x", "(text in a format no parser knows)", shown=Shown(ranges={"a.py": [[3, 5]]}))
    assert viewed_ranges("relace", call, res) == ("a.py", [[3, 5]])
    assert observe("relace", call, None).viewed() == {}  # no result: nothing shown
    assert (
        observe("relace", call, ToolResult("x", "Error: no", True, shown=Shown(ranges={"a.py": [[1, 2]]}))).viewed()
        == {}
    )


def test_search_lines_with_context_and_bash_reads(tmp_path):
    (tmp_path / "a.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 21)))
    ts = make_toolset("relace", tmp_path)
    grep = ToolCall("g", "bash", {"command": "grep -n -C1 'x10 =' a.py"})
    seen = observe("relace", grep, ts.execute(grep))
    assert seen.kind == "search" and sorted(seen.grep_lines()) == [("a.py", 9), ("a.py", 10), ("a.py", 11)]
    cat = ToolCall("c", "bash", {"command": "cat a.py"})
    seen = observe("relace", cat, ts.execute(cat))
    assert seen.viewed() == {"a.py": [[1, 20]]} and not seen.grep_lines()  # a cat through bash is viewed content
    g = ToolCall("h", "grep_search", {"query": "x1[12] ="})
    assert grep_hits("relace", g, ts.execute(g)) == {"a.py": [11, 12]}
    assert grep_hits("fastcontext", g, ts.execute(g)) == {}  # a name the trace's tool set lacks shows nothing
