"""LaTeX tables for a paper (fasbench/stats/tables.py, `fasbench runs --latex`, `fasbench compare --latex`):
booktabs layout, numbers right-aligned, and every cell escaped so that a name from a run folder cannot
form a LaTeX command (a hostile policy spec with \\input or \\write18)."""

from __future__ import annotations

import re

import polars as pl
import pytest

from fasbench.stats.tables import latex_escape, to_latex

HOSTILE = r"openai:model=\input{/etc/passwd}\write18{rm -rf ~}&x_%$#^{}"


def test_booktabs_layout_and_alignment():
    df = pl.DataFrame(
        {
            "policy": ["bm25", "heuristic:turns=3"],
            "n": ["40", "40"],
            "file_f2": ["0.412 [0.330, 0.494]", "0.655 [0.571, 0.739]"],
            "code": ["abc123", None],
        }
    )
    tex = to_latex(df, caption="Student t (n = 40)", label="tab:runs")
    lines = tex.splitlines()
    assert lines[0] == r"\begin{table}[t]" and r"\begin{tabular}{lrrl}" in lines and lines[-1] == r"\end{table}"
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    assert r"heuristic:turns=3 & 40 & 0.655 [0.571, 0.739] & -- \\" in tex  # None shown as an en dash
    assert r"\caption{Student t (n = 40)}" in tex and r"\label{tab:runs}" in tex


def test_no_command_can_be_formed_from_a_cell():
    tex = to_latex(pl.DataFrame({"policy": [HOSTILE], "run": ["a\nb\x00c"]}), label="x}\\input{y")
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    commands = set(re.findall(r"\\[A-Za-z]+", body))
    assert commands <= {r"\textbackslash", r"\textasciicircum", r"\textasciitilde"}, commands
    assert "input{" not in tex.replace(r"input\{", "") and "\n" not in body.strip().replace(" \\\\\n", "")
    assert r"\label{x--input-y}" in tex


@pytest.mark.parametrize(
    "raw,want",
    [
        ("a_b", r"a\_b"),
        ("50%", r"50\%"),
        ("–", "--"),
        ("−0.2", "$-$0.2"),
        ("x ≥ 2", r"x $\geq$ 2"),
        ("6 × 12", r"6 $\times$ 12"),
        ("a…b", r"a\ldots{}b"),
    ],
)
def test_escape(raw, want):
    assert latex_escape(raw) == want


def test_unknown_column_is_one_line():
    with pytest.raises(ValueError, match="no column 'nope'"):
        to_latex(pl.DataFrame({"a": ["1"]}), columns=["nope"])


@pytest.mark.slow
def test_runs_and_compare_write_latex(tmp_path):
    import subprocess
    import sys

    from fasbench.replay import example_run

    ex = str(example_run().path)
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "runs", ex, "--latex", str(tmp_path / "runs.tex")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-1500:]
    tex = (tmp_path / "runs.tex").read_text()
    assert r"\begin{tabular}" in tex and r"\caption{" in tex and "LaTeX table:" in r.stdout
    # a paper table keeps the task set whole (the terminal's cut in the middle dropped "fasbench's own split"),
    # and leaves bookkeeping columns out
    assert "fasbench's own split" in tex and "first 8" in tex and "…" not in tex and "created" not in tex
    r = subprocess.run(
        [sys.executable, "-m", "fasbench.cli", "compare", ex, ex, "--latex", str(tmp_path / "cmp.tex")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-1500:]
    cmp = (tmp_path / "cmp.tex").read_text()
    assert r"\midrule" in cmp and r"\caption{Tasks: swebench-lite:fasbench-test" in cmp


def test_text_table_aligns_and_shows_cells_whole():
    """The one terminal table (runs, compare, eval's summary, the replay's lines per file): columns two
    spaces apart, right-aligned where asked, a dash rule under the header, a long cell neither cut
    nor wrapped, markup-looking text shown as typed, no trailing spaces."""
    from fasbench.stats.tables import text_table

    long = "x" * 300
    out = text_table(["name", "n"], [["[bold]a[/bold]", 7], [long, 1234]], right={"n"})
    lines = out.splitlines()
    assert lines[0] == "name" + " " * 298 + "   n" and set(lines[1]) == {"-", " "}
    assert lines[2] == "[bold]a[/bold]" + " " * 286 + "     7" and lines[3] == long + "  1234"
    assert all(ln == ln.rstrip() for ln in lines)
    assert text_table(["a", "b"], [["1", "2"]], rule=False) == "a  b\n1  2"
