"""The static HTML report of executed notebooks: outputs, findings (code hidden), plotly figures as
HTML, widget state kept, and the widget manager copied beside the page when given."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from fasbench.mainjob.report import main, write_report

CELLS = [
    ("import plotly.graph_objects as go\nimport ipywidgets as W\ngo.Figure(go.Bar(x=['a'], y=[3]))", None),
    ("W.IntSlider(value=7, description='turn')", None),
    (
        "from fasbench.stats.findings import Findings\nf = Findings('test', n=3)\nf.metric('F2', 0.5, 0.4, 0.6, n=3, seed=0.7, "
        "seed_source='Relace')\nf.caveat('tiny')\nf",
        ["findings"],
    ),
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    d = tmp_path_factory.mktemp("nb")
    nb = nbformat.v4.new_notebook()
    for src, tags in CELLS:
        c = nbformat.v4.new_code_cell(src)
        if tags:
            c.metadata["tags"] = tags
        nb.cells.append(c)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    nbformat.write(nb, d / "01_x.ipynb")
    nbformat.write(nb, d / "02_y.ipynb")
    return d


@pytest.mark.slow
def test_report_joins_notebooks_with_outputs_findings_and_widget_state(executed, tmp_path):
    js = tmp_path / "js"
    js.mkdir()
    (js / "embed-amd.js").write_text("// stand-in bundle")
    (js / "require.js").write_text("// stand-in loader")
    (js / "x.woff2").write_bytes(b"font")
    page = write_report(executed, tmp_path / "report", js_dir=js)
    html = page.read_text()
    assert html.count("What we found: test") == 2 and "| F2 |" not in html  # rendered as a table
    assert "0.50 [0.40, 0.60]" in html and "Relace" in html
    assert "f.caveat(" not in html  # the findings cells' code is hidden
    assert "Plotly.newPlot" in html and html.count("plotly.js v") >= 1  # figures as HTML, plotly.js embedded
    assert "application/vnd.jupyter.widget-state+json" in html and '"value": 7' in html
    assert "01_x.ipynb" in html and "02_y.ipynb" in html
    assert 'src="js/require.js"' in html and "js/embed-amd.js" in html
    # the icon fonts where the manager's CSS looks for them (relative to the page, by module name)
    assert (tmp_path / "report" / "@jupyter-widgets" / "html-manager" / "dist" / "x.woff2").exists()
    assert (tmp_path / "report" / "@jupyter-widgets" / "x.woff2").exists()


def test_report_cli_one_line_error(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no executed notebooks") and err.count("\n") == 1


# ---------------------------------------------------------------- issue 27: a report read without a kernel


def _nb(*cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for src, outputs, tags in cells:
        c = nbformat.v4.new_code_cell(src)
        c.outputs = [nbformat.from_dict(o) for o in outputs]
        if tags:
            c.metadata["tags"] = tags
        nb.cells.append(c)
    return nb


def _stream(text, name="stderr"):
    return {"output_type": "stream", "name": name, "text": text}


def _md(text):
    return {"output_type": "display_data", "metadata": {}, "data": {"text/markdown": text, "text/plain": text}}


def test_report_drops_warnings_and_progress_bars_but_keeps_tracebacks_and_errors(tmp_path):
    from fasbench.mainjob.report import _quiet_stderr

    warning = (
        "/x/site-packages/torch/utils/data.py:42: UserWarning: this DataLoader will create 4 workers\n"
        "  warnings.warn(\n"
    )
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
    bar = "eval bm25:  20%|██        | 1/5 [00:01<00:06,  1.51s/ep]\reval bm25: 100%|██████████| 5/5 [00:01<00:00]\n"
    err = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["ValueError: bad"]}
    nb = _nb(
        ("a", [_stream(warning), _stream(bar)], None),
        ("b", [_stream(warning + tb), err], None),
        ("c", [_stream("x.py:3: FutureWarning: old\n  f()\nnote: something else\n")], None),
    )
    assert _quiet_stderr(nb) == 8  # 3 warnings with their source lines, 2 redraws of a bar
    assert nb.cells[0].outputs == []  # only warnings and a progress bar: gone
    kept = nb.cells[1].outputs
    assert kept[0]["text"] == tb and kept[1]["output_type"] == "error"  # the traceback and the error stay
    assert nb.cells[2].outputs[0]["text"] == "note: something else\n"
    # and in the page
    nbformat.write(_nb(("b", [_stream(warning + tb), err], None)), tmp_path / "01_x.ipynb")
    page = write_report(tmp_path, tmp_path / "report").read_text()
    assert "ValueError: bad" in page and "Traceback" in page and "UserWarning" not in page


def test_unshown_numbers_finds_what_a_table_hid():
    import polars as pl

    from fasbench.mainjob.report import unshown_numbers

    cols = {f"col{i}": [0.1 * i] for i in range(10)}
    df = pl.DataFrame({**dict(list(cols.items())[:5]), "net_share": [0.58571], **dict(list(cols.items())[5:])})
    finding = _md("Net share 58.6% [40.1%, 70.2%] of tokens; col3 0.30; seed 0.12.")
    with pl.Config(tbl_cols=8):  # polars' default text view: columns past the 8th become "…"
        cut = str(df)
    with pl.Config(tbl_cols=-1):
        whole = str(df)
    plain = lambda t: {"output_type": "stream", "name": "stdout", "text": t}  # noqa: E731
    assert unshown_numbers(_nb(("t", [plain(cut)], None), ("f", [finding], ["findings"]))) == ["58.6%", "0.12"]
    assert unshown_numbers(_nb(("t", [plain(whole)], None), ("f", [finding], ["findings"]))) == ["0.12"]


def test_unshown_numbers_skips_levels_versions_and_parameters_but_not_results():
    """Interval and significance levels, version strings and numbers the notebook's code sets (a
    parameter) are no results; a result the findings compute and no output shows still is one."""
    from fasbench.mainjob.report import unshown_numbers

    finding = _md(
        "*Intervals [lo, hi] are 95% bootstrap intervals; value [95% percentile bootstrap interval]; "
        "intervals: 90% percentile bootstrap over tasks.* 0 of 7 differ at p < 0.05 with a 95% interval "
        "excluding 0; the test does not reject at 0.05; α = 0.1. Traces of mini-swe-agent 1.15.0 and "
        "pytest-4.4.1. Budget 3.2 steps. Share 90.7%, difference +0.150."
    )
    params = ("budget = 3.2\nseed = 0", [], ["parameters"])
    assert unshown_numbers(_nb(params, ("f", [finding], ["findings"]))) == ["90.7%", "+0.150"]
    shown = _stream("share 0.907 and difference 0.150\n", "stdout")
    assert unshown_numbers(_nb(params, ("t", [shown], None), ("f", [finding], ["findings"]))) == []
    assert unshown_numbers(_nb(("f", [finding], ["findings"]))) == ["3.2", "90.7%", "+0.150"]  # 3.2: no parameter
    # up to rounding: 9.315 shown rounds to 9.32, 0.75 is 0.750 with its zero trimmed; 91% is not 90.7%
    f2 = _md("Mean 9.32, share 0.750, share 90.7%.")
    assert unshown_numbers(_nb(("t", [_stream("9.315 0.75 91%\n", "stdout")], None), ("f", [f2], ["findings"]))) == [
        "90.7%"
    ]


@pytest.mark.slow
def test_replay_in_the_report_is_static_and_its_widget_state_is_left_out(tmp_path):
    src = (
        "import sys; sys.path.insert(0, %r)\n"
        % str(Path(__file__).parent)
        + "from test_widgets import hand_trace, hand_task\nfrom fasbench.replay import TraceReplay\n"
        "import ipywidgets as W\nkeep = W.IntSlider(value=5)\n"
        "TraceReplay(hand_trace(), hand_task())"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src), nbformat.v4.new_code_cell("keep")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True).execute()
    out = nb.cells[0].outputs[-1]["data"]
    assert "application/vnd.jupyter.widget-view+json" in out and "fasbench-static" in out["text/html"]
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    nbformat.write(nb, tmp_path / "01_replay.ipynb")
    html = write_report(tmp_path, tmp_path / "report").read_text()
    for k in (1, 2, 3):  # every turn's content is in the page, not only the one the widget showed
        assert f"Turn {k} / 3" in html
    assert "no such file b.py" in html and "Static snapshot" in html
    # the replay's hundred-odd widget models are not in the page; the slider shown is
    kept = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">\s*(.*?)</script>', html, re.S)
    saved = json.loads(kept.group(1))["state"]
    assert len(states) > 50 and 0 < len(saved) <= 3 and any(m["state"].get("value") == 5 for m in saved.values())


def _findings_call(cell_source: str) -> str | None:
    """How the cell's last statement, the bare name ``f``, got its value: the name of the called
    builder (``Findings`` or a study's ``findings``, maybe as ``module.findings``), else None."""
    import ast

    tree = ast.parse(cell_source)
    last = tree.body[-1] if tree.body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Name) and last.value.id == "f"):
        return None
    made = [
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Call)
        and any(isinstance(t, ast.Name) and t.id == "f" for t in n.targets)
    ]
    if not made:
        return None
    fn = made[-1].func
    return fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None


def test_every_notebooks_last_cell_is_its_tagged_findings_built_by_the_one_builder():
    """Each notebook ends with its "What we found": the last cell is a code cell tagged ``findings``
    (the report hides its code; no other cell carries the tag), and it shows ``f``, a Findings made
    in that cell by ``Findings(...)`` or by a study's ``findings(...)`` (each returns a Findings:
    test_findings.py)."""
    from fasbench.base.paths import repo_root

    paths = sorted((repo_root() / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(paths) >= 11
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        last = nb.cells[-1]
        assert last.cell_type == "code", f"{p.name}: the last cell is not code"
        tagged = [i for i, c in enumerate(nb.cells) if "findings" in c.metadata.get("tags", [])]
        assert tagged == [len(nb.cells) - 1], f"{p.name}: cells tagged findings: {tagged}, not only the last"
        assert _findings_call(last.source) in ("Findings", "findings"), (
            f"{p.name}: the last cell does not end with `f`, a Findings built by Findings(...) or findings(...)"
        )


def test_the_findings_cell_check_fails_on_the_old_ways():
    assert _findings_call("f = Findings('x')\nf.add('y')\nf") == "Findings"
    assert _findings_call("f = rl_turns.findings(a, b)\nf") == "findings"
    for old in (
        "Markdown(what_we_found(runs, s))",
        "display(Markdown(field.findings(r, s, 3)))",
        "lines = ['## What we found']\ndisplay(Markdown('\\n'.join(lines)))",
        "f = Markdown(x)\nf",
    ):
        assert _findings_call(old) not in ("Findings", "findings")


def test_executed_notebooks_show_the_numbers_their_findings_quote():
    """On executed notebooks (``make run``'s runs/notebooks, when present): no findings number that a
    table hid. Numbers the findings cell computes itself are reported, not failed, by the report's
    note; this fails only on a cut table (an elided column, "…")."""
    from fasbench.base.paths import repo_root
    from fasbench.mainjob.report import unshown_numbers

    paths = sorted((repo_root() / "runs" / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        pytest.skip("no executed notebooks in runs/notebooks (make run)")
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        cut = [
            o.get("text", "")
            for c in nb.cells
            for o in c.get("outputs", [])
            if o.get("output_type") == "stream" and "┆ … ┆" in o.get("text", "")
        ]
        assert not cut, f"{p.name}: a table has hidden columns while its findings quote {unshown_numbers(nb)}"
